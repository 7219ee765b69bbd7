// Which file a command's executable names, and whether the run itself could change that answer.
//
// Nothing here caches: a directory the model can write may be a link to /usr/bin for one command
// and a directory of its own programs for the next, so every decision looks again.
import { accessSync, constants, lstatSync, readlinkSync, realpathSync, statSync } from 'node:fs';
import { basename, delimiter, dirname, isAbsolute, join, sep } from 'node:path';
import { isWithin } from '../core/paths.ts';

/** The usual executable lookup: the first PATH entry holding an executable regular file. */
export function findOnPath(name: string, path: string): string | null {
  for (const dir of path.split(delimiter)) {
    if (!dir || !isAbsolute(dir)) continue; // a relative PATH entry would depend on the cwd
    const candidate = join(dir, name);
    try {
      if (!statSync(candidate).isFile()) continue;
      accessSync(candidate, constants.X_OK);
      return candidate;
    } catch {
      // not here
    }
  }
  return null;
}

export function realDir(path: string): string {
  try {
    return realpathSync(path);
  } catch {
    return path;
  }
}

// Two spellings name the same program when their directories are the same directory: /bin/rm is
// /usr/bin/rm on a merged-/usr system. The file itself is not followed (python3 stays python3).
export function sameProgram(a: string, b: string): boolean {
  if (a === b) return true;
  if (basename(a) !== basename(b)) return false;
  return realDir(dirname(a)) === realDir(dirname(b));
}

const MAX_LINKS = 40; // the kernel's own limit (ELOOP)

/**
 * The directories whose entries the kernel reads to open `path` (absolute), following symbolic
 * links the way it does: each is canonical. Whoever can change an entry in one of them can change
 * which file `path` is, between the rule check and the exec.
 */
export function lookupDirs(path: string): string[] {
  const dirs: string[] = [];
  let cur = '/';
  let rest = path.split('/');
  let links = 0;
  while (rest.length) {
    const part = rest.shift()!;
    if (part === '' || part === '.') continue;
    if (part === '..') {
      cur = dirname(cur);
      continue;
    }
    dirs.push(cur);
    const next = join(cur, part);
    let isLink: boolean;
    try {
      isLink = lstatSync(next).isSymbolicLink();
    } catch {
      break; // missing: nothing further is read
    }
    if (!isLink) {
      cur = next;
      continue;
    }
    if (++links > MAX_LINKS) break;
    const target = readlinkSync(next);
    if (isAbsolute(target)) cur = '/';
    rest = [...target.split('/'), ...rest];
  }
  return dirs;
}


/** The first directory of `path`'s lookup that lies in one of `roots` (canonical), else null. */
export function changeableAt(path: string, roots: string[]): string | null {
  if (roots.length === 0) return null;
  return lookupDirs(path).find((d) => roots.some((r) => isWithin(d, r))) ?? null;
}
