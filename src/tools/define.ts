import type { Static, TSchema } from 'typebox';
import type { ContentBlock } from '../providers/types.ts';

/** A plain JSON Schema object (the alternative to a TypeBox schema). */
export type JsonSchema = Record<string, unknown>;

export type JsonValue = string | number | boolean | null | JsonValue[] | { [key: string]: JsonValue };

/** A structured tool result. */
export interface ToolResult {
  content: ContentBlock[];
  isError?: boolean;
  /** Extra data for hosts (diffs, revisions); not sent to the model. */
  details?: Record<string, unknown>;
}

/** What `execute` may return: plain text, any JSON value, or a structured result. */
export type ToolReturn = string | JsonValue | ToolResult | undefined | void;

export interface ExecOptions {
  /** Workspace-relative or absolute; must resolve inside the workspace unless unrestricted. */
  cwd?: string;
  timeoutMs?: number;
  /** Called with output chunks as they arrive (already decoded, may be partial lines). */
  onOutput?: (chunk: string) => void;
  /**
   * Cancels this command instead of the tool call's signal, so a background command (the jobs plugin)
   * can outlive the call that started it. The run's own end and cancellation still stop it.
   */
  signal?: AbortSignal;
}

export interface ExecResult {
  /** null when killed by a signal or never started. */
  exitCode: number | null;
  signal: string | null;
  /** stdout and stderr interleaved as they came, bounded (head + tail, elided middle). */
  output: string;
  truncated: boolean;
  totalBytes: number;
  /** Full output log when the output was truncated. */
  logPath: string | null;
  timedOut: boolean;
  cancelled: boolean;
  /** Set when conch could not prove the process group was gone. */
  cleanupError?: string;
  /** Set when policy or the sandbox refused to run the command at all. */
  denied?: { rule: string; message: string };
  durationMs: number;
}

export interface WorkspaceAccess {
  /** Canonical workspace root. */
  readonly root: string;
  /**
   * Resolve a path for reading or writing under the active policy. Async: `await` it; the promise
   * itself handed to fs fails with "path must be a string". Resolves to the canonical absolute
   * path, or rejects with a PolicyError naming the rule.
   */
  resolve(path: string, mode: 'read' | 'write'): Promise<string>;
  /** The workspace-relative display form of an absolute path (absolute if outside). */
  display(absolutePath: string): string;
}

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
   * outlives one call (background jobs) to the run. Absent only in hosts that predate it.
   */
  runSignal?: AbortSignal;
}

export interface ToolDefinition<S extends TSchema | JsonSchema = TSchema | JsonSchema> {
  name: string;
  description: string;
  parameters: S;
  /** Per-tool deadline in ms; the run's tool deadline applies when absent. */
  timeoutMs?: number;
  execute(args: S extends TSchema ? Static<S> : Record<string, any>, ctx: ToolContext): Promise<ToolReturn> | ToolReturn;
}

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

/** A refusal by the workspace policy, the command rules or a policy file. */
export class PolicyError extends Error {
  constructor(
    /** Stable id of the deciding rule, e.g. 'workspace.outside' or 'docs.no-force'. */
    readonly rule: string,
    message: string,
  ) {
    super(message);
    this.name = 'PolicyError';
  }
}
