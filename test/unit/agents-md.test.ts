// The workspace's AGENTS.md goes into the system prompt after the read policy approved it. What is
// read must be the file that was checked: the swap (a link to a denied file, a FIFO, a directory on
// the way replaced by a link) is made deterministic by running it right after the real check.
import { afterEach, beforeEach, expect, test } from 'bun:test';
import { mkdir, mkdtemp, realpath, rename, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadGuidance } from '../../src/agent/prompt.ts';
import { Workspace } from '../../src/workspace/paths.ts';

let base: string;
let ws: string;
let config: string;

beforeEach(async () => {
  base = await realpath(await mkdtemp(join(tmpdir(), 'conch-agents-md-')));
  ws = join(base, 'ws');
  config = join(base, 'config');
  await mkdir(ws);
  await mkdir(config);
  await writeFile(join(base, 'secret.env'), 'hunter2\n');
  await writeFile(join(base, 'notes.md'), 'my private notes\n');
  await writeFile(join(ws, 'AGENTS.md'), 'Use tabs.\n');
});
afterEach(() => rm(base, { recursive: true, force: true }));

/** The workspace's guidance under a policy confined to the workspace, with `swap` run after the check. */
async function guidance(swap: () => Promise<void> = async () => {}) {
  const workspace = await Workspace.open({ root: ws, unrestricted: false, readRoots: [ws] });
  const found = await loadGuidance(config, ws, async (path) => {
    const approved = await workspace.resolve(path, 'read');
    await swap();
    return approved;
  });
  return found.map((g) => g.text).join('\n');
}

async function replace(make: (tmp: string) => Promise<unknown>) {
  const tmp = join(ws, 'swap.tmp');
  await make(tmp);
  await rename(tmp, join(ws, 'AGENTS.md'));
}

test('unswapped, it is read', async () => {
  expect(await guidance()).toBe('Use tabs.\n');
});

test('swapped for a link to a file the policy denies after the check: not read', async () => {
  expect(await guidance(() => replace((tmp) => symlink(join(base, 'secret.env'), tmp)))).not.toContain('hunter2');
});

test('swapped for a FIFO after the check: no hang, not read', async () => {
  const text = await guidance(() => replace((tmp) => Bun.spawn(['mkfifo', tmp]).exited));
  expect(text).toBe('');
});

test('a link inside the workspace is followed; one out of it is not, even to a file the policy would let read open', async () => {
  await writeFile(join(ws, 'CLAUDE.md'), 'Answer briefly.\n');
  await rm(join(ws, 'AGENTS.md'));
  await symlink('CLAUDE.md', join(ws, 'AGENTS.md'));
  expect(await guidance()).toBe('Answer briefly.\n');
  await rm(join(ws, 'AGENTS.md'));
  await symlink(join(base, 'notes.md'), join(ws, 'AGENTS.md'));
  const workspace = await Workspace.open({ root: ws, unrestricted: false });
  const found = await loadGuidance(config, ws, (path) => workspace.resolve(path, 'read'));
  expect(found).toEqual([]);
});
