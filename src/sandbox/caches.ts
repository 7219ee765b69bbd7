// The toolchain cache a sandboxed command may write (sandbox-profiles/caches.json, data): one
// directory per user, kept across runs, outside any workspace, with the toolchains' standard
// variables pointing into it. Made on first use, mode 0700, and checked to be this user's own
// directory (not a link someone planted), since the sandbox mounts it writable.
import { lstatSync, mkdirSync, readFileSync, unlinkSync } from 'node:fs';
import { isAbsolute, join } from 'node:path';
import { PROFILES_DIR, SandboxProfileError } from './profiles.ts';
import { mkdirFailure } from '../core/errors.ts';

export const CACHES_FILE = join(PROFILES_DIR, 'caches.json');

let variables: Record<string, string> | null = null;

/** Variable → subdirectory, from caches.json (validated once per process). */
export function cacheVariables(): Record<string, string> {
  if (variables) return variables;
  let value: { env?: unknown };
  try {
    value = JSON.parse(readFileSync(CACHES_FILE, 'utf8'));
  } catch (error) {
    throw new SandboxProfileError(`cannot read ${CACHES_FILE}: ${(error as Error).message}; restore it from the conch distribution.`);
  }
  const env = value.env as Record<string, unknown> | undefined;
  const ok =
    env !== undefined &&
    typeof env === 'object' &&
    Object.entries(env).every(([k, v]) => /^[A-Za-z_][A-Za-z0-9_]*$/.test(k) && typeof v === 'string' && /^[A-Za-z0-9._-]+(\/[A-Za-z0-9._-]+)*$/.test(v) && !v.split('/').includes('..'));
  if (!ok) throw new SandboxProfileError(`${CACHES_FILE} is malformed: expected { "env": { "VARIABLE": "sub/dir", … } }; restore it from the conch distribution.`);
  return (variables = env as Record<string, string>);
}

const ready = new Map<string, Record<string, string>>();

/** Make (once per process) and check the cache directory and its subdirectories; returns the variables. */
export function prepareCache(dir: string): Record<string, string> {
  if (!isAbsolute(dir)) throw new SandboxProfileError(`the sandbox cache directory "${dir}" must be absolute.`);
  const known = ready.get(dir);
  if (known) return known;
  const vars = cacheVariables();
  {
    try {
      mkdirSync(dir, { recursive: true, mode: 0o700 });
    } catch (error) {
      throw new SandboxProfileError(`cannot create the toolchain cache for shell commands, ${dir} (${mkdirFailure(error)}): set XDG_CACHE_HOME to a directory you can write.`);
    }
    const info = lstatSync(dir);
    const uid = process.getuid?.() ?? info.uid;
    if (!info.isDirectory() || info.uid !== uid) {
      throw new SandboxProfileError(`the sandbox cache ${dir} is not a directory of your own; remove it (conch makes it again).`);
    }
    for (const sub of new Set(Object.values(vars))) makeInside(dir, sub);
  }
  const env = Object.freeze(Object.fromEntries(Object.entries(vars).map(([name, sub]) => [name, join(dir, sub)])));
  ready.set(dir, env);
  return env;
}

/**
 * `sub` (a/b/c) made under `dir` one folder at a time, never through a link: commands write the
 * cache, so one could leave a link where a folder was, and conch, unsandboxed, would make the rest
 * of the path wherever it leads. What is there instead of a folder is not conch's: it goes.
 */
function makeInside(dir: string, sub: string): void {
  let path = dir;
  for (const name of sub.split('/')) {
    path = join(path, name);
    const info = lstatSync(path, { throwIfNoEntry: false });
    if (info?.isDirectory()) continue;
    try {
      if (info) unlinkSync(path);
      mkdirSync(path, { mode: 0o700 });
    } catch (error) {
      // Another conch starting at the same moment made it first.
      if ((error as NodeJS.ErrnoException).code === 'EEXIST' && lstatSync(path).isDirectory()) continue;
      throw new SandboxProfileError(`cannot make the toolchain cache folder ${path} (${mkdirFailure(error)}): remove it (conch makes it again).`);
    }
  }
}
