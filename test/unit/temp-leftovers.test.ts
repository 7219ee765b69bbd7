// What a writer killed between staging its temporary file and the rename leaves: the next write in
// that folder removes the temporary files of writers that are dead, and leaves a live writer's
// alone; a process that exits mid-write (a second Ctrl-C) removes its own on the way out.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { mkdtemp, readdir, readFile, realpath, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { TEMP_MARKER, writeFileAtomic } from '../../src/workspace/atomic.ts';
import { writeFilesAtomic } from '../../src/workspace/atomic-set.ts';
import { revisionOf } from '../../src/workspace/revision.ts';

let base: string;
beforeAll(async () => {
  base = await realpath(await mkdtemp(join(tmpdir(), 'conch-temp-leftovers-')));
});
afterAll(() => rm(base, { recursive: true, force: true }));

const children: ReturnType<typeof Bun.spawn>[] = [];
afterAll(() => {
  for (const child of children) child.kill('SIGKILL');
});

const leftovers = async (dir: string) => (await readdir(dir)).filter((n) => n.includes(TEMP_MARKER)).sort();

/** A writer stopped just before its rename; resolves with the process and its temporary file's name. */
async function stagedWriter(target: string, mode: 'wait' | 'exit') {
  const child = Bun.spawn([process.execPath, join(import.meta.dir, '../support/staged-writer.ts'), target, mode], { stdout: 'pipe', stderr: 'ignore' });
  children.push(child);
  const reader = child.stdout.getReader();
  let out = '';
  while (!out.includes('\n')) {
    const { value, done } = await reader.read();
    if (done) break;
    out += new TextDecoder().decode(value);
  }
  reader.releaseLock();
  const temp = /^staged (\S+)/.exec(out)?.[1];
  if (!temp) throw new Error(`the writer did not stage: ${out}`);
  return { child, temp };
}

describe.skipIf(process.platform !== 'linux')('temporary files of killed writers', () => {
  test('the next write in the folder removes a SIGKILLed writer\'s temporary file, not a live one\'s', async () => {
    const dir = await mkdtemp(join(base, 'ws-'));
    await writeFile(join(dir, 'a.txt'), 'old a\n');
    const killed = await stagedWriter(join(dir, 'a.txt'), 'wait');
    const live = await stagedWriter(join(dir, 'b.txt'), 'wait');
    killed.child.kill('SIGKILL');
    await killed.child.exited;
    expect(await leftovers(dir)).toEqual([killed.temp, live.temp].sort());

    await writeFileAtomic(join(dir, 'c.txt'), new TextEncoder().encode('c\n'));
    expect(await leftovers(dir)).toEqual([live.temp]);
    // The target the killed writer never replaced is as it was.
    expect(await readFile(join(dir, 'a.txt'), 'utf8')).toBe('old a\n');
    live.child.kill('SIGKILL');
    await live.child.exited;
  }, 30_000);

  test('an edit of several files (writeFilesAtomic) clears them too, in each folder it writes', async () => {
    const dir = await mkdtemp(join(base, 'ws-'));
    await writeFile(join(dir, 'a.txt'), 'old a\n');
    const killed = await stagedWriter(join(dir, 'a.txt'), 'wait');
    killed.child.kill('SIGKILL');
    await killed.child.exited;
    await writeFilesAtomic([{ path: join(dir, 'a.txt'), data: new TextEncoder().encode('new a\n'), expectedRevision: revisionOf(Buffer.from('old a\n')) }]);
    expect(await leftovers(dir)).toEqual([]);
    expect(await readFile(join(dir, 'a.txt'), 'utf8')).toBe('new a\n');
  }, 30_000);

  test('names that only look alike stay: another user file with the marker, a backup of an interrupted edit', async () => {
    const dir = await mkdtemp(join(base, 'ws-'));
    const kept = ['.notes.conch-tmp-mine', '.a.txt.conch-tmp-bak-0a0b1-2-3-0123456789ab'];
    for (const name of kept) await writeFile(join(dir, name), 'keep\n');
    await writeFileAtomic(join(dir, 'c.txt'), new TextEncoder().encode('c\n'));
    expect(await leftovers(dir)).toEqual(kept.sort());
  });

  test('a writer that exits mid-write (a second Ctrl-C) takes its temporary file with it', async () => {
    const dir = await mkdtemp(join(base, 'ws-'));
    await writeFile(join(dir, 'a.txt'), 'old a\n');
    const exiting = await stagedWriter(join(dir, 'a.txt'), 'exit');
    expect(await exiting.child.exited).toBe(130);
    expect(await leftovers(dir)).toEqual([]);
    expect(await readFile(join(dir, 'a.txt'), 'utf8')).toBe('old a\n');
  }, 30_000);
});
