// The public API: what plugin authors (`import { defineTool, Type } from 'conch'`) and embedders use.
export { Type } from 'typebox';
export type { Static, TSchema } from 'typebox';
export { defineTool, PolicyError } from './tools/define.ts';
export type {
  ToolDefinition,
  ToolContext,
  ToolResult,
  ToolReturn,
  ExecOptions,
  ExecResult,
  WorkspaceAccess,
  JsonSchema,
  JsonValue,
} from './tools/define.ts';
export type { ContentBlock } from './providers/types.ts';
