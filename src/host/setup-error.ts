// The one classifier of setup failures, for every host: an error the user can fix (bad config, no
// model, a missing key, an unknown session, a working directory that is gone) is reported as its
// message; anything else is a bug and keeps its stack.
import { ConfigError, SetupError } from '../core/errors.ts';
import { SessionError, SessionNotFoundError } from '../sessions/dir.ts';

/** The message to show the user, or null when the error is a bug. */
export function setupProblem(error: unknown): string | null {
  if (error instanceof ConfigError || error instanceof SetupError || error instanceof SessionError) return error.message;
  // A missing or unreadable working directory is the user's situation, not a bug.
  const code = (error as { code?: string } | null)?.code;
  if (error instanceof Error && (code === 'ENOENT' || code === 'EACCES' || code === 'ENOTDIR')) return error.message;
  return null;
}

/**
 * A problem with a value typed on the command line (--timeout 5x, --env FOO=1, --policy FILE that
 * is not there, --resume ID of no session): a usage error, found before any run began, so no run id
 * goes with it. Such a ConfigError names the flag as its key; a file's own problem (bad JSON in the
 * policy) names none. Before a run, the one id a session lookup can miss is the one --resume gave.
 */
export function isFlagProblem(error: unknown): boolean {
  return (error instanceof ConfigError && error.key?.startsWith('--') === true) || error instanceof SessionNotFoundError;
}
