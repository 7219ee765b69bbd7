// Where sessions live: $XDG_STATE_HOME/conch/sessions (default ~/.local/state/conch/sessions), a
// 0700 directory of 0600 files. Outside every workspace by default; when a workspace contains it
// (conch run from $HOME), config/own-dirs.ts keeps the tools out of it and the sandbox hides it.
import { chmodSync, closeSync, constants, fstatSync, lstatSync, mkdirSync, openSync, readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { conchCacheDir, stateHome } from '../config/xdg.ts';
import { mkdirFailure } from '../core/errors.ts';

/** A session problem the user can fix (unknown id, another workspace's session, a foreign file). */
export class SessionError extends Error {
  override name = 'SessionError';
}

/** No stored session has the id asked for (an editor's session/load answers it as "resource not found"). */
export class SessionNotFoundError extends SessionError {}

/** Where the store is without loading a config (the same place config/load.ts puts in Config.sessions). */
export function sessionsDir(env: Record<string, string | undefined> = process.env): string {
  return join(stateHome(env, env.HOME || homedir()), 'conch', 'sessions');
}

/** Create the directory (0700) or make an existing one private; refuse one that is not ours. */
export function ensurePrivateDir(dir: string): void {
  try {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
  } catch (error) {
    // A home directory nobody may write (a service account's, HOME=/nonexistent in CI) is no bug.
    throw new SessionError(`cannot create the session directory ${dir} (${mkdirFailure(error)}): set XDG_STATE_HOME to a directory you can write, or run with --ephemeral to store no session.`);
  }
  const info = lstatSync(dir);
  const uid = process.getuid?.();
  if (!info.isDirectory() || (uid !== undefined && info.uid !== uid)) {
    throw new SessionError(`the session directory ${dir} is not a directory of yours; remove it or set XDG_STATE_HOME to another place.`);
  }
  if ((info.mode & 0o077) !== 0) chmodSync(dir, 0o700);
}

/** Where the store remembers each workspace's latest session (sessions/latest.ts): conch's cache folder. */
export function latestIndexDir(env: Record<string, string | undefined> = process.env): string {
  return join(conchCacheDir(env), 'sessions');
}

/**
 * A session file opened never through a link, without blocking, and kept only when it is a regular
 * file of this user's. The store is private, but whoever could write it before conch made it so (a
 * shared XDG_STATE_HOME) may have left a link (the next run's conversation appended to, and the
 * file chmodded, wherever it led), a FIFO (-c and `conch sessions` hung) or a file of theirs (a
 * conversation, instructions and all, that -c continued as the user's). Throws a SessionError.
 */
export function openSessionFile(path: string, flags: number = constants.O_RDONLY): number {
  let fd: number;
  try {
    fd = openSync(path, flags | constants.O_NOFOLLOW | constants.O_NONBLOCK | constants.O_NOCTTY, 0o600);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    throw new SessionError(`${code === 'ELOOP' ? `the session file ${path} is a link; remove it` : `cannot open the session file ${path}: ${(error as Error).message}`}`);
  }
  const info = fstatSync(fd);
  const uid = process.getuid?.() ?? info.uid;
  if (info.isFile() && info.uid === uid) return fd;
  closeSync(fd);
  throw new SessionError(`the session file ${path} ${info.isFile() ? 'is not yours' : 'is not a regular file'}; remove it`);
}

/** A session file's text, read as openSessionFile allows. */
export function readSessionFile(path: string): string {
  const fd = openSessionFile(path);
  try {
    return readFileSync(fd, 'utf8');
  } catch (error) {
    throw new SessionError(`cannot read the session file ${path}: ${(error as Error).message}`);
  } finally {
    closeSync(fd);
  }
}
