// The workspace files a project's MCP servers run: `conch trust` pins them with .mcp.json. A trusted
// .mcp.json that starts `node mcp/server.mjs` (or `./bin/server`) runs whatever the workspace holds
// at the next start, and the model writes the workspace: a command in a --no-network run could
// rewrite the script and have its code run at the next start as the server, with the tokens its
// `env` hands over and its `"network": true`. So each path the server's command and arguments name
// inside the workspace (or leading into it through a link) is hashed when trusted, and a server one of
// whose files is not as trusted is not started. What those files load in turn (imports, a package
// directory given as `.`) is not pinned: README says so.
import { constants } from 'node:fs';
import { lstat, open, realpath } from 'node:fs/promises';
import { isAbsolute, resolve } from 'node:path';
import { isWithin } from '../core/paths.ts';
import { expandVars } from '../core/env-vars.ts';

/** Read into a file's hash at most this much; what lies beyond only counts by the file's size. */
const MAX_HASHED_BYTES = 256 * 1024 * 1024;

/** Absolute path → hash ('' for no such file). */
export type PinnedFiles = Record<string, string>;

/**
 * The paths a project's stdio server names that lie in `workspace`, from its entry as written (flags
 * left out). An argument with a ${VAR} counts as `env` expands it (`${CLAUDE_PROJECT_DIR:-.}/server.js`
 * is a workspace script like any other), and only where that names a file that is there: a value such
 * as a token names none, and so never lands in the trust record. A bare command counts when PATH
 * finds it in the workspace (a PATH with ./node_modules/.bin).
 */
export async function namedPaths(entry: unknown, workspace: string, env: Record<string, string | undefined>): Promise<string[]> {
  if (!entry || typeof entry !== 'object' || Array.isArray(entry)) return [];
  const raw = entry as { command?: unknown; args?: unknown; cwd?: unknown; url?: unknown };
  if (typeof raw.command !== 'string' || raw.url !== undefined) return [];
  const cwd = typeof raw.cwd === 'string' && raw.cwd ? resolve(workspace, raw.cwd) : workspace;
  const candidates: string[] = [];
  if (raw.command.includes('/')) candidates.push(resolve(cwd, raw.command));
  else {
    const found = Bun.which(raw.command, { PATH: env.PATH ?? '', cwd });
    if (found) candidates.push(isAbsolute(found) ? found : resolve(cwd, found));
  }
  /** Args with a ${VAR}, as the run expands them, counted only where they name a file that is there. */
  const expanded: string[] = [];
  for (const arg of Array.isArray(raw.args) ? raw.args : []) {
    if (typeof arg !== 'string' || arg === '' || arg.startsWith('-')) continue;
    if (!arg.includes('${')) candidates.push(resolve(cwd, arg));
    else {
      const value = expandVars(arg, env, new Set());
      if (value !== '' && !value.startsWith('-')) expanded.push(resolve(cwd, value));
    }
  }
  for (const candidate of expanded) if (await exists(candidate)) candidates.push(candidate);
  const inside: string[] = [];
  for (const candidate of candidates) {
    const real = await realpath(candidate).catch(() => null);
    if (isWithin(candidate, workspace) || (real !== null && isWithin(real, workspace))) inside.push(candidate);
  }
  return [...new Set(inside)];
}

/** Each path's hash now: its bytes (through links), 'directory' or 'special' for what is no file, '' when missing. */
export async function hashPaths(paths: string[]): Promise<PinnedFiles> {
  const out: PinnedFiles = {};
  for (const path of paths) out[path] = await hashPath(path);
  return out;
}

async function hashPath(path: string): Promise<string> {
  let fh;
  try {
    // Without blocking: the model may have made it a FIFO, whose open would hang every start.
    fh = await open(path, constants.O_RDONLY | constants.O_NONBLOCK | constants.O_NOCTTY);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ENOTDIR' || code === 'ELOOP') return '';
    return `unreadable:${code ?? 'error'}`;
  }
  try {
    const st = await fh.stat();
    if (st.isDirectory()) return 'directory';
    if (!st.isFile()) return 'special';
    const hasher = new Bun.CryptoHasher('sha256');
    const buffer = Buffer.alloc(1024 * 1024);
    let total = 0;
    while (total < MAX_HASHED_BYTES) {
      const { bytesRead } = await fh.read(buffer, 0, buffer.length, total);
      if (bytesRead === 0) break;
      hasher.update(buffer.subarray(0, bytesRead));
      total += bytesRead;
    }
    return `${hasher.digest('hex')}:${st.size}`;
  } catch {
    return 'unreadable';
  } finally {
    await fh.close();
  }
}

/** The first of `now`'s paths whose hash is not the trusted one (a path never recorded was missing), or null. */
export function changedPath(now: PinnedFiles, trusted: PinnedFiles): string | null {
  return Object.keys(now).find((path) => now[path] !== (trusted[path] ?? '')) ?? null;
}

async function exists(path: string): Promise<boolean> {
  return lstat(path).then(() => true, () => false);
}
