import { afterEach, beforeEach, describe, expect, test } from 'bun:test';
import { mkdir, mkdtemp, readdir, readFile, realpath, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FilesNotWritten, writeFilesAtomic, type FileChange } from '../../src/workspace/atomic-set.ts';
import { revisionOf } from '../../src/workspace/revision.ts';

let dir: string;
beforeEach(async () => {
  dir = await realpath(await mkdtemp(join(tmpdir(), 'conch-atomic-set-')));
  await mkdir(join(dir, 'sub'));
  for (const [name, text] of [['a.md', 'A'], ['b.md', 'B'], ['sub/c.md', 'C'], ['gone.md', 'G']] as const) await writeFile(join(dir, name), text);
});
afterEach(() => rm(dir, { recursive: true, force: true }));

/** Every file under dir with its text. */
async function files(): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  for (const entry of await readdir(dir, { recursive: true, withFileTypes: true })) {
    if (entry.isFile()) out[join(entry.parentPath, entry.name).slice(dir.length + 1)] = await readFile(join(entry.parentPath, entry.name), 'utf8');
  }
  return out;
}

const change = (name: string, data: string | null, was: string | null): FileChange => ({
  path: join(dir, name),
  data: data === null ? null : Buffer.from(data),
  expectedRevision: was === null ? null : revisionOf(was),
});

const ALL = () => [change('a.md', 'A2', 'A'), change('b.md', 'B2', 'B'), change('sub/c.md', 'C2', 'C'), change('new/d.md', 'D', null), change('gone.md', null, 'G')];

describe('writeFilesAtomic', () => {
  test('replaces, creates (folders too) and removes, and leaves nothing else behind', async () => {
    const mode = (await stat(join(dir, 'a.md'))).mode;
    await writeFilesAtomic(ALL());
    expect(await files()).toEqual({ 'a.md': 'A2', 'b.md': 'B2', 'sub/c.md': 'C2', 'new/d.md': 'D' });
    expect((await stat(join(dir, 'a.md'))).mode).toBe(mode);
  });

  test('a failure midway (the third target turned into a folder after two were replaced) puts every file back', async () => {
    const before = await files();
    const seen: number[] = [];
    const error = await writeFilesAtomic(ALL(), {
      beforeReplace: async (path, index) => {
        seen.push(index);
        if (index !== 2) return;
        // Checked already, so only the replacement itself can fail: a folder where the file was.
        await rm(path);
        await mkdir(path);
        await writeFile(join(path, 'inside'), 'x');
      },
    }).catch((e) => e);
    expect(error).toBeInstanceOf(FilesNotWritten);
    expect(error).toMatchObject({ path: join(dir, 'sub/c.md'), unrestored: [] });
    expect(seen).toEqual([0, 1, 2]);
    // a.md and b.md were replaced, then restored; the folder made for new/d.md is gone too.
    const { 'sub/c.md': _c, ...others } = before;
    expect(await files()).toEqual({ ...others, 'sub/c.md/inside': 'x' });
  });

  test('a target not at its expected revision, or a file to create that exists, changes nothing', async () => {
    const before = await files();
    const stale = await writeFilesAtomic([change('a.md', 'A2', 'A'), change('b.md', 'B2', 'not B')]).catch((e) => e);
    expect(stale).toMatchObject({ code: 'changed', path: join(dir, 'b.md') });
    const exists = await writeFilesAtomic([change('a.md', 'A2', 'A'), change('gone.md', 'x', null)]).catch((e) => e);
    expect(exists).toMatchObject({ code: 'exists', path: join(dir, 'gone.md') });
    expect(await files()).toEqual(before);
  });
});
