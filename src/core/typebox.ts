// The part of TypeBox conch's own modules use: the builders of its schemas (config, policy, sandbox
// profiles, MCP servers, the kernel tools' parameters) and the schema engine that checks values
// against any JSON schema. The bundle (src/build.ts) makes this a file of its own with only these
// in it, about 40 % of TypeBox: every run loads it, and loading all of TypeBox cost a run 2.6 MiB of
// peak memory more (issue 17). Plugins get the whole of TypeBox (tools/api.ts, plugins/importer.ts);
// a schema is plain data, so one built by either copy is checked by this one.
export * as Type from './typebox-builders.ts';
export { Check, Compile, Errors, Meta } from 'typebox/schema';
export { Settings } from 'typebox/system';
export type { Static, TSchema } from 'typebox';
