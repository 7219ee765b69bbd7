// The public API: what plugin authors (`import { defineTool, Type } from 'conch'`) and embedders use.
export { Type } from 'typebox';
export type { Static, TSchema } from 'typebox';
export { defineTool } from './tools/define.ts';
export { PolicyError } from './core/errors.ts';
export type { ToolDefinition, ToolContext, ToolReturn, JsonSchema, JsonValue } from './tools/define.ts';
export type { ContentBlock, ToolResult } from './core/content.ts';
export type { ExecOptions, ExecResult } from './shell/exec.ts';
export type { WorkspaceAccess } from './workspace/paths.ts';
