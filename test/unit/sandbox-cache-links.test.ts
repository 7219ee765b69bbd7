// The toolchain cache is writable from commands: a link one left where a cache folder was must not
// make conch (unsandboxed, at its next start) create folders wherever the link leads.
import { afterEach, beforeEach, expect, test } from 'bun:test';
import { lstatSync, mkdirSync, mkdtempSync, readdirSync, realpathSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { cacheVariables, prepareCache } from '../../src/sandbox/caches.ts';

let base: string;
beforeEach(() => {
  base = realpathSync(mkdtempSync(join(tmpdir(), 'conch-cache-links-')));
});
afterEach(() => rmSync(base, { recursive: true, force: true }));

test('a link where a cache folder was is replaced by a folder; nothing is made where it led', () => {
  const cache = join(base, 'cache');
  const target = join(base, 'elsewhere');
  mkdirSync(join(cache, 'go'), { recursive: true });
  mkdirSync(target);
  // GOCACHE is go/build, GOMODCACHE go/mod: a link at go itself, and one at npm.
  rmSync(join(cache, 'go'), { recursive: true });
  symlinkSync(target, join(cache, 'go'));
  symlinkSync(target, join(cache, 'npm'));
  writeFileSync(join(cache, 'pip'), 'not a folder\n');
  const env = prepareCache(cache);
  expect(readdirSync(target)).toEqual([]);
  for (const sub of new Set(Object.values(cacheVariables()))) {
    let path = cache;
    for (const name of sub.split('/')) {
      path = join(path, name);
      expect(lstatSync(path).isDirectory()).toBe(true);
    }
  }
  expect(env.GOCACHE).toBe(join(cache, 'go', 'build'));
});
