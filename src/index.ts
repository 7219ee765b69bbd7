// The public API. Plugin authors: defineTool, Type, the result helpers (tools/api.ts, which is also
// what a plugin's `import 'conch'` gets). Embedders: startRun (the start the CLI and `conch acp`
// use) and runTask (the loop itself, for a host that brings its own catalog and provider).
export * from './tools/api.ts';
export { planStart, startHost, startRun } from './host/start.ts';
export type { HostTask, PlanOptions, RunOptions, StartOptions, StartPlan, StartedHost, StartedRun } from './host/start.ts';
export { setupProblem } from './host/setup-error.ts';
export { runTask } from './agent/loop.ts';
export type { RunSpec } from './agent/loop.ts';
export type { EventSink, RunEvent } from './agent/events.ts';
export type { Outcome, OutcomeStatus, OutputIssue } from './agent/outcome.ts';
export type { OutputSchema } from './agent/output.ts';
export type { CliFlags } from './config/types.ts';
export type { Message, Provider } from './providers/types.ts';
