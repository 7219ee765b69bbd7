import type { Static, TSchema } from '../core/typebox.ts';
import type { ToolResult } from '../core/content.ts';
import type { ExecOptions, ExecResult } from '../shell/exec.ts';
import type { WorkspaceAccess } from '../workspace/paths.ts';

/** A plain JSON Schema object (the alternative to a TypeBox schema). */
export type JsonSchema = Record<string, unknown>;

export type JsonValue = string | number | boolean | null | JsonValue[] | { [key: string]: JsonValue };

/**
 * What `execute` may return: plain text, any JSON value, or a structured result. A ctx.exec result
 * is plain data too (the model gets it as JSON), but an interface has no index signature, so it is
 * named here for `return ctx.exec(…)` to type-check as it runs.
 */
export type ToolReturn = string | JsonValue | ToolResult | ExecResult | undefined | void;

export interface ToolContext {
  /** Canonical workspace root; the tool's working directory. */
  cwd: string;
  /** Aborted when the run is cancelled or the tool's deadline passes. Honour it. */
  signal: AbortSignal;
  workspace: WorkspaceAccess;
  /** Run a shell command through exactly the same policy, sandbox, timeouts and output bounds as `bash`. */
  exec(command: string, options?: ExecOptions): Promise<ExecResult>;
  /** Report progress; shown to the user, not sent to the model. */
  update(text: string): void;
  /** Id of this tool call (stable within a run). */
  callId: string;
  /**
   * Aborted when the run that made this call ends, however it ends. Lets a tool tie state that
   * outlives one call (background jobs) to the run.
   */
  runSignal: AbortSignal;
}

export interface ToolDefinition<S extends TSchema | JsonSchema = TSchema | JsonSchema> {
  name: string;
  description: string;
  parameters: S;
  /** Per-tool deadline in ms; the run's tool deadline applies when absent. */
  timeoutMs?: number;
  /** The tool changes files: a read-only run (--read-only, a home workspace) does not offer it, as with write and edit. */
  writes?: boolean;
  execute(args: S extends TSchema ? Static<S> : Record<string, any>, ctx: ToolContext): Promise<ToolReturn> | ToolReturn;
}

/** What a plugin whose default export is a function is called with, once, when it loads. */
export interface PluginSetup {
  /** The plugin's settings from the user config (plugins.NAME, first-party plugins only); {} when none. */
  settings: Record<string, unknown>;
  /** Canonical workspace root. */
  cwd: string;
  /** The user config file, for a message that says where a missing setting goes. */
  configFile: string;
}

/**
 * A plugin's default export may be this instead of its tools: it gets its settings and returns the
 * tools; what it throws (a missing setting) is the plugin's load failure, reported with its message.
 */
export type PluginFactory = (setup: PluginSetup) => ToolDefinition | ToolDefinition[] | Promise<ToolDefinition | ToolDefinition[]>;

/** A registered tool: a definition plus where it came from. */
export interface Tool extends ToolDefinition {
  source: string;
}

/**
 * The public way to declare a tool. It only returns its argument, typed; validation happens when
 * the catalog registers it, so a broken plugin is reported with its path instead of crashing.
 */
export function defineTool<S extends TSchema | JsonSchema>(definition: ToolDefinition<S>): ToolDefinition<S> {
  return definition;
}
