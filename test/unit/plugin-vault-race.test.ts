// The vault's check-then-open race: a note's path passed the confinement (inside the root, not in a
// deny subtree), then a folder on it is swapped for a symbolic link to a denied subtree or out of
// the vault before the note is opened. The swap runs at a fixed point after the check, so the race
// is deterministic: right after the index found the note (note_read), after it listed the notes
// (note_search), or inside the read-policy check of the walk (what the index parses).
import { afterEach, beforeEach, expect, test } from 'bun:test';
import { renameSync, symlinkSync } from 'node:fs';
import { mkdir, mkdtemp, realpath, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import type { ToolContext, ToolDefinition, ToolResult } from '../../src/index.ts';
import { Workspace } from '../../src/workspace/paths.ts';
import { vaultTools } from '../../plugins/vault/index.ts';
import { VaultIndex } from '../../plugins/vault/notes.ts';
import { loadSettings } from '../../plugins/vault/settings.ts';

let base: string;
let notes: string;
const restore: (() => void)[] = [];

beforeEach(async () => {
  base = await realpath(await mkdtemp(join(tmpdir(), 'conch-vault-race-')));
  notes = join(base, 'notes');
  const files: Record<string, string> = {
    'notes/Docs/Plan.md': '# Plan\n\npublic words\n',
    'notes/Private/Plan.md': '# Secret plan\n\nTOP SECRET words\n',
    'outside/Plan.md': '# Outside\n\nOUTSIDE words\n',
    'ws/.keep': '',
  };
  for (const [path, text] of Object.entries(files)) {
    await mkdir(dirname(join(base, path)), { recursive: true });
    await writeFile(join(base, path), text);
  }
});
afterEach(async () => {
  for (const undo of restore.splice(0)) undo();
  await rm(base, { recursive: true, force: true });
});

/** Replace Docs with a link to `target` (a folder holding another Plan.md). */
const swapDocsFor = (target: string) => () => {
  renameSync(join(notes, 'Docs'), join(notes, 'Docs.old'));
  symlinkSync(target, join(notes, 'Docs'));
};

/** Run `swap` once, right after the named VaultIndex method returns (or its promise resolves). */
function after(method: 'find' | 'all', swap: () => void): void {
  const original = VaultIndex.prototype[method] as (...args: unknown[]) => unknown;
  let done = false;
  (VaultIndex.prototype as unknown as Record<string, unknown>)[method] = function (this: VaultIndex, ...args: unknown[]) {
    const result = original.apply(this, args);
    if (done) return result;
    done = true;
    if (!(result instanceof Promise)) return (swap(), result);
    return result.then((value) => (swap(), value));
  };
  restore.push(() => ((VaultIndex.prototype as unknown as Record<string, unknown>)[method] = original));
}

async function tools(onResolve?: (abs: string) => Promise<void>) {
  const settings = await loadSettings({ root: notes, deny: ['Private'] }, join(base, 'config', 'conch', 'config.json'));
  const workspace = await Workspace.open({ root: join(base, 'ws'), unrestricted: false });
  if (onResolve) {
    const check = workspace.resolve.bind(workspace);
    workspace.resolve = async (path, mode) => {
      const approved = await check(path, mode);
      await onResolve(approved);
      return approved;
    };
  }
  const ctx = {
    cwd: workspace.root,
    signal: new AbortController().signal,
    runSignal: new AbortController().signal,
    workspace,
    exec: () => Promise.reject(new Error('no exec here')),
    update: () => {},
    callId: 'test',
  } as unknown as ToolContext;
  const all = vaultTools(settings);
  return async (name: string, args: Record<string, unknown>): Promise<{ text: string; isError?: boolean }> => {
    const tool = all.find((t) => t.name === name) as ToolDefinition;
    const r = await tool.execute(args as never, ctx);
    if (typeof r === 'string') return { text: r };
    const result = r as ToolResult;
    return { text: result.content.map((c) => (c.type === 'text' ? c.text : '')).join(''), isError: result.isError };
  };
}

test('note_read: Docs swapped for a link to the denied Private folder after the note was found reads nothing of it', async () => {
  const call = await tools();
  after('find', swapDocsFor(join(notes, 'Private')));
  const r = await call('note_read', { note: 'Docs/Plan.md' });
  expect(r.text).not.toContain('TOP SECRET');
  expect(r.isError).toBe(true);
  expect(r.text).toContain('nothing was read from Docs/Plan.md: it was replaced since the vault was checked');
});

test('note_search: Docs swapped for a link out of the vault after the notes were listed finds nothing there', async () => {
  const call = await tools();
  expect((await call('note_search', { text: 'words' })).text).toContain('Docs/Plan.md:L3: public words');
  after('all', swapDocsFor(join(base, 'outside')));
  const r = await call('note_search', { text: 'words' });
  expect(r.text).not.toContain('OUTSIDE');
  expect(r.text).toBe("no note contains 'words'");
});

test('the index: a note whose folder is swapped during its policy check is not parsed from where the link leads', async () => {
  let swapped = false;
  const call = await tools(async (abs) => {
    if (swapped || !abs.endsWith('/Docs/Plan.md')) return;
    swapped = true;
    swapDocsFor(join(notes, 'Private'))();
  });
  const r = await call('note_find', {});
  expect(swapped).toBe(true);
  expect(r.text).not.toContain('Secret');
  expect(r.text).toBe('no note matches');
});

test('without a swap the same calls read the note', async () => {
  const call = await tools();
  expect((await call('note_read', { note: 'Docs/Plan.md' })).text).toContain('3\tpublic words');
  expect((await call('note_find', {})).text).toBe('1 note\nDocs/Plan.md');
});
