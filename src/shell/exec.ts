// The one path every shell command takes (the bash tool and plugins' ctx.exec):
// capability → cwd containment → timeout → command rules → sandbox → process.
import { statSync } from 'node:fs';
import { isAbsolute, join, relative } from 'node:path';
import { PolicyError } from '../core/errors.ts';
import { isWithin } from '../core/paths.ts';
import type { CommandDecision } from '../core/command-decision.ts';
import type { Workspace } from '../workspace/paths.ts';
import {
  DirectoryMovedError,
  GIT_DIR_ROOT_NOTE,
  PlaceholderScope,
  prepareSandboxed,
  SandboxRequestError,
  SandboxUnavailableError,
  type PreparedCommand,
  type SandboxRequest,
  type SandboxSettings,
} from '../sandbox/index.ts';
import type { Limits } from '../core/limits.ts';
import { canUseOutputFd } from '../process/merged-output.ts';
import { cleanEnv, runProcess, type ProcessResult } from '../process/spawn.ts';
import { secretNotes } from './secret-notes.ts';
import type { SecretLocation } from '../workspace/secrets.ts';
import type { NetworkProxy } from '../sandbox/proxy.ts';

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

/** What a command gave: the process's result, or why policy or the sandbox refused to run it. */
export interface ExecResult extends Omit<ProcessResult, 'startError'> {
  /** Policy facts the model should know about this command (a hidden secret it named …), one line each. */
  notes?: string[];
  /** Set when policy or the sandbox refused to run the command at all. */
  denied?: { rule: string; message: string };
  onOutput?: (chunk: string) => void;
}

/** The timeout a command gets: the default when none is asked (a plugin's NaN too), at most the maximum. */
export function commandTimeout(requested: number | undefined, limits: Limits): number {
  const ms = requested ?? limits.tool_timeout_ms;
  // Infinity (or anything longer) gets the maximum.
  return Number.isNaN(ms) ? limits.tool_timeout_ms : Math.max(1, Math.min(Math.floor(ms), limits.tool_timeout_max_ms));
}

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
  /** Private per-run temp dir; the sandbox's writable /tmp. */
  tmpDir: string;
  /**
   * Where full output logs go. conch writes them from outside the sandbox, so this must not be
   * reachable from inside it (a command could swap it for a symlink and aim conch's write anywhere).
   * Default: `<tmpDir>-logs`, a sibling the sandbox never mounts.
   */
  logDir?: string;
  /**
   * The run's placeholders for absent protected names, kept from the first command to the run's end
   * (the host closes it). Absent: each command makes and removes its own.
   */
  placeholders?: PlaceholderScope;
  /** Builds the sandboxed command; prepareSandboxed unless a host or test substitutes its own. */
  prepare?: (request: SandboxRequest) => Promise<PreparedCommand>;
  /** The run's network allowlist proxy; its refusals during a command are notes in that command's result. */
  proxy?: NetworkProxy;
  /** Credential locations hidden from commands; a command that names one is told so (secretNotes). */
  secrets?: SecretLocation[];
}

export type Executor = (command: string, options: ExecOptions & { signal: AbortSignal }) => Promise<ExecResult>;

