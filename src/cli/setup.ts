// The CLI's side of a host start: the terminal approver, and a setup failure in one paragraph (or one
// JSON document) with exit code 2.
import { EXIT_CODES } from '../agent/outcome.ts';
import type { CliFlags, Config } from '../config/types.ts';
import { loadHostConfig } from '../host/setup.ts';
import { isFlagProblem, setupProblem } from '../host/setup-error.ts';
import type { Approver } from '../policy/command-rules.ts';
import { usageHint } from './argv.ts';
import { setupEnvelope } from './envelope.ts';
import { stderr, stdinIsTTY, stdout } from '../core/stdio.ts';
import { terminalSafe } from './tool-lines.ts';
import { wrapWords } from './wrap.ts';

/** Config for a `conch` subcommand run in the current directory. */
export function loadCliConfig(flags: CliFlags, cwd = process.cwd()): Promise<Config> {
  return loadHostConfig(flags, cwd);
}

/** An approver that asks on the terminal, only when both stdin and stderr are TTYs. */
export async function terminalApprover(signal: AbortSignal): Promise<Approver | undefined> {
  if (!stdinIsTTY() || !stderr.isTTY) return undefined;
  const { ttyApprover } = await import('../policy/approve.ts');
  return ttyApprover(process.stdin, process.stderr, signal);
}

/**
 * Report a user-caused setup problem and return exit code 2; a bug is rethrown. `runId` is the run
 * that was being set up (null for a command that starts none); a bad flag value is a usage error
 * like an unknown flag: it points to the command's help and has no run id, whatever was set up.
 */
export function setupFailure(error: unknown, json: boolean, runId: string | null, command = ''): number {
  const message = setupProblem(error);
  if (message === null) throw error;
  const flag = isFlagProblem(error);
  if (json) {
    stdout.write(`${JSON.stringify(setupEnvelope(flag ? null : runId, message))}\n`);
  }
  // As for an unknown flag, stderr says it under --json too. The message may quote a cloned
  // repository's config (a key's name): its escape sequences must not reach the terminal.
  if (!json || flag) stderr.write(`${wrapWords(`conch: ${terminalSafe(message)}`, stderr.columns)}\n${flag ? usageHint(command) : ''}`);
  return EXIT_CODES.setup_error;
}
