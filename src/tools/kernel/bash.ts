// The bash kernel tool: a thin face over the executor, worded for the model.
import { constants } from 'node:os';
import { Type } from '../../core/typebox.ts';
import { type Tool, type ToolContext } from '../define.ts';
import type { ExecResult } from '../../shell/exec.ts';
import type { ToolResult } from '../../core/content.ts';
import { PolicyError } from '../../core/errors.ts';
import { commandTimeout, type Executor } from '../../shell/exec.ts';
import type { Limits } from '../../core/limits.ts';
import { PROGRESS_CHARS, progressWindow } from '../progress.ts';

export interface BashToolDeps {
  exec: Executor;
  limits: Limits;
}

export function createBashTool(deps: BashToolDeps): Tool {
  const { limits } = deps;
  const defaultTimeout = duration(limits.tool_timeout_ms);
  const maxTimeout = duration(limits.tool_timeout_max_ms);
  const parameters = Type.Object(
    {
      command: Type.String({
        description: 'The command line, run as /bin/sh -c COMMAND (POSIX sh, not bash: no arrays, no [[ ]]).',
      }),
      cwd: Type.Optional(
        Type.String({
          description: 'Working directory, relative to the workspace root (default: the root). Must be inside the workspace.',
        }),
      ),
      timeout_ms: Type.Optional(
        Type.Integer({
          minimum: 1,
          description: `Timeout in milliseconds (default ${defaultTimeout}, capped at ${maxTimeout}). On timeout the command and everything it started are killed.`,
        }),
      ),
    },
    { additionalProperties: false },
  );

  return {
    name: 'bash',
    source: 'kernel',
    description: [
      'Run a shell command with /bin/sh -c in the workspace and return its combined stdout and stderr, in the order written, followed by a status line with the exit code.',
      'stdin is closed (no interactive prompts: pass -y or equivalent flags); the environment is small and clean (PATH, HOME, LANG, TERM=dumb, TMPDIR), so no credentials or shell startup files are available.',
      `Default timeout ${defaultTimeout}, maximum ${maxTimeout}. When the command finishes, times out or is cancelled, every process it started is killed, background ones included: do not start servers or daemons expecting them to keep running.`,
      `Output is bounded to about ${Math.round(limits.shell_output_bytes / 1024)} KiB: beyond that the middle is elided and the full output${logBound(limits.shell_log_bytes)} is saved to a log file whose path is given; page through it with the read tool (offset/limit). Shell commands cannot see that file.`,
      'A non-zero exit status is reported, not treated as a failure of the tool. Prefer the read, write and edit tools for files.',
      'Empty read-only files named like .env.local or HEAD may appear while a run lasts: they are the sandbox holding protected names, not real files; ignore them.',
    ].join(' '),
    parameters,
    async execute(args, ctx: ToolContext): Promise<ToolResult> {
      const { command, cwd, timeout_ms } = args as { command: string; cwd?: string; timeout_ms?: number };
      const progress = progressReporter(ctx);
      const result = await deps
        .exec(command, {
          signal: ctx.signal,
          onOutput: progress.push,
          ...(cwd !== undefined ? { cwd } : {}),
          ...(timeout_ms !== undefined ? { timeoutMs: timeout_ms } : {}),
        })
        .finally(progress.stop);
      if (result.denied) throw new PolicyError(result.denied.rule, result.denied.message);
      // The executor's own clamp, so the status names the limit that was hit.
      return present(result, ctx, commandTimeout(timeout_ms, limits));
    },
  };
}

/** Live output for the user (terminal spinner, editor tool-call view): whole lines of its tail. */
function progressReporter(ctx: ToolContext) {
  let pending = '';
  // Whole lines only (an update is a line of progress to hosts); a partial line waits for the rest.
  const window = progressWindow(() => {
    const end = pending.lastIndexOf('\n');
    if (end < 0) return;
    ctx.update(pending.slice(0, end + 1));
    pending = pending.slice(end + 1);
  });
  return {
    push: (chunk: string) => {
      pending = (pending + chunk).slice(-PROGRESS_CHARS);
      window.poke();
    },
    stop: () => {
      window.stop();
      pending = '';
    },
  };
}

function present(result: ExecResult, ctx: ToolContext, timeoutMs: number): ToolResult {
  const details: Record<string, unknown> = {
    exitCode: result.exitCode,
    signal: result.signal,
    timedOut: result.timedOut,
    cancelled: result.cancelled,
    logPath: result.logPath,
    totalBytes: result.totalBytes,
    durationMs: result.durationMs,
    ...(result.logCutAt === undefined ? {} : { logCutAt: result.logCutAt }),
  };
  const notRun = result.exitCode === null && result.signal === null && !result.timedOut && !result.cancelled;
  if (notRun) {
    return { content: [{ type: 'text', text: `The command could not run: ${result.output}` }], isError: true, details };
  }
  const parts = [status(result, timeoutMs)];
  if (result.truncated) {
    const where = !result.logPath
      ? 'the full output could not be saved'
      : result.logCutAt === undefined
        ? `full output in ${ctx.workspace.display(result.logPath)}`
        : `the first ${result.logCutAt} bytes in ${ctx.workspace.display(result.logPath)} (the log was cut at ${result.logCutAt} bytes: limit shell_log_bytes)`;
    parts.push(`output truncated: ${result.totalBytes} bytes total, ${where}`);
  }
  if (result.cleanupError) {
    details.cleanupError = result.cleanupError;
    parts.push(`tool_cleanup: ${result.cleanupError}`);
  }
  const body = result.output === '' ? '(no output)\n' : result.output.endsWith('\n') ? result.output : `${result.output}\n`;
  const notes = (result.notes ?? []).map((n) => `[${n}]\n`).join('');
  return {
    content: [{ type: 'text', text: `${body}${notes}[${parts.join('; ')}]` }],
    isError: result.timedOut || result.cancelled || result.cleanupError !== undefined,
    details,
  };
}

function status(result: ExecResult, timeoutMs: number): string {
  if (result.timedOut) return `timed out after ${timeoutMs} ms; the command and its processes were killed`;
  if (result.cancelled) return 'cancelled; the command and its processes were killed';
  if (result.signal !== null) return `killed by signal ${result.signal}`;
  const code = result.exitCode ?? 0;
  // A shell reports a child killed by signal N as 128+N.
  const name = code > 128 ? SIGNAL_NAMES.get(code - 128) : undefined;
  return name ? `exit code ${code} (128+${code - 128}: a process was killed by ${name})` : `exit code ${code}`;
}

// First name wins: aliases (SIGIOT for SIGABRT) come after the usual names.
const SIGNAL_NAMES = new Map<number, string>();
for (const [name, number] of Object.entries(constants.signals)) if (!SIGNAL_NAMES.has(number)) SIGNAL_NAMES.set(number, name);

/** The log's bound as the description says it ('' when unbounded). */
function logBound(bytes: number): string {
  if (bytes === 0) return '';
  const MiB = 1024 * 1024;
  return ` (its first ${bytes % MiB === 0 ? `${bytes / MiB} MiB` : `${bytes} bytes`} at most)`;
}

function duration(ms: number): string {
  if (ms % 60_000 === 0) return `${ms / 60_000} min`;
  if (ms % 1000 === 0) return `${ms / 1000} s`;
  return `${ms} ms`;
}
