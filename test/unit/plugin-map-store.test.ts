// The map's index: built once, then updated by mtime+size and hash; stored outside the workspace.
import { afterEach, beforeEach, expect, test } from 'bun:test';
import { readdirSync } from 'node:fs';
import { mkdtemp, mkdir, realpath, rm, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { forgetMemory, indexFile, updateIndex } from '../../plugins/map/store.ts';

let base: string;
let root: string;
let env: Record<string, string>;
const all = async () => true;

beforeEach(async () => {
  base = await realpath(await mkdtemp(join(tmpdir(), 'conch-map-')));
  root = join(base, 'repo');
  env = { XDG_CACHE_HOME: join(base, 'cache') };
  await mkdir(join(root, 'src'), { recursive: true });
  await writeFile(join(root, 'src/a.ts'), 'export function alpha() {}\n');
  await writeFile(join(root, 'src/b.py'), 'def beta():\n    pass\n');
  await writeFile(join(root, 'notes.txt'), 'hello\n');
  forgetMemory();
});
afterEach(() => rm(base, { recursive: true, force: true }));

test('first use parses every source file; an unchanged tree is taken from the stored index without reading a file', async () => {
  const first = await updateIndex(root, all, { env });
  expect(first.stats).toEqual({ files: 3, hashed: 3, parsed: 2, removed: 0 });
  expect(first.index.files['src/a.ts']!.symbols!.map((s) => s.name)).toEqual(['alpha']);
  expect(readdirSync(root, { recursive: true }).map(String).sort()).toEqual(['notes.txt', 'src', 'src/a.ts', 'src/b.py']);
  expect(indexFile(root, env)!.startsWith(join(base, 'cache', 'conch', 'map'))).toBe(true);
  forgetMemory(); // a new process: only the stored file is left
  const again = await updateIndex(root, all, { env });
  expect(again.stats).toEqual({ files: 3, hashed: 0, parsed: 0, removed: 0 });
  expect(again.index.files['src/b.py']!.symbols!.map((s) => s.name)).toEqual(['beta']);
});

test('a touched file is hashed; only a changed hash is parsed again; a removed file leaves the index', async () => {
  await updateIndex(root, all, { env });
  const later = new Date(Date.now() + 60_000);
  await utimes(join(root, 'src/a.ts'), later, later);
  expect((await updateIndex(root, all, { env })).stats).toEqual({ files: 3, hashed: 1, parsed: 0, removed: 0 });
  await writeFile(join(root, 'src/a.ts'), 'export function gamma() {}\n');
  await rm(join(root, 'notes.txt'));
  const edited = await updateIndex(root, all, { env });
  expect(edited.stats).toEqual({ files: 2, hashed: 1, parsed: 1, removed: 1 });
  expect(edited.index.files['src/a.ts']!.symbols!.map((s) => s.name)).toEqual(['gamma']);
});

test('files the read policy refuses are not indexed; a cache folder inside the workspace is never written', async () => {
  const inside = { XDG_CACHE_HOME: join(root, '.cache') };
  expect(indexFile(root, inside)).toBeNull();
  const { index } = await updateIndex(root, async (p) => p !== 'src/b.py', { env: inside });
  expect(Object.keys(index.files).sort()).toEqual(['notes.txt', 'src/a.ts']);
  expect(readdirSync(root)).not.toContain('.cache');
});