export function createExecutor(settings: ExecutorSettings): Executor {
  // Built once: the environment does not change during a run.
  const env = cleanEnv(process.env, settings.env, { tmpDir: settings.tmpDir });
  const logDir = settings.logDir ?? `${settings.tmpDir}-logs`;
  const prepare = settings.prepare ?? prepareSandboxed;

  return async (command, options) => {
    const started = performance.now();
    const refused = (rule: string, message: string): ExecResult => ({
      ...emptyResult(started),
      denied: { rule, message },
    });
    if (!settings.shellEnabled) {
      return refused('capability.no-shell', 'Shell commands are disabled for this run (--no-shell or policy); use the file tools instead.');
    }

    let cwd: string;
    try {
      cwd = await resolveCwd(settings, options.cwd);
    } catch (error) {
      if (error instanceof PolicyError) return refused(error.rule, error.message);
      throw error;
    }
    const notDirectory = checkDirectory(cwd, settings.workspace);
    if (notDirectory) return { ...emptyResult(started), output: notDirectory };
    // No argv string can carry one: the spawn itself would fail, naming an argv index of bwrap's.
    if (command.includes('\0')) {
      return { ...emptyResult(started), output: "the command contains a NUL byte, which no shell command can hold; to produce one, use printf '\\0'." };
    }

    const limits = settings.limits;
    const timeoutMs = commandTimeout(options.timeoutMs, limits);

    if (settings.guard) {
      const decision = await settings.guard(command, cwd);
      if (!decision.allowed) return refused(decision.rule, decision.message);
    }

    let argv = ['/bin/sh', '-c', command];
    let prepared: PreparedCommand | null = null;
    if (!settings.unrestricted) {
      try {
        prepared = await prepare({
          ...settings.sandbox,
          command,
          cwd,
          workspace: settings.workspace.root,
          tmpDir: settings.tmpDir,
          outputOnFd: canUseOutputFd(),
          ...(settings.placeholders ? { placeholders: settings.placeholders } : {}),
          ...(settings.proxy ? { proxy: settings.proxy } : {}),
        });
      } catch (error) {
        // Fail closed: without a working sandbox the command does not run at all.
        if (error instanceof SandboxUnavailableError) return refused('sandbox.unavailable', error.message);
        // The workspace or a writable root is not the directory it was: a denial, as the file tools give.
        if (error instanceof DirectoryMovedError) return refused(error.rule, error.message);
        // A setting the sandbox cannot honour (a writable root inside a protected path…): nothing
        // ran, and the message names the setting and the fix.
        if (error instanceof SandboxRequestError) return { ...emptyResult(started), output: error.message };
        throw error;
      }
      argv = prepared.argv;
    }

    const deniedBefore = settings.proxy?.refusals() ?? 0;
    let outcome: Awaited<ReturnType<typeof runProcess>>;
    try {
      outcome = await runProcess({
        argv,
        cwd,
        env,
        timeoutMs,
        signal: options.signal,
        maxShownBytes: limits.shell_output_bytes,
        maxLogBytes: limits.shell_log_bytes,
        logDir,
        extraFds: prepared?.extraFds ?? [],
        ...(prepared?.channel ? { channel: prepared.channel } : {}),
        ...(prepared?.outputFd === undefined ? {} : { outputFd: prepared.outputFd }),
        ...(prepared?.infoFd === undefined ? {} : { infoFd: prepared.infoFd }),
        ...(prepared?.settle ? { settle: prepared.settle } : {}),
        ...(prepared?.ready ? { ready: prepared.ready } : {}),
        ...(options.onOutput ? { onOutput: options.onOutput } : {}),
      });
    } catch (error) {
      await release(prepared);
      throw error;
    }
    const releaseError = await release(prepared);
    const { startError: _startError, ...result } = outcome;
    if (releaseError) {
      // Host-side preparation left behind (a placeholder file) is a cleanup failure like a stray process.
      result.cleanupError = result.cleanupError ? `${result.cleanupError}; ${releaseError}` : releaseError;
    }
    // Moved between the checks and the mounts: the sandbox refused it before it ran anything.
    const moved = prepared?.refusal?.(result.exitCode, result.output);
    if (moved) return { ...refused(moved.rule, moved.message), ...(result.cleanupError ? { cleanupError: result.cleanupError } : {}) };
    const notes = settings.unrestricted ? [] : secretNotes(command, settings.secrets ?? []);
    // Denials during this command (a background job's may land here too: they are the run's all the same).
    for (const note of settings.proxy?.notesSince(deniedBefore) ?? []) if (!notes.includes(note)) notes.push(note);
    // Why a write in a bare repository fails (commands see it read-only), where "Read-only file system" alone does not say.
    if (result.exitCode !== 0 && prepared?.notes?.includes(GIT_DIR_ROOT_NOTE)) notes.push(GIT_DIR_ROOT_NOTE);
    return { ...result, ...(notes.length ? { notes } : {}), durationMs: Math.round(performance.now() - started) };
  };
}

async function release(prepared: PreparedCommand | null): Promise<string | null> {
  if (!prepared) return null;
  try {
    await prepared.release();
    return null;
  } catch (error) {
    return `undoing the sandbox preparation failed: ${(error as Error).message}`;
  }
}

async function resolveCwd(settings: ExecutorSettings, requested: string | undefined): Promise<string> {
  const root = settings.workspace.root;
  if (requested === undefined || requested === '' || requested === '.') return root;
  // Reads are not confined to the workspace, so containment is checked here explicitly.
  const resolved = await settings.workspace.resolve(requested, 'read');
  if (!settings.unrestricted && !isWithin(resolved, root)) {
    throw new PolicyError(
      'workspace.outside',
      `cwd "${requested}" resolves outside the workspace ${root}; commands run inside the workspace (pass --unrestricted to lift this).`,
    );
  }
  return resolved;
}


// Synchronous: one stat on a path just resolved costs less than the trip to the thread pool.
function checkDirectory(cwd: string, workspace: Workspace): string | null {
  try {
    const info = statSync(cwd);
    return info.isDirectory() ? null : `cwd "${workspace.display(cwd)}" is not a directory; pass a directory (workspace-relative).`;
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') return `cwd "${workspace.display(cwd)}" does not exist; create it first or pass an existing directory.`;
    return `cwd "${workspace.display(cwd)}" cannot be used: ${(error as Error).message}`;
  }
}

/** A result for a command that never ran: exitCode and signal null, nothing timed out or cancelled. */
function emptyResult(started: number): ExecResult {
  return {
    exitCode: null,
    signal: null,
    output: '',
    truncated: false,
    totalBytes: 0,
    logPath: null,
    timedOut: false,
    cancelled: false,
    durationMs: Math.round(performance.now() - started),
  };
}
