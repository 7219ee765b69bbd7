import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { mkdir, mkdtemp, realpath, rm, symlink, writeFile } from 'node:fs/promises';
import { homedir, tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadSettings, visible } from '../../plugins/vault/settings.ts';

let base: string;
let config: string;
beforeAll(async () => {
  base = await realpath(await mkdtemp(join(tmpdir(), 'conch-vault-settings-')));
  config = join(base, 'config', 'conch', 'config.json');
  await mkdir(join(base, 'notes', 'Work'), { recursive: true });
  await writeFile(join(base, 'file.md'), '');
  await symlink(join(base, 'notes', 'Work'), join(base, 'notes', 'WorkLink'));
});
afterAll(() => rm(base, { recursive: true, force: true }));

const refused = (raw: Record<string, unknown>) => loadSettings(raw, config).then(() => 'loaded', (e: Error) => e.message);

describe('vault settings', () => {
  test('each mistake names plugins.vault.KEY, the config file and the fix', async () => {
    expect(await refused({})).toStartWith(`the vault plugin needs the folder of your notes: add "plugins": { "firstParty": ["vault"], "vault": { "root": "~/notes" } } to ${config}`);
    expect(await refused({ root: 'notes' })).toStartWith(`plugins.vault.root in ${config} is "notes": write an absolute path or ~/…`);
    expect(await refused({ root: join(base, 'missing') })).toContain('which is missing: point it at the folder of your notes');
    expect(await refused({ root: join(base, 'file.md') })).toContain('which is not a folder');
    expect(await refused({ root: '~' })).toContain('your home directory: point it at the vault');
    expect(await refused({ root: homedir() === '/' ? '/' : join(homedir(), '..') })).toContain('or a folder that contains it');
    expect(await refused({ root: join(base, 'notes'), deny: ['../..'] })).toContain('plugins.vault.deny in');
    expect(await refused({ root: join(base, 'notes'), allow: 'Work' })).toContain('plugins.vault.allow in');
    expect(await refused({ root: join(base, 'notes'), path: 'x' })).toStartWith(`plugins.vault.path in ${config} is not a vault setting`);
  });

  test('allow and deny are canonical subtrees of the root; deny wins, dot folders and conch\'s folder are out', async () => {
    const s = await loadSettings({ root: join(base, 'notes'), allow: ['WorkLink'], deny: ['Work/Private'] }, config);
    expect(s.allow).toEqual([join(base, 'notes', 'Work')]);
    const at = (rel: string) => join(base, 'notes', rel);
    expect(visible(s, at('Work/a.md'), 'note')).toBe(true);
    expect(visible(s, at('Work/Private/a.md'), 'note')).toBe(false);
    expect(visible(s, at('Work/.trash/a.md'), 'note')).toBe(false);
    expect(visible(s, at('Other/a.md'), 'note')).toBe(false);
    expect(visible(s, at('a.md'), 'note')).toBe(false);
    expect(visible(s, join(base, 'outside.md'), 'note')).toBe(false);
    const wide = await loadSettings({ root: base }, config);
    expect(visible(wide, join(base, 'config', 'conch', 'AGENTS.md'), 'note')).toBe(false);
    expect(visible(wide, join(base, 'notes', 'x.md'), 'note')).toBe(true);
  });
});
