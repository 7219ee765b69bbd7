// How a path is shown to people and to the model: relative inside the directory it is seen from, the
// home directory as ~, anything else absolute (no user name or machine layout where it can be helped).
import { homedir } from 'node:os';
import { relative } from 'node:path';

/** `path` with the home directory written as ~ (never for a home of `/`). */
export function tildePath(path: string): string {
  const home = process.env.HOME || homedir();
  return home && home !== '/' && (path === home || path.startsWith(`${home}/`)) ? `~${path.slice(home.length)}` : path;
}

/** Relative to `cwd` when inside it, else as tildePath shows it. */
export function displayPath(path: string, cwd: string): string {
  const rel = relative(cwd, path);
  if (rel && !rel.startsWith('..') && !rel.startsWith('/')) return rel;
  return tildePath(path);
}
