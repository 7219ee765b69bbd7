// What the run's held sandbox (held.ts) is compared against before each command: the identity of
// every host path its options mount, where each of its mounts must be, its mount table and /dev as
// read through its pid 1's /proc directory, and that pid 1's children. Reads only; no decisions.
import { closeSync, lstatSync, openSync, readdirSync, readFileSync, readSync } from 'node:fs';

export type Identity = string;

export function identity(path: string): Identity {
  // Not throwing for an absent path: an exception costs more than the lstat, a dozen per command.
  try {
    const info = lstatSync(path, { throwIfNoEntry: false });
    return info ? `${info.dev}:${info.ino}:${info.mode}` : '-';
  } catch (error) {
    return `!${(error as NodeJS.ErrnoException).code}`;
  }
}

/**
 * Every host path the options mount or mount over (bind sources and destinations, tmpfs mount
 * points): what a change there invalidates. A destination counts apart from its source: the empty
 * file bound over a hidden file stays the same while the hidden file is replaced by rename (git's
 * credential store, docker login), and the new one, no mount point in the held namespace, shows.
 */
export function mountedPaths(options: string[]): string[] {
  const paths: string[] = [];
  for (let i = 0; i < options.length; i++) {
    const arg = options[i]!;
    if (/^--(ro-|dev-)?bind(-try)?$/.test(arg)) {
      const [source, destination] = [options[i + 1]!, options[i + 2]!];
      if (source !== '/') paths.push(source);
      if (destination !== source && destination !== '/') paths.push(destination);
      i += 2;
    } else if (arg === '--tmpfs') {
      paths.push(options[i + 1]!);
      i += 1;
    }
  }
  return paths;
}

/**
 * Where the options put a mount inside the sandbox: what its mount table must show once started.
 * The -try binds are left out (an absent source mounts nothing).
 */
export function mountPointsOf(options: string[]): string[] {
  const points: string[] = [];
  for (let i = 0; i < options.length; i++) {
    const arg = options[i]!;
    if (/^--(ro-|dev-)?bind$/.test(arg)) {
      points.push(options[i + 2]!);
      i += 2;
    } else if (/^--(ro-|dev-)?bind-try$/.test(arg)) i += 2;
    else if (arg === '--tmpfs' || arg === '--dev' || arg === '--proc') {
      points.push(options[i + 1]!);
      i += 1;
    }
  }
  return points;
}

/** The mount points in a mount table (mountinfo's fifth field, octal escapes undone). */
export function mountPointsIn(table: string): Set<string> {
  const points = new Set<string>();
  for (const line of table.split('\n')) {
    const field = line.split(' ')[4];
    if (field !== undefined) points.add(field.replace(/\\([0-7]{3})/g, (_, octal: string) => String.fromCharCode(parseInt(octal, 8))));
  }
  return points;
}

const childrenBuffer = Buffer.alloc(4096);

/** The children file of a single-threaded process (bwrap's first process), or null when it is gone. */
export function childrenOf(pid: number): string | null {
  let fd: number;
  try {
    fd = openSync(`/proc/${pid}/task/${pid}/children`, 'r');
  } catch {
    return null;
  }
  try {
    return childrenBuffer.toString('latin1', 0, readSync(fd, childrenBuffer, 0, childrenBuffer.length, 0)).trim();
  } catch {
    return null;
  } finally {
    closeSync(fd);
  }
}

/**
 * The sandbox's mount table as its first process sees it, through the descriptor of its /proc
 * directory; null when it cannot be read. Mount points are shown by their present path: a directory
 * renamed above one moves it, a mount point unlinked on the host loses it.
 */
export function mountTable(procFd: number): string | null {
  try {
    return readFileSync(`/proc/self/fd/${procFd}/mountinfo`, 'latin1');
  } catch {
    return null;
  }
}

/**
 * The sandbox's /dev and /dev/shm, entry by entry (name and inode). Both are the sandbox's own
 * tmpfs, writable by its commands: a file left in /dev/shm, a /dev/stdout or /dev/fd pointed
 * elsewhere would be there for every later command, where a sandbox of its own starts from a fresh one.
 */
export function devEntries(procFd: number): string | null {
  const root = `/proc/self/fd/${procFd}/root`;
  try {
    const out: string[] = [];
    for (const dir of ['/dev', '/dev/shm']) {
      for (const name of readdirSync(root + dir).sort()) out.push(`${dir}/${name}:${lstatSync(`${root}${dir}/${name}`).ino}`);
    }
    return out.join('\n');
  } catch {
    return null;
  }
}

/**
 * Whether a process or one of its descendants is stopped (SIGSTOP, or a trace stop): a process let
 * go ends by itself unless something stops it. Each is single-threaded (nsenter, bwrap, sh).
 */
export function stoppedTree(pid: number): boolean {
  const pending = [pid];
  for (let seen = 0; pending.length > 0 && seen < 16; seen++) {
    const next = pending.pop()!;
    let stat: string;
    try {
      stat = readFileSync(`/proc/${next}/stat`, 'latin1');
    } catch {
      continue; // gone
    }
    // The state follows the command name, which may hold any character but ends at the last ')'.
    const state = stat[stat.lastIndexOf(')') + 2];
    if (state === 'T' || state === 't') return true;
    for (const child of childrenOf(next)?.split(' ') ?? []) if (child) pending.push(Number(child));
  }
  return false;
}
