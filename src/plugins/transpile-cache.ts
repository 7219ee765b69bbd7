// Transpiled plugin files on disk, one folder per transform and version (sucrase's and Babel's
// outputs for one file differ, and an entry is only ever read back as the code that transform
// made). An entry is found by the file's path and options, and holds only for the same source:
// its last line names the source's hash, so an edited or half-written entry is no entry.
import { mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import type { TransformRequest } from './babel.ts';

function sha256(text: string): string {
  return new Bun.CryptoHasher('sha256').update(text).digest('hex');
}

function trailer(source: string): string {
  return `\n/* conch ${sha256(source)} */`;
}

function entryPath(folder: string, req: TransformRequest): string {
  const options = `${req.filename}\0${req.ts ? 'ts' : ''}\0${req.async ? 'async' : ''}\0${req.jsx ? 'jsx' : ''}\0${req.interopDefault ? 'interop' : ''}`;
  const name = basename(req.filename).replace(/[^\w.-]/g, '_').slice(0, 60);
  return join(folder, `${name}.${sha256(options).slice(0, 16)}.js`);
}

/** The cached code for `req` in `folder`, or null. */
export function readCached(folder: string, req: TransformRequest): string | null {
  try {
    const text = readFileSync(entryPath(folder, req), 'utf8');
    const end = trailer(req.source);
    return text.endsWith(end) ? text.slice(0, -end.length) : null;
  } catch {
    return null;
  }
}

/** Keep `code` as `req`'s in `folder`; a cache that cannot be written only costs speed. */
export function writeCached(folder: string, req: TransformRequest, code: string): void {
  const path = entryPath(folder, req);
  const staging = `${path}.${process.pid}`;
  try {
    mkdirSync(folder, { recursive: true, mode: 0o700 });
    writeFileSync(staging, code + trailer(req.source), { mode: 0o600 });
    // Whole or not at all for another conch reading it meanwhile.
    renameSync(staging, path);
  } catch {
    // not cached
  }
}
