import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { chmod, mkdtemp, readdir, readFile, realpath, rm, stat, truncate, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PolicyError } from '../../src/core/errors.ts';
import { Catalog } from '../../src/tools/catalog.ts';
import { createEditTool } from '../../src/tools/kernel/edit.ts';
import { createWriteTool } from '../../src/tools/kernel/write.ts';
import { EDIT_MAX_BYTES } from '../../src/files/commit.ts';
import type { FileToolDeps } from '../../src/files/deps.ts';
import { createReadTool } from '../../src/tools/kernel/read.ts';
import { TEMP_MARKER } from '../../src/workspace/atomic.ts';
import { fileTools, sha } from '../support/file-tools.ts';
import { Workspace } from '../../src/workspace/paths.ts';
import { RevisionTracker } from '../../src/workspace/revision.ts';

let base: string;

beforeAll(async () => {
  base = await realpath(await mkdtemp(join(tmpdir(), 'conch-edit-')));
});
afterAll(async () => {
  await rm(base, { recursive: true, force: true });
});

async function setup(over: Partial<FileToolDeps> = {}) {
  const root = await mkdtemp(join(base, 'ws-'));
  const { run, read, edit } = await fileTools(root, over);
  const at = (rel: string) => join(root, rel);
  return {
    root,
    at,
    read: (args: Record<string, unknown>) => run(read, args),
    edit: (path: string, edits: [string, string][], extra: Record<string, unknown> = {}) =>
      run(edit, { path, edits: edits.map(([old_text, new_text]) => ({ old_text, new_text })), ...extra }),
    put: (rel: string, content: string | Uint8Array) => writeFile(at(rel), content),
    get: (rel: string) => readFile(at(rel), 'utf8'),
  };
}

const code = ['function a() {', '    return 1;', '}', '', 'function b() {', '    return 2;', '}', ''].join('\n');

describe('applying edits', () => {
  test('one edit: new content, compact unified diff, new revision, host details', async () => {
    const { edit, put, get, at } = await setup();
    await put('code.ts', code);
    const r = await edit('code.ts', [['return 2;', 'return 20;']]);
    expect(r.isError).toBeUndefined();
    const after = code.replace('return 2;', 'return 20;');
    expect(await get('code.ts')).toBe(after);
    const diff = '--- a/code.ts\n+++ b/code.ts\n@@ -3,5 +3,5 @@\n }\n \n function b() {\n-    return 2;\n+    return 20;\n }';
    expect(r.text).toBe(`Edited code.ts: 1 edit, +1 -1 lines; revision ${sha(after)}.\n${diff}`);
    expect(r.details).toEqual({ path: at('code.ts'), oldText: code, newText: after, revision: sha(after), diff });
  });

  test('several edits apply together, each matched against the original', async () => {
    const { edit, put, get } = await setup();
    await put('code.ts', code);
    // The second old_text only exists before the first edit is applied; both refer to the original.
    const r = await edit('code.ts', [
      ['function a() {', 'function b() {'],
      ['function b() {\n    return 2;', 'function c() {\n    return 3;'],
    ]);
    expect(r.isError).toBeUndefined();
    expect(await get('code.ts')).toBe(code.replace('function a() {', 'function b() {').replace('function b() {\n    return 2;', 'function c() {\n    return 3;'));
  });

  test('all or nothing: one failing edit leaves the file untouched', async () => {
    const { edit, put, get, root } = await setup();
    await put('code.ts', code);
    const r = await edit('code.ts', [
      ['return 1;', 'return 10;'],
      ['return 99;', 'return 100;'],
    ]);
    expect(r.isError).toBe(true);
    expect(r.text).toStartWith('edit 2: old_text was not found in code.ts.');
    expect(await get('code.ts')).toBe(code);
    expect((await readdir(root)).filter((n) => n.includes(TEMP_MARKER))).toEqual([]);
  });

  test('no match shows the closest region with line numbers and a whitespace hint', async () => {
    const { edit, put } = await setup();
    await put('code.ts', code);
    const r = await edit('code.ts', [['function b() {\n  return 2;\n}', 'x']]);
    expect(r.isError).toBe(true);
    expect(r.text).toContain('The closest region is lines 5-7 (with a line of context):\n4\t\n5\tfunction b() {\n6\t    return 2;\n7\t}\nThat region');
    expect(r.text).toContain('differs from old_text only in whitespace');
  });

  test('a typo in a one-line old_text still shows the closest line', async () => {
    const { edit, put } = await setup();
    await put('code.ts', code);
    const fragment = await edit('code.ts', [['retrun 2;', 'return 3;']]);
    expect(fragment.isError).toBe(true);
    expect(fragment.text).toBe(
      'old_text was not found in code.ts. The closest region is line 6 (with a line of context):\n5\tfunction b() {\n6\t    return 2;\n7\t}\n' +
        'It is similar to old_text, not equal; copy the text exactly as read shows it.',
    );
    const whole = await edit('code.ts', [['funtion a() {', 'function z() {']]);
    expect(whole.text).toContain('The closest region is line 1 (with a line of context):\n1\tfunction a() {\n2\t    return 1;\n');
  });

  test('text like nothing in the file says so instead of showing a region', async () => {
    const { edit, put } = await setup();
    await put('code.ts', code);
    const r = await edit('code.ts', [['SELECT name FROM users;', 'x']]);
    expect(r.text).toBe('old_text was not found in code.ts. No line of old_text occurs in the file, even ignoring whitespace; re-read the file before editing.');
  });

  test('old_text copied with read line numbers gets a specific hint', async () => {
    const { edit, put } = await setup();
    await put('code.ts', code);
    const r = await edit('code.ts', [['5\tfunction b() {\n6\t    return 2;', 'x']]);
    expect(r.text).toContain('line-number prefixes');
    expect(r.text).toContain('5\tfunction b() {');
  });

  test('more than one match gives the count and line numbers', async () => {
    const { edit, put } = await setup();
    await put('code.ts', code);
    const r = await edit('code.ts', [['return', 'yield']]);
    expect(r.isError).toBe(true);
    expect(r.text).toBe('old_text occurs 2 times in code.ts (starting on lines 2, 6); include more surrounding lines so it matches exactly once.');
  });

  test('overlapping edits and no-op edits are refused', async () => {
    const { edit, put } = await setup();
    await put('code.ts', code);
    const overlap = await edit('code.ts', [
      ['function a() {\n    return 1;', 'x'],
      ['return 1;\n}', 'y'],
    ]);
    expect(overlap.text).toBe('edits 1 and 2 overlap in code.ts; merge them into one edit.');
    expect((await edit('code.ts', [['return 1;', 'return 1;']])).text).toContain('change nothing');
  });

  test('a file beyond the edit size cap is refused before it is loaded', async () => {
    const { edit, at } = await setup();
    await writeFile(at('huge.txt'), '');
    await truncate(at('huge.txt'), EDIT_MAX_BYTES + 10 * 1024 * 1024); // sparse
    const r = await edit('huge.txt', [['a', 'b']]);
    expect(r.isError).toBe(true);
    expect(r.text).toBe('huge.txt is 266 MiB, more than edit handles (256 MiB); change it with bash (e.g. sed) instead.');
  });

  test('a missing file suggests write; a binary file is refused', async () => {
    const { edit, put } = await setup();
    expect((await edit('nope.ts', [['a', 'b']])).text).toEndWith('To create a new file, use write.');
    await put('blob.bin', Buffer.from([0xff, 0xfe, 0x00, 0x41]));
    expect((await edit('blob.bin', [['A', 'B']])).text).toContain('blob.bin is not UTF-8 text');
  });
});

