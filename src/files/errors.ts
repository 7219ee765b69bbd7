// The messages file tools return for the failures a model causes: missing files (with where to
// look instead), directories, permissions. Anything else is a bug and is rethrown by the caller.
import { readdir, stat } from 'node:fs/promises';
import { basename, dirname, extname, join } from 'node:path';
import type { Workspace } from '../workspace/paths.ts';

export function errorCode(error: unknown): string | undefined {
  return (error as { code?: string } | null)?.code;
}


/** Small edit distance, bounded: enough to spot a typo without scoring whole directories. */
function closeEnough(a: string, b: string): boolean {
  // One typo per five characters: "confg.json" finds "config.json", "nope.ts" does not find "code.ts".
  const allowed = Math.max(1, Math.floor(Math.min(a.length, b.length) / 5));
  if (Math.abs(a.length - b.length) > allowed || a.length > 64 || b.length > 64) return false;
  let prev = Array.from({ length: b.length + 1 }, (_, i) => i);
  for (let i = 1; i <= a.length; i++) {
    const row = [i];
    for (let j = 1; j <= b.length; j++) {
      row[j] = Math.min(prev[j]! + 1, row[j - 1]! + 1, prev[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
    }
    prev = row;
  }
  return prev[b.length]! <= allowed;
}

function similarNames(wanted: string, names: string[]): string[] {
  const lower = wanted.toLowerCase();
  const stem = basename(wanted, extname(wanted)).toLowerCase();
  return names
    .filter((n) => {
      const l = n.toLowerCase();
      return l === lower || (stem.length > 2 && basename(l, extname(l)) === stem) || closeEnough(l, lower);
    })
    .slice(0, 5);
}

/** "Not found" with the nearest directory that does exist, and look-alike names in it. */
export async function notFoundMessage(abs: string, ws: Workspace, what = 'File'): Promise<string> {
  let missing = abs;
  let dir = dirname(abs);
  for (;;) {
    const st = await stat(dir).catch(() => null);
    if (st?.isDirectory()) break;
    const parent = dirname(dir);
    if (parent === dir) break;
    missing = dir;
    dir = parent;
  }
  const near = ws.display(dir) === '.' ? 'the workspace root (.)' : ws.display(dir);
  let text = `${what} not found: ${ws.display(abs)}. The nearest existing directory is ${near}`;
  const names = await readdir(dir).catch(() => [] as string[]);
  const similar = similarNames(basename(missing), names);
  if (similar.length > 0) {
    const shown = similar.map((n) => ws.display(join(dir, n)));
    text += `; did you mean ${shown.join(', ')}?`;
  } else text += '. List it with bash (e.g. `ls -la`) to find the right name.';
  return text;
}

export function directoryMessage(abs: string, ws: Workspace, action: string): string {
  const shown = ws.display(abs);
  return `${shown} is a directory; ${action} works on files. List it with bash, e.g. \`ls -la ${shown}\`.`;
}

/** The message for an expected file-system failure, or null when the error is not one. */
export async function fsErrorMessage(error: unknown, abs: string, ws: Workspace, action: 'read' | 'write' | 'edit'): Promise<string | null> {
  const shown = ws.display(abs);
  switch (errorCode(error)) {
    case 'ENOENT':
    case 'ENOTDIR':
      return notFoundMessage(abs, ws, action === 'read' || action === 'edit' ? 'File' : 'Directory');
    case 'EISDIR':
      return directoryMessage(abs, ws, action);
    case 'EACCES':
    case 'EPERM':
      return `Permission denied: cannot ${action} ${shown} (the file or a directory above it is not accessible to conch's user).`;
    case 'ELOOP':
      return `Cannot ${action} ${shown}: too many levels of symbolic links (a link loop?).`;
    case 'ECHANGED':
      return `Nothing was read from ${shown}: it was replaced between the policy check and its opening (a directory on its path, or the file itself, e.g. by a symbolic link). Ask again to have the path checked afresh.`;
    case 'EROFS':
      return `Cannot ${action} ${shown}: the file system is read-only.`;
    case 'ENOSPC':
    case 'EDQUOT':
      return `Cannot ${action} ${shown}: no space left on the device (or quota exceeded); nothing was changed.`;
    case 'EIO':
      return `Cannot ${action} ${shown}: input/output error (a failing device, or a /proc file such as a process's mem that cannot be read from its start).`;
    case 'ENAMETOOLONG':
      return `Cannot ${action} ${shown}: the file name is too long.`;
    default:
      return null;
  }
}

/** The existing file that stands where a directory on the path to `abs` should be, if any. */
export async function blockingFile(abs: string): Promise<string | null> {
  for (let dir = dirname(abs); ; dir = dirname(dir)) {
    const st = await stat(dir).catch(() => null);
    if (st) return st.isDirectory() ? null : dir;
    if (dirname(dir) === dir) return null;
  }
}
