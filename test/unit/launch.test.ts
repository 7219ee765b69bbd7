// The bundle's launcher (src/cli/launch.ts) runs the bundle only while nothing in src/ or
// package.json is newer than the bundle's stamp; otherwise the source, so an edit never runs stale
// code. These build the real bundle into a fake install tree whose src/cli/main.ts only says
// 'from source', and set file times explicitly.
import { afterAll, beforeAll, expect, test } from 'bun:test';
import { cp, mkdir, mkdtemp, realpath, rm, stat, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { bundle } from '../../src/build.ts';

let base: string;
let built: string;

beforeAll(async () => {
  base = await realpath(await mkdtemp(join(tmpdir(), 'conch-launch-')));
  built = join(base, 'built');
  await bundle(built);
}, 60_000);
afterAll(async () => {
  await rm(base, { recursive: true, force: true });
});

/** A tree built a minute ago: package.json, src/ (older still) and the bundle with its stamp. */
async function tree(name: string): Promise<{ root: string; dist: string; stamp: number }> {
  const root = join(base, name);
  const dist = join(root, 'node_modules', '.cache', 'conch', 'dist');
  await mkdir(join(root, 'src', 'cli'), { recursive: true });
  await mkdir(join(root, 'src', 'tools', 'kernel'), { recursive: true });
  await writeFile(join(root, 'package.json'), JSON.stringify({ name: 'conch', version: '0.1.0' }));
  await writeFile(join(root, 'src', 'cli', 'main.ts'), "console.log('from source');\n");
  await writeFile(join(root, 'src', 'tools', 'kernel', 'bash.ts'), 'export {};\n');
  await cp(built, dist, { recursive: true });
  const stamp = Date.now() - 60_000;
  const older = new Date(stamp - 60_000);
  for (const path of ['package.json', 'src', 'src/cli', 'src/cli/main.ts', 'src/tools', 'src/tools/kernel', 'src/tools/kernel/bash.ts']) {
    await utimes(join(root, path), older, older);
  }
  await utimes(join(dist, 'BUILT'), new Date(stamp), new Date(stamp));
  return { root, dist, stamp };
}

async function launch(dist: string, ...args: string[]): Promise<string> {
  const proc = Bun.spawn([process.execPath, '--no-install', join(dist, 'launch.js'), ...args], { stdin: 'ignore', stdout: 'pipe', stderr: 'pipe' });
  const [stdout, stderr, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
  if (code !== 0) throw new Error(`launch.js exited ${code}: ${stderr}`);
  return stdout;
}

test('with nothing newer than the stamp, the bundle runs (and answers --version itself)', async () => {
  const { dist } = await tree('fresh');
  expect(await launch(dist, '--help')).toContain('Usage:');
  expect(await launch(dist, '--version')).toBe('conch 0.1.0\n');
});

test('a source file edited in place after the build runs the source', async () => {
  const { root, dist, stamp } = await tree('edited');
  // An in-place save changes the file's time, not its folder's.
  const later = new Date(stamp + 1000);
  await utimes(join(root, 'src', 'tools', 'kernel', 'bash.ts'), later, later);
  expect(await launch(dist, '--help')).toBe('from source\n');
  expect(await launch(dist, '--version')).toBe('from source\n');
});

test('a file added or removed (its folder changed) or a changed package.json runs the source', async () => {
  const added = await tree('added');
  await writeFile(join(added.root, 'src', 'tools', 'new.ts'), 'export {};\n');
  expect(await launch(added.dist, '--help')).toBe('from source\n');

  const manifest = await tree('manifest');
  const later = new Date(manifest.stamp + 1000);
  await utimes(join(manifest.root, 'package.json'), later, later);
  expect(await launch(manifest.dist, '--version')).toBe('from source\n');
});

test('without the stamp (a build that did not finish), the source runs', async () => {
  const { dist } = await tree('unstamped');
  await rm(join(dist, 'BUILT'));
  expect(await launch(dist, '--help')).toBe('from source\n');
});

test("the build's stamp is the time it started, so a file saved during the build counts as newer", async () => {
  const before = Date.now();
  const dist = join(base, 'restamped');
  await bundle(dist);
  const stamp = (await stat(join(dist, 'BUILT'))).mtimeMs;
  expect(stamp).toBeGreaterThanOrEqual(before - 1000);
  expect(stamp).toBeLessThanOrEqual(before + 1000);
}, 60_000);
