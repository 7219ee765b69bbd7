// STUB: interface fixed; implementation owned by the process work (issue 3, bash).
// The one path every shell command takes: command rules → sandbox → process.
import type { ExecOptions, ExecResult } from './define.ts';
import type { Workspace } from '../workspace/paths.ts';
import type { SandboxSettings } from '../sandbox/index.ts';
import type { Limits } from '../agent/limits.ts';

export type CommandDecision = { allowed: true } | { allowed: false; rule: string; message: string };

export interface ExecutorSettings {
  workspace: Workspace;
  unrestricted: boolean;
  sandbox: SandboxSettings;
  limits: Limits;
  /** CONCH_TASK_* extras for the child environment. */
  env: Record<string, string>;
  /** false: every command is refused (--no-shell). */
  shellEnabled: boolean;
  /** Command rules, checked before anything runs (policy issue). */
  guard?: (command: string, cwd: string) => Promise<CommandDecision>;
  /** Private per-run temp dir (logs go to logDir inside it). */
  tmpDir: string;
}

export type Executor = (command: string, options: ExecOptions & { signal: AbortSignal }) => Promise<ExecResult>;

export function createExecutor(settings: ExecutorSettings): Executor {
  throw new Error('not implemented');
}