describe('line endings and BOM', () => {
  test('a CRLF file edited with \\n text keeps CRLF everywhere, and nothing else changes', async () => {
    const { edit, put, at } = await setup();
    const crlf = 'one\r\ntwo\r\nthree\r\nfour\r\n';
    await put('win.txt', crlf);
    const r = await edit('win.txt', [['two\nthree', 'TWO\nTHREE\nextra']]);
    expect(r.isError).toBeUndefined();
    expect((await readFile(at('win.txt'))).toString('latin1')).toBe('one\r\nTWO\r\nTHREE\r\nextra\r\nfour\r\n');
    expect(r.text).toContain('-two\n-three\n+TWO\n+THREE\n+extra');
  });

  test('in a mixed file only the edited text changes', async () => {
    const { edit, put, at } = await setup();
    await put('mixed.txt', 'a\r\nb\r\nc\nd\r\n');
    await edit('mixed.txt', [['b', 'B']]);
    expect((await readFile(at('mixed.txt'))).toString('latin1')).toBe('a\r\nB\r\nc\nd\r\n');
  });

  test('in a mostly CRLF file, new text landing on LF lines keeps LF, and on CRLF lines gets CRLF', async () => {
    const { edit, put, at } = await setup();
    await put('mixed.txt', 'a\r\nb\r\nc\nd\ne\r\nf\r\n');
    await edit('mixed.txt', [['c\nd', 'C\nD\nX']]);
    expect((await readFile(at('mixed.txt'))).toString('latin1')).toBe('a\r\nb\r\nC\nD\nX\ne\r\nf\r\n');
    await edit('mixed.txt', [['X', 'X1\nX2']]);
    expect((await readFile(at('mixed.txt'))).toString('latin1')).toBe('a\r\nb\r\nC\nD\nX1\nX2\ne\r\nf\r\n');
    await edit('mixed.txt', [['f', 'f1\nf2']]);
    expect((await readFile(at('mixed.txt'))).toString('latin1')).toBe('a\r\nb\r\nC\nD\nX1\nX2\ne\r\nf1\r\nf2\r\n');
  });

  test('a BOM is kept', async () => {
    const { edit, put, at } = await setup();
    await put('bom.txt', '\uFEFFfirst\nsecond\n');
    await edit('bom.txt', [['first', 'FIRST']]);
    const bytes = await readFile(at('bom.txt'));
    expect([...bytes.subarray(0, 3)]).toEqual([0xef, 0xbb, 0xbf]);
    expect(bytes.subarray(3).toString()).toBe('FIRST\nsecond\n');
  });
});

