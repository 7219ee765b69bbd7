// Where conch's own files (plugins/, sandbox-profiles/) live. Found by walking up to conch's
// package.json rather than fixed relative to this file, because the bundled build (src/build.ts)
// runs from node_modules/.cache/conch/dist.
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';

function findRoot(start: string): string {
  for (let dir = start; ; dir = dirname(dir)) {
    const manifest = join(dir, 'package.json');
    if (existsSync(manifest)) {
      try {
        if ((JSON.parse(readFileSync(manifest, 'utf8')) as { name?: string }).name === 'conch') return dir;
      } catch {
        // not ours; keep walking
      }
    }
    if (dirname(dir) === dir) throw new Error(`conch's package.json not found above ${start}`);
  }
}

export const PACKAGE_ROOT = findRoot(import.meta.dir);
