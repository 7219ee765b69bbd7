// Small helpers for building /bin/sh command lines and shaping results, using only the public API.
import type { ExecResult, ToolContext } from 'conch';

/** Quote one argument for /bin/sh: single quotes, with embedded single quotes closed and escaped. */
export function shq(value: string): string {
  return `'${value.replace(/'/g, `'\\''`)}'`;
}

/** Quote a list of arguments, space separated. */
export function shargs(values: string[]): string {
  return values.map(shq).join(' ');
}


/** Why a command did not succeed, in one message the model can act on; null when it exited 0. */
export function failure(result: ExecResult, what: string): string | null {
  if (result.denied) return `${what} was refused by policy (${result.denied.rule}): ${result.denied.message}`;
  if (result.timedOut) return `${what} timed out after ${Math.round(result.durationMs / 1000)} s`;
  if (result.cancelled) return `${what} was cancelled`;
  if (result.exitCode === 0) return null;
  const status = result.exitCode === null ? `killed by ${result.signal ?? 'a signal'}` : `exit code ${result.exitCode}`;
  // The sandbox protects .git (a command must not rewrite history or hooks), so git cannot write there.
  const readOnly = /\.git\b[^\n]*Read-only file system/.test(result.output)
    ? "\n(conch's sandbox keeps .git read-only, so this cannot run here; the user can rerun conch with --unrestricted, or commit themselves)"
    : '';
  // git diff outside a repository answers with its whole usage text; the first line says it all.
  if (/Not a git repository|not a git repository/.test(result.output)) {
    return `${what} failed (${status}): not a git repository (the workspace is not inside one)`;
  }
  return `${what} failed (${status}):\n${result.output.trim()}${readOnly}`;
}

const MAX_COLLECT = 8 * 1024 * 1024;

/**
 * Run a command and keep its whole output (up to 8 MB) rather than the bounded head + tail of the
 * result, so it can be paged. Output arrives through onOutput as the executor streams it.
 */
export async function collect(ctx: ToolContext, command: string): Promise<{ result: ExecResult; text: string; clipped: boolean }> {
  const chunks: string[] = [];
  let size = 0;
  let clipped = false;
  const result = await ctx.exec(command, {
    onOutput: (chunk) => {
      if (size >= MAX_COLLECT) {
        clipped = true;
        return;
      }
      chunks.push(chunk);
      size += chunk.length;
    },
  });
  return { result, text: chunks.join(''), clipped };
}

/** Check every path against the workspace policy before git touches it; returns an error or null. */
export async function checkPaths(ctx: ToolContext, paths: string[], mode: 'read' | 'write'): Promise<string | null> {
  for (const path of paths) {
    if (path.trim() === '') return 'paths must not contain empty strings';
    try {
      await ctx.workspace.resolve(path, mode);
    } catch (error) {
      return `${path}: ${(error as Error).message}`;
    }
  }
  return null;
}