describe('freshness, permissions and policy', () => {
  test('an edit without a prior read is allowed; a change after the read is refused with the current revision', async () => {
    const { edit, read, put, get } = await setup();
    await put('f.txt', 'x = 1\n');
    expect((await edit('f.txt', [['x = 1', 'x = 2']])).isError).toBeUndefined();
    await read({ path: 'f.txt' });
    await put('f.txt', 'x = 3\n');
    const r = await edit('f.txt', [['x = 3', 'x = 4']]);
    expect(r.isError).toBe(true);
    expect(r.text).toContain(`changed on disk since it was last read or written in this session (current revision ${sha('x = 3\n')})`);
    expect(await get('f.txt')).toBe('x = 3\n');
  });

  test('a stale expected_revision is refused; a current one is accepted', async () => {
    const { edit, put, get } = await setup();
    await put('f.txt', 'v = 1\n');
    const stale = await edit('f.txt', [['v = 1', 'v = 2']], { expected_revision: sha('v = 0\n') });
    expect(stale.isError).toBe(true);
    expect(stale.text).toContain(`its current revision is ${sha('v = 1\n')}`);
    expect((await edit('f.txt', [['v = 1', 'v = 2']], { expected_revision: sha('v = 1\n') })).isError).toBeUndefined();
    expect(await get('f.txt')).toBe('v = 2\n');
  });

  test('successive edits chain on the revision conch wrote', async () => {
    const { edit, read, put, get } = await setup();
    await put('f.txt', 'a\n');
    await read({ path: 'f.txt' });
    await edit('f.txt', [['a', 'b']]);
    expect((await edit('f.txt', [['b', 'c']])).isError).toBeUndefined();
    expect(await get('f.txt')).toBe('c\n');
  });

  test('permissions are preserved', async () => {
    const { edit, put, at } = await setup();
    await put('tool.sh', '#!/bin/sh\necho a\n');
    await chmod(at('tool.sh'), 0o750);
    await edit('tool.sh', [['echo a', 'echo b']]);
    expect((await stat(at('tool.sh'))).mode & 0o7777).toBe(0o750);
  });

  test('an injected failure before the rename leaves the file byte-for-byte intact', async () => {
    const { edit, put, get, root } = await setup({
      beforeRename: () => {
        throw new Error('disk fell off');
      },
    });
    await put('f.txt', 'keep me\r\n');
    await expect(edit('f.txt', [['keep', 'lose']])).rejects.toThrow('disk fell off');
    expect(await get('f.txt')).toBe('keep me\r\n');
    expect((await readdir(root)).filter((n) => n.includes(TEMP_MARKER))).toEqual([]);
  });

  test('protected files are refused with a PolicyError', async () => {
    const { edit, put } = await setup();
    await put('.env.local', 'A=1\n');
    const error = await edit('.env.local', [['A=1', 'A=2']]).catch((e) => e);
    expect(error).toBeInstanceOf(PolicyError);
    expect(error.rule).toBe('workspace.protected');
    expect(error.message).toContain("'.env.local' is protected");
  });
});

describe('schemas (read, write, edit) through the catalog', () => {
  test('closed, with the documented shapes', async () => {
    const workspace = await Workspace.open({ root: base, unrestricted: false });
    const deps = { workspace, revisions: new RevisionTracker() };
    const catalog = new Catalog();
    for (const tool of [createReadTool(deps), createWriteTool(deps), createEditTool(deps)]) {
      expect(catalog.register(tool)).toBeNull();
      expect(tool.source).toBe('kernel');
    }
    const ok = (name: string, args: unknown) => catalog.validate(name, JSON.stringify(args)).ok;
    expect(ok('read', { path: 'a', offset: 3, limit: 10 })).toBe(true);
    expect(ok('read', { path: 'a', offset: 0 })).toBe(false);
    expect(ok('read', { path: 'a', lines: 10 })).toBe(false);
    expect(ok('read', { path: '' })).toBe(false);
    expect(ok('write', { path: 'a', content: '' })).toBe(true);
    expect(ok('write', { path: 'a', content: 'x', expected_revision: null })).toBe(true);
    expect(ok('write', { path: 'a', content: 'x', expected_revision: 'abc' })).toBe(true);
    expect(ok('write', { path: 'a', content: 'x', overwrite: true })).toBe(false);
    expect(ok('edit', { path: 'a', edits: [{ old_text: 'x', new_text: '' }] })).toBe(true);
    expect(ok('edit', { path: 'a', edits: [] })).toBe(false);
    expect(ok('edit', { path: 'a', edits: [{ old_text: '', new_text: 'y' }] })).toBe(false);
    expect(ok('edit', { path: 'a', edits: [{ old_text: 'x', new_text: 'y', replace_all: true }] })).toBe(false);
    for (const spec of catalog.specs()) {
      const props = (spec.parameters as { properties: Record<string, { description?: string }> }).properties;
      for (const [key, prop] of Object.entries(props)) expect(`${spec.name}.${key}: ${prop.description ?? ''}`.length).toBeGreaterThan(`${spec.name}.${key}: `.length + 10);
    }
  });
});
