// The directories a command is given (its workspace, temp dir, writable roots, caches), resolved
// to where they really are: canonical, remembered by identity so the next command needs no
// realpath, and held to where they first led, so a link swapped in between two commands is refused.
// The workspace and the writable roots are held to the very directory they were, too: one moved
// away and replaced by another (in a writable root above it) would take its .git along to a place
// no protection covers.
import { closeSync, constants, fstatSync, lstatSync, openSync, realpathSync, statSync } from 'node:fs';
import { isAbsolute } from 'node:path';

/**
 * The request cannot be sandboxed as given (a missing workspace, an unknown profile, a protected
 * path that is a symlink, a writable root inside a protected path). The message names the path or
 * setting and the fix; nothing was run.
 */
export class SandboxRequestError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'SandboxRequestError';
  }
}

/** Canonical directories found so, by identity: the same directory there again needs no realpath. */
const canonicalDirs = new Map<string, { dev: number; ino: number }>();
/**
 * Where each workspace, temp dir, writable root and cache first led. A directory a command can reach
 * the parent of (a writable root inside the workspace, a temp dir in it) can be moved away and a
 * link put in its place: resolved afresh, the next command would mount whatever the link names
 * (the home directory) writable. One that leads elsewhere now is refused instead.
 */
const firstReal = new Map<string, string>();

/**
 * A temp dir conch just made: where it leads is taken now, not at its first command. In a workspace
 * that contains TMPDIR another conch's command could otherwise swap it for a link before then.
 */
export function rememberDirectory(path: string): void {
  if (firstReal.size >= 256) firstReal.clear();
  firstReal.set(path, realpathSync(path));
}

/** The directory each workspace and writable root was at its first command, by session (its placeholder scope). */
const firstIdentity = new WeakMap<object, Map<string, string>>();
const unscoped = new Map<string, string>();

/**
 * `real` (the canonical directory of `path`) is the directory it was at the session's first command, by
 * device and inode: a command that can write a folder above it (a writable root around the
 * workspace) can move it away, .git and all, and make a new one at the same path; the protections
 * would then hold the new one, and the moved repository, its hooks included, would lie writable in
 * the root. `run`: the session's placeholder scope, so a long-lived host (conch acp) that later opens a
 * session in a directory made again meanwhile (a fresh clone) is not refused.
 *
 * Returns the directory checked, opened (O_PATH on Linux): bwrap mounts `real` only later, and a
 * command of the run in a sandbox of its own can move it in between, so the command's shell checks
 * that what is mounted there is this very directory before it runs anything (moved-check.ts). The
 * caller closes it; it must never reach a command (it leads past every mount).
 */
export function sameDirectory(path: string, real: string, what: string, run: object | undefined): number {
  const known = run ? (firstIdentity.get(run) ?? firstIdentity.set(run, new Map()).get(run)!) : unscoped;
  let fd: number;
  try {
    fd = openSync(real, OPEN_FLAGS);
  } catch (error) {
    // Resolved a moment ago: gone or replaced by a file since, which another command can make.
    if (known.has(path)) throw new DirectoryMovedError(what, path);
    throw new SandboxRequestError(`${what} ${path} cannot be used: ${(error as Error).message}; run conch from an existing directory.`);
  }
  const info = fstatSync(fd);
  const id = `${info.dev}:${info.ino}`;
  if (firstSeen(known, path, id) !== id) {
    closeSync(fd);
    throw new DirectoryMovedError(what, path);
  }
  return fd;
}

/** O_PATH: a handle on the directory, no permission to read it needed (nor given). */
const OPEN_FLAGS = constants.O_RDONLY | constants.O_DIRECTORY | (process.platform === 'linux' ? 0o10000000 : 0);

/** sameDirectory's refusal: a policy denial (rule workspace.moved), as the file tools give it. */
export class DirectoryMovedError extends SandboxRequestError {
  readonly rule = 'workspace.moved';
  constructor(what: string, path: string) {
    super(
      `${what} ${path} is no longer the directory it was at this session's first command: something moved it away and made another in its place, ` +
        'so its .git and other protected names may now lie unprotected where it went (a writable root above it). conch runs no command there. ' +
        'Find where it went, check its .git (hooks, config) and put it back, then start conch again.',
    );
  }
}

/** What `key` was first seen as (`value`, recorded, when it is new); a bounded memory, forgotten whole when full. */
function firstSeen(seen: Map<string, string>, key: string, value: string): string {
  const first = seen.get(key);
  if (first !== undefined) return first;
  if (seen.size >= 256) seen.clear();
  seen.set(key, value);
  return value;
}

export function directory(path: string, what: string, fix: string, stays = true): string {
  const real = resolveDirectory(path, what, fix);
  if (!stays) return real;
  const first = firstSeen(firstReal, path, real);
  if (first !== real) {
    throw new SandboxRequestError(
      `${what} ${path} now leads to ${real}, not to ${first} as before: something put a link in its way, so conch runs no command there. Check what changed it, then start conch again.`,
    );
  }
  return real;
}

function resolveDirectory(path: string, what: string, fix: string): string {
  if (!isAbsolute(path)) throw new SandboxRequestError(`${what} "${path}" must be an absolute path; ${fix}.`);
  const known = canonicalDirs.get(path);
  if (known) {
    const info = lstatSync(path, { throwIfNoEntry: false });
    if (info?.isDirectory() && info.dev === known.dev && info.ino === known.ino) return path;
    canonicalDirs.delete(path);
  }
  try {
    const real = realpathSync(path);
    const info = statSync(real);
    if (!info.isDirectory()) throw new SandboxRequestError(`${what} ${path} is not a directory; ${fix}.`);
    if (real === path) {
      if (canonicalDirs.size >= 64) canonicalDirs.clear();
      canonicalDirs.set(path, { dev: info.dev, ino: info.ino });
    }
    return real;
  } catch (error) {
    if (error instanceof SandboxRequestError) throw error;
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') throw new SandboxRequestError(`${what} ${path} does not exist; ${fix}.`);
    throw new SandboxRequestError(`${what} ${path} cannot be used: ${(error as Error).message}; ${fix}.`);
  }
}
