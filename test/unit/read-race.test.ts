// The read tool's check-then-open race: the policy approves a canonical path, then something swaps a
// directory on that path (or the file itself) for a symbolic link to a denied file before the open.
// The swap is made deterministic by running it right after the real policy check returns.
import { afterEach, beforeEach, expect, test } from 'bun:test';
import { mkdir, mkdtemp, realpath, rename, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileTools } from '../support/file-tools.ts';

let root: string;

beforeEach(async () => {
  root = await realpath(await mkdtemp(join(tmpdir(), 'conch-read-race-')));
  await mkdir(join(root, 'docs'));
  await writeFile(join(root, 'docs', 'a.txt'), 'public text\n');
  await mkdir(join(root, 'private'));
  await writeFile(join(root, 'private', 'a.txt'), 'TOP SECRET\n');
});
afterEach(() => rm(root, { recursive: true, force: true }));

/** The read tool over a workspace that denies private/, with `swap` run after each policy check. */
async function racedRead(swap: () => Promise<void>) {
  const { workspace, run, read } = await fileTools(root, {}, { readDeny: ['private/**'] });
  const check = workspace.resolve.bind(workspace);
  workspace.resolve = async (path, mode) => {
    const approved = await check(path, mode);
    await swap();
    return approved;
  };
  return (path: string) => run(read, { path });
}

test('a directory on the checked path swapped for a link to a denied folder: nothing of the denied file is read', async () => {
  const read = await racedRead(async () => {
    await rename(join(root, 'docs'), join(root, 'docs.old'));
    await symlink(join(root, 'private'), join(root, 'docs'));
  });
  const r = await read('docs/a.txt');
  expect(r.text).not.toContain('TOP SECRET');
  expect(r.isError).toBe(true);
  expect(r.text).toContain('Nothing was read from docs/a.txt: it was replaced between the policy check and its opening');
});

test('the file itself swapped for a link to a denied file: nothing of it is read', async () => {
  const read = await racedRead(async () => {
    await rm(join(root, 'docs', 'a.txt'));
    await symlink(join(root, 'private', 'a.txt'), join(root, 'docs', 'a.txt'));
  });
  const r = await read('docs/a.txt');
  expect(r.text).not.toContain('TOP SECRET');
  expect(r.text).toContain('Nothing was read from docs/a.txt');
});

test('without a swap the same path reads, and links inside the workspace still lead where they point', async () => {
  await symlink('docs', join(root, 'shortcut'));
  await symlink('docs/a.txt', join(root, 'alias.txt'));
  const read = await racedRead(async () => {});
  for (const path of ['docs/a.txt', 'shortcut/a.txt', 'alias.txt']) {
    const r = await read(path);
    expect(r.isError).toBeUndefined();
    expect(r.text).toContain('1\tpublic text');
  }
  await expect(read('private/a.txt')).rejects.toThrow("matches the read deny glob 'private/**'");
});
