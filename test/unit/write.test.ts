import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { chmod, chown, link, mkdir, mkdtemp, open, readdir, readFile, realpath, rm, stat, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { PolicyError } from '../../src/core/errors.ts';
import { WRITE_DIFF_MAX_BYTES } from '../../src/files/commit.ts';
import type { FileToolDeps } from '../../src/files/deps.ts';
import { TEMP_MARKER, writeFileAtomic } from '../../src/workspace/atomic.ts';
import { fileTools, sha } from '../support/file-tools.ts';

let base: string;

beforeAll(async () => {
  base = await realpath(await mkdtemp(join(tmpdir(), 'conch-write-')));
});
afterAll(async () => {
  await rm(base, { recursive: true, force: true });
});

/** A fresh workspace per test, with read and write tools sharing one revision tracker. */
async function setup(over: Partial<FileToolDeps> = {}) {
  const root = await mkdtemp(join(base, 'ws-'));
  const { deps, run, read, write } = await fileTools(root, over);
  return {
    root,
    deps,
    read: (args: Record<string, unknown>) => run(read, args),
    write: (args: Record<string, unknown>) => run(write, args),
    at: (rel: string) => join(root, rel),
  };
}

const leftovers = async (dir: string) => (await readdir(dir)).filter((n) => n.includes(TEMP_MARKER));

describe('create and replace', () => {
  test('creates a file and its missing parent directories, with details for hosts', async () => {
    const { write, at } = await setup();
    const r = await write({ path: 'a/b/c.txt', content: 'hello\nworld\n' });
    expect(r.isError).toBeUndefined();
    expect(await readFile(at('a/b/c.txt'), 'utf8')).toBe('hello\nworld\n');
    expect(r.text).toBe(`Created a/b/c.txt: 2 lines, 12 B; revision ${sha('hello\nworld\n')}.`);
    expect(r.details).toMatchObject({ path: at('a/b/c.txt'), oldText: null, newText: 'hello\nworld\n', revision: sha('hello\nworld\n') });
    expect(r.details?.diff).toBe('--- /dev/null\n+++ b/a/b/c.txt\n@@ -0,0 +1,2 @@\n+hello\n+world');
  });

  test('replacing a file needs a read of it in this run', async () => {
    const { write, read, at } = await setup();
    await writeFile(at('f.txt'), 'old\n');
    const refused = await write({ path: 'f.txt', content: 'new\n' });
    expect(refused.isError).toBe(true);
    expect(refused.text).toContain('f.txt already exists and has not been read in this session; read it first');
    expect(await readFile(at('f.txt'), 'utf8')).toBe('old\n');

    await read({ path: 'f.txt' });
    const r = await write({ path: 'f.txt', content: 'new\n' });
    expect(r.isError).toBeUndefined();
    expect(r.text).toStartWith('Replaced f.txt: 1 line, 4 B (+1 -1 lines)');
    expect(r.details).toMatchObject({ oldText: 'old\n', newText: 'new\n', diff: '--- a/f.txt\n+++ b/f.txt\n@@ -1,1 +1,1 @@\n-old\n+new' });
    // conch wrote it, so it may write it again without another read.
    expect((await write({ path: 'f.txt', content: 'newer\n' })).isError).toBeUndefined();
    expect(await readFile(at('f.txt'), 'utf8')).toBe('newer\n');
  });

  test('a matching expected_revision replaces without a read; a stale one is refused with the current revision', async () => {
    const { write, at } = await setup();
    await writeFile(at('f.txt'), 'v1\n');
    const stale = await write({ path: 'f.txt', content: 'x', expected_revision: sha('v0\n') });
    expect(stale.isError).toBe(true);
    expect(stale.text).toContain(`its current revision is ${sha('v1\n')}`);
    expect(await readFile(at('f.txt'), 'utf8')).toBe('v1\n');
    expect((await write({ path: 'f.txt', content: 'v2\n', expected_revision: sha('v1\n') })).isError).toBeUndefined();
    expect(await readFile(at('f.txt'), 'utf8')).toBe('v2\n');
  });

  test('a file changed on disk since conch read it is not clobbered', async () => {
    const { write, read, at } = await setup();
    await writeFile(at('f.txt'), 'mine\n');
    await read({ path: 'f.txt' });
    await writeFile(at('f.txt'), 'someone else\n');
    const r = await write({ path: 'f.txt', content: 'model\n' });
    expect(r.isError).toBe(true);
    expect(r.text).toContain(`changed on disk since it was last read or written in this session (current revision ${sha('someone else\n')})`);
    expect(await readFile(at('f.txt'), 'utf8')).toBe('someone else\n');
  });

  test('expected_revision: null creates only when absent; a revision for a missing file is refused', async () => {
    const { write, at } = await setup();
    expect((await write({ path: 'new.txt', content: '1', expected_revision: null })).isError).toBeUndefined();
    const again = await write({ path: 'new.txt', content: '2', expected_revision: null });
    expect(again.isError).toBe(true);
    expect(again.text).toContain('new.txt already exists, and expected_revision: null only creates new files');
    expect(await readFile(at('new.txt'), 'utf8')).toBe('1');
    const missing = await write({ path: 'missing.txt', content: 'x', expected_revision: sha('x') });
    expect(missing.isError).toBe(true);
    expect(missing.text).toContain('missing.txt does not exist');
  });

  test('writing through a link inside the workspace updates the target and keeps the link', async () => {
    const { write, at } = await setup();
    await writeFile(at('real.txt'), 'r\n');
    await symlink(at('real.txt'), at('alias.txt'));
    const r = await write({ path: 'alias.txt', content: 'via link\n', expected_revision: sha('r\n') });
    expect(r.details?.path).toBe(at('real.txt'));
    expect(await readFile(at('real.txt'), 'utf8')).toBe('via link\n');
    expect((await stat(at('alias.txt'))).isFile()).toBe(true);
  });

  test('a directory is not a write target', async () => {
    const { write, at } = await setup();
    await mkdir(at('d'));
    const r = await write({ path: 'd', content: 'x' });
    expect(r.isError).toBe(true);
    expect(r.text).toContain('d is a directory');
  });

  test('a file where a directory should be is reported', async () => {
    const { write, at } = await setup();
    await writeFile(at('plain'), 'x');
    const r = await write({ path: 'plain/deeper/child.txt', content: 'x' });
    expect(r.isError).toBe(true);
    expect(r.text).toBe('Cannot create plain/deeper/child.txt: plain is a file, not a directory.');
  });
});

describe('create-if-absent races', () => {
  test('a file appearing between the check and the create is not overwritten', async () => {
    const { write, at, root } = await setup({
      beforeRename: async () => {
        await writeFile(join(root, 'race.txt'), 'the other writer\n');
      },
    });
    const r = await write({ path: 'race.txt', content: 'conch\n', expected_revision: null });
    expect(r.isError).toBe(true);
    expect(r.text).toContain('race.txt already exists (it appeared while conch was creating it); nothing was written');
    expect(await readFile(at('race.txt'), 'utf8')).toBe('the other writer\n');
    expect(await leftovers(root)).toEqual([]);
  });

  test('of many concurrent creates exactly one wins', async () => {
    const { write, at, root } = await setup();
    const results = await Promise.all(Array.from({ length: 8 }, (_, i) => write({ path: 'once.txt', content: `writer ${i}\n`, expected_revision: null })));
    const winners = results.filter((r) => !r.isError);
    expect(winners.length).toBe(1);
    const content = await readFile(at('once.txt'), 'utf8');
    expect(winners[0]!.text).toContain(sha(content));
    expect(await leftovers(root)).toEqual([]);
  });
});

describe('atomicity and permissions', () => {
  test('a failure between temp write and rename leaves the original intact and no temp file', async () => {
    const original = Buffer.from([0, 1, 2, 0xff, 0x0a, 0x41]);
    const { write, at, root } = await setup({
      beforeRename: async (temp) => {
        expect((await readFile(temp)).toString()).toBe('replacement');
        expect((await stat(temp)).mode & 0o777).toBe(0o640);
        throw new Error('injected failure before rename');
      },
    });
    await writeFile(at('keep.bin'), original);
    await chmod(at('keep.bin'), 0o640);
    const error = await write({ path: 'keep.bin', content: 'replacement', expected_revision: sha(original) }).catch((e) => e);
    expect(error).toBeInstanceOf(Error);
    expect(error.message).toBe('injected failure before rename');
    expect(Buffer.compare(await readFile(at('keep.bin')), original)).toBe(0);
    expect(await leftovers(root)).toEqual([]);
  });

  test('permissions of the original are kept; new files get 0666 minus the umask', async () => {
    const { write, at } = await setup();
    await writeFile(at('run.sh'), '#!/bin/sh\n');
    await chmod(at('run.sh'), 0o751);
    await write({ path: 'run.sh', content: '#!/bin/sh\necho hi\n', expected_revision: sha('#!/bin/sh\n') });
    expect((await stat(at('run.sh'))).mode & 0o7777).toBe(0o751);
    await write({ path: 'fresh.txt', content: 'x' });
    expect((await stat(at('fresh.txt'))).mode & 0o777).toBe(0o666 & ~process.umask());
  });

  test("a file conch's user may not write (read-only, or another user's) is refused by write and edit, not renamed over", async () => {
    // The directory is writable, so a rename would replace the file; a shell's `>` would fail instead.
    const { root, at } = await setup();
    const asRoot = process.getuid?.() === 0;
    await chmod(base, 0o755);
    await chmod(root, 0o777);
    await writeFile(at('ro.txt'), 'read-only\n');
    await chmod(at('ro.txt'), 0o444);
    if (asRoot) {
      // root writes anything: the tools run as nobody, who owns ro.txt, and theirs.txt stays root's.
      await chown(at('ro.txt'), 65534, 65534);
      await writeFile(at('theirs.txt'), 'theirs\n');
      await chmod(at('theirs.txt'), 0o644);
    }
    const names = asRoot ? ['ro.txt', 'theirs.txt'] : ['ro.txt'];
    const script = join(root, '..', `${basename(root)}-check.ts`);
    await writeFile(script, unwritableScript(root, names));
    await chmod(script, 0o644);
    const argv = asRoot ? ['setpriv', '--reuid=65534', '--regid=65534', '--clear-groups', process.execPath, script] : [process.execPath, script];
    const child = Bun.spawnSync(argv, { stderr: 'pipe' });
    expect(child.stderr.toString()).toBe('');
    const results = JSON.parse(child.stdout.toString()) as { name: string; tool: string; isError?: boolean; text: string }[];
    expect(results).toHaveLength(names.length * 2);
    for (const r of results) {
      expect(r).toMatchObject({ isError: true });
      expect(r.text).toContain(`Permission denied: cannot ${r.tool} ${r.name}`);
      expect(r.text).toContain('not writable');
    }
    expect(await readFile(at('ro.txt'), 'utf8')).toBe('read-only\n');
    expect((await stat(at('ro.txt'))).mode & 0o777).toBe(0o444);
    if (asRoot) {
      expect(await readFile(at('theirs.txt'), 'utf8')).toBe('theirs\n');
      expect((await stat(at('theirs.txt'))).uid).toBe(0);
    }
    expect(await leftovers(root)).toEqual([]);
  });

  test('a file hard-linked to one outside the workspace is replaced, not written through: the outside name keeps its content', async () => {
    // Writing through would change a file outside the workspace; a user who linked on purpose keeps both names' history.
    const { write, read, at } = await setup();
    const outside = await mkdtemp(join(base, 'outside-'));
    await writeFile(join(outside, 'shared.txt'), 'outside\n');
    await link(join(outside, 'shared.txt'), at('shared.txt'));
    await read({ path: 'shared.txt' });
    expect((await write({ path: 'shared.txt', content: 'inside\n' })).isError).toBeUndefined();
    expect(await readFile(at('shared.txt'), 'utf8')).toBe('inside\n');
    expect(await readFile(join(outside, 'shared.txt'), 'utf8')).toBe('outside\n');
    expect((await stat(join(outside, 'shared.txt'))).nlink).toBe(1);
  });

  test('writeFileAtomic removes its temp file when the rename fails', async () => {
    const { root } = await setup();
    await mkdir(join(root, 'target-is-dir', 'child'), { recursive: true });
    const error = await writeFileAtomic(join(root, 'target-is-dir'), Buffer.from('x')).catch((e) => e);
    expect(['EISDIR', 'ENOTEMPTY', 'EEXIST']).toContain(error.code);
    expect(await leftovers(root)).toEqual([]);
  });

  test('a very large file is replaced without loading it; the host gets no diff', async () => {
    const { write, read, at } = await setup();
    const fh = await open(at('huge.dat'), 'w');
    await fh.truncate(WRITE_DIFF_MAX_BYTES + 1); // sparse: NUL bytes, so read reports it binary
    await fh.close();
    expect((await read({ path: 'huge.dat' })).text).toContain('huge.dat is binary');
    const r = await write({ path: 'huge.dat', content: 'small now\n' });
    expect(r.isError).toBeUndefined();
    expect(r.details).toMatchObject({ oldText: null, diff: '' });
    expect(await readFile(at('huge.dat'), 'utf8')).toBe('small now\n');
  });

  test('a CRLF file replaced with LF content gets a note', async () => {
    const { write, at } = await setup();
    await writeFile(at('w.txt'), 'a\r\nb\r\n');
    const r = await write({ path: 'w.txt', content: 'a\nb\n', expected_revision: sha('a\r\nb\r\n') });
    expect(r.text).toContain('the previous content used CRLF line endings; the new content uses LF');
  });
});

describe('policy', () => {
  test('.env.local and .git are refused with a PolicyError', async () => {
    const { write, at } = await setup();
    for (const path of ['.env.local', '.env', '.git/config']) {
      const error = await write({ path, content: 'x' }).catch((e) => e);
      expect(error).toBeInstanceOf(PolicyError);
      expect(error.rule).toBe('workspace.protected');
    }
    await expect(stat(at('.env.local'))).rejects.toThrow();
  });

  test('outside paths and symlinked parents are refused', async () => {
    const { write, at, root } = await setup();
    const outside = await mkdtemp(join(base, 'outside-'));
    await symlink(outside, at('escape'));
    for (const path of ['../x.txt', join(outside, 'x.txt'), 'escape/x.txt']) {
      const error = await write({ path, content: 'x' }).catch((e) => e);
      expect(error).toBeInstanceOf(PolicyError);
      expect(error.rule).toBe('workspace.outside');
      expect(error.message).toContain('--unrestricted');
    }
    expect(await readdir(outside)).toEqual([]);
    expect(await readdir(join(root, '..')).then((n) => n.includes('x.txt'))).toBe(false);
  });
});

/** Reads, then tries write and edit on each of `names` in `root`, printing the results as JSON. */
function unwritableScript(root: string, names: string[]): string {
  const support = join(import.meta.dir, '..', 'support', 'file-tools.ts');
  return `
    import { fileTools } from ${JSON.stringify(support)};
    const t = await fileTools(${JSON.stringify(root)});
    const out = [];
    for (const name of ${JSON.stringify(names)}) {
      await t.run(t.read, { path: name });
      const w = await t.run(t.write, { path: name, content: 'replaced\\n' });
      out.push({ name, tool: 'write', isError: w.isError, text: w.text });
      const e = await t.run(t.edit, { path: name, edits: [{ old_text: name === 'ro.txt' ? 'read-only' : 'theirs', new_text: 'edited' }] });
      out.push({ name, tool: 'edit', isError: e.isError, text: e.text });
    }
    console.log(JSON.stringify(out));
  `;
}
