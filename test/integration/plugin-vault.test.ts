// The vault plugin end to end: `--plugin vault`, the real CLI, the real SDKs and the local model
// server, over a fixture vault outside the workspace with a deny subtree that must stay invisible.
import { describe, expect, test } from 'bun:test';
import { readdirSync, readFileSync } from 'node:fs';
import { mkdir, readFile, symlink, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { probeSandbox } from '../../src/sandbox/index.ts';
import { revisionOf } from '../../src/workspace/revision.ts';
import { anthropicEnv, CONCH, conchEnv, runConch, useHarness, writeConfig } from '../support/cli.ts';

export const VAULT: Record<string, string> = {
  'Index.md': ['---', 'title: Home', 'tags: [hub]', '---', 'Start at [[Projects/Plan]] and [[Alpha|the alpha]].', 'See [the alpha doc](Projects/Alpha.md).', '', '```', '[[Code]] is not a link', '```', ''].join('\n'),
  'Projects/Plan.md': ['# Plan', '', 'Goals live in [[Alpha#Goals]]. #project', ''].join('\n'),
  'Projects/Alpha.md': ['# Alpha project', '', '## Goals', '', 'Ship it. #project/alpha', 'See [the plan](Plan.md).', ''].join('\n'),
  'Daily/2026-01-01.md': ['Today: ![[Alpha]] and [the plan](../Projects/Plan.md).', 'needle in the daily note', ''].join('\n'),
  'Private/Secret.md': ['# Secret plan', '', 'needle [[Alpha]] #hidden', ''].join('\n'),
  '.obsidian/hidden.md': 'needle [[Alpha]]\n',
};

export async function writeVault(root: string, files: Record<string, string> = VAULT): Promise<void> {
  for (const [path, text] of Object.entries(files)) {
    await mkdir(dirname(join(root, path)), { recursive: true });
    await writeFile(join(root, path), text);
  }
}

const harness = useHarness(async (d) => {
  await writeVault(join(d.home, 'notes'));
  // Links out of the vault: a note and a folder that lead to files outside its root.
  await writeVault(join(d.home, 'outside'), { 'Out.md': '# Outside\n\nneedle [[Alpha]]\n' });
  await symlink('../outside/Out.md', join(d.home, 'notes', 'Out.md'));
  await symlink('../outside', join(d.home, 'notes', 'OutDir'));
  await writeConfig(d, { plugins: { vault: { root: '~/notes', deny: ['Private'] } } });
});
const vaultRoot = () => join(harness.dirs.home, 'notes');

type Call = { name: string; arguments: Record<string, unknown> };

async function run(turns: Call[][], extra: string[] = []) {
  harness.server.script([...turns.map((toolCalls) => ({ toolCalls })), { text: 'done' }]);
  const r = await runConch({ dirs: harness.dirs, args: ['--model', 'anthropic/test-model', '--plugin', 'vault', ...extra, 'work on my notes'], env: anthropicEnv(harness.server.anthropicBaseUrl) });
  expect(r.code).toBe(0);
  return r;
}

/** The text of every tool result sent back in request `n` (Anthropic wire). */
function results(n: number): string[] {
  const content = harness.server.requests[n]!.body.messages.at(-1).content as { type: string; content: unknown }[];
  return content.filter((c) => c.type === 'tool_result').map((c) => (typeof c.content === 'string' ? c.content : (c.content as { text: string }[]).map((b) => b.text).join('')));
}

describe('vault plugin read tools through the CLI', () => {
  test('overview, lookup, read, find, search, links and backlinks', async () => {
    await run([
      [
        { name: 'vault_overview', arguments: {} },
        { name: 'note_lookup', arguments: { note: 'Home' } },
        { name: 'note_read', arguments: { note: '[[Alpha]]' } },
        { name: 'note_find', arguments: { tag: '#project' } },
        { name: 'note_search', arguments: { text: 'NEEDLE' } },
        { name: 'note_links', arguments: { note: 'Projects/Plan.md' } },
        { name: 'note_backlinks', arguments: { note: 'alpha' } },
      ],
    ]);
    const names = harness.server.requests[0]!.body.tools.map((t: { name: string }) => t.name);
    expect(names).toEqual(expect.arrayContaining(['vault_overview', 'note_lookup', 'note_read', 'note_find', 'note_search', 'note_links', 'note_backlinks']));
    const [overview, lookup, read, find, search, links, backlinks] = results(1) as [string, string, string, string, string, string, string];
    expect(overview).toContain('4 notes in 2 folders');
    expect(overview).toContain('Projects/ — 2 notes');
    expect(overview).toContain('Index.md — Home');
    expect(overview).toContain('#project (1)');

    expect(lookup).toContain('Index.md — title: Home');
    expect(lookup).toContain('tags: #hub');
    expect(lookup).toContain('L5 Projects/Plan → Projects/Plan.md');
    expect(lookup).toContain('L5 Alpha → Projects/Alpha.md');
    expect(lookup).not.toContain('Code');

    expect(read).toMatch(/^Projects\/Alpha\.md · revision [0-9a-f]{64} · lines 1-6 of 6\n/);
    expect(read).toContain('3\t## Goals');

    expect(find).toContain('2 notes');
    expect(find).toContain('Projects/Alpha.md — Alpha project · #project/alpha');
    expect(find).toContain('Projects/Plan.md');

    expect(search).toContain('1 matching line');
    expect(search).toContain('Daily/2026-01-01.md:L2: needle in the daily note');

    expect(links).toContain('L3 links Alpha#Goals → Projects/Alpha.md');

    expect(backlinks).toContain('4 links from 3 notes to Projects/Alpha.md');
    expect(backlinks).toContain('Daily/2026-01-01.md:L1: Today: ![[Alpha]]');
    expect(backlinks).toContain('Projects/Plan.md:L3:');
  });

  test('deny subtrees and dot folders are invisible to every read tool', async () => {
    await run([
      [
        { name: 'vault_overview', arguments: { depth: 5 } },
        { name: 'note_find', arguments: {} },
        { name: 'note_find', arguments: { tag: 'hidden' } },
        { name: 'note_search', arguments: { text: 'needle' } },
        { name: 'note_backlinks', arguments: { note: 'Alpha' } },
        { name: 'note_lookup', arguments: { note: 'Private/Secret.md' } },
        { name: 'note_read', arguments: { note: 'Secret plan' } },
        { name: 'note_read', arguments: { note: '[[Secret]]' } },
        { name: 'note_read', arguments: { note: 'Projects/../Private/Secret.md' } },
        { name: 'note_read', arguments: { note: '.obsidian/hidden.md' } },
        { name: 'note_links', arguments: { note: '../notes/Private/Secret' } },
        { name: 'note_read', arguments: { note: 'Out.md' } },
        { name: 'note_read', arguments: { note: 'OutDir/Out.md' } },
        { name: 'note_read', arguments: { note: '../outside/Out.md' } },
      ],
    ]);
    const all = results(1);
    // The named ones echo the name given; none says more than that it is not there.
    for (const text of all.slice(0, 5)) {
      expect(text).not.toContain('Private');
      expect(text).not.toContain('Out');
      expect(text).not.toContain('Secret plan');
      expect(text).not.toContain('hidden');
      expect(text).not.toContain('.obsidian');
    }
    const [, everything, tagged, search, backlinks, ...named] = all;
    expect(everything).toContain('4 notes');
    expect(tagged).toBe('no note matches');
    expect(search).toContain('1 matching line');
    expect(backlinks).toContain('4 links from 3 notes');
    for (const text of named) expect(text).toMatch(/^no note '[^']*' in the vault \(note_find lists notes\)$/);
  });

  test('allow narrows the vault to its subtrees, and deny wins inside them', async () => {
    await writeVault(vaultRoot(), { 'Projects/Private/Hidden.md': '# Hidden\n' });
    await writeConfig(harness.dirs, { plugins: { vault: { root: '~/notes', allow: ['Projects'], deny: ['Projects/Private'] } } });
    await run([
      [
        { name: 'vault_overview', arguments: {} },
        { name: 'note_read', arguments: { note: 'Index.md' } },
        { name: 'note_create', arguments: { path: 'Daily/New.md', content: 'x' } },
        { name: 'note_create', arguments: { path: 'Projects/New.md', content: 'see [[Plan]]' } },
        { name: 'note_backlinks', arguments: { note: 'Plan' } },
      ],
    ]);
    const [overview, read, outside, inside, backlinks] = results(1) as [string, string, string, string, string];
    expect(overview).toBe('2 notes in 1 folder\nProjects/ — 2 notes\ntags: #project (1), #project/alpha (1)');
    expect(read).toStartWith("no note 'Index.md' in the vault");
    expect(outside).toStartWith("'Daily/New.md' is not a place for a note in the vault");
    expect(inside).toStartWith('Created Projects/New.md');
    expect(backlinks).toBe('2 links from 2 notes to Projects/Plan.md\nProjects/Alpha.md:L6: See [the plan](Plan.md).\nProjects/New.md:L1: see [[Plan]]');
  });

  test("conch's own folder inside the vault is not part of it", async () => {
    await writeFile(join(harness.dirs.configHome, 'conch', 'AGENTS.md'), '# Guidance\n');
    await writeFile(join(harness.dirs.configHome, 'Note.md'), '# A note\n');
    await writeConfig(harness.dirs, { plugins: { vault: { root: harness.dirs.configHome } } });
    await run([[{ name: 'note_find', arguments: {} }, { name: 'note_create', arguments: { path: 'conch/tools/x.md', content: 'x' } }]]);
    const [listed, create] = results(1) as [string, string];
    expect(listed).toBe('1 note\nNote.md — A note');
    expect(create).toStartWith("'conch/tools/x.md' is not a place for a note in the vault");
  });

  test('without a configured root the plugin does not start and says how to configure one', async () => {
    await writeConfig(harness.dirs, {});
    harness.server.script([{ text: 'done' }]);
    const r = await runConch({ dirs: harness.dirs, args: ['--model', 'anthropic/test-model', '--plugin', 'vault', 'hi'], env: anthropicEnv(harness.server.anthropicBaseUrl) });
    expect(r.stderr).toContain(`vault/index.ts failed: the vault plugin needs the folder of your notes: add "plugins": { "firstParty": ["vault"], "vault": { "root": "~/notes" } } to ${join(harness.dirs.configHome, 'conch', 'config.json')} (an absolute path or ~/…)`);
    expect(harness.server.requests[0]!.body.tools.map((t: { name: string }) => t.name)).not.toContain('vault_overview');
  });

  test('enabled as "plugins": ["vault"], the config the message gives turns it on with a root', async () => {
    await writeConfig(harness.dirs, { plugins: ['vault'] });
    const first = await runConch({ dirs: harness.dirs, args: ['tools'], env: {} });
    const example = /add ("plugins": \{.*\}) to /.exec(first.stdout)?.[1];
    expect(example).toBeDefined();
    await writeConfig(harness.dirs, JSON.parse(`{${example}}`));
    const second = await runConch({ dirs: harness.dirs, args: ['tools'], env: {} });
    expect(second.stdout).toContain('vault_overview');
    expect(second.stdout).not.toContain('failed');
  });
});

/** Every file under the vault with its text, dot folders included (leftover temporary files show up here). */
function snapshot(): Record<string, string> {
  const root = vaultRoot();
  const files = readdirSync(root, { recursive: true, withFileTypes: true }).filter((e) => e.isFile());
  return Object.fromEntries(files.map((e) => [join(e.parentPath, e.name).slice(root.length + 1), readFileSync(join(e.parentPath, e.name), 'utf8')]).sort());
}

const sandbox = await probeSandbox();

describe('vault plugin write tools through the CLI', () => {
  test('note_create, note_append and note_edit (exact text, expected_revision)', async () => {
    const alpha = VAULT['Projects/Alpha.md']!;
    await run([
      [{ name: 'note_create', arguments: { path: 'Projects/Beta', content: '# Beta\n\nlinks to [[Alpha]]\n' } }],
      [{ name: 'note_append', arguments: { note: 'Beta', text: '- one more line' } }],
      [{ name: 'note_edit', arguments: { note: '[[Alpha]]', edits: [{ old_text: 'Ship it.', new_text: 'Shipped.' }], expected_revision: revisionOf(alpha) } }],
      [
        { name: 'note_edit', arguments: { note: 'Alpha', edits: [{ old_text: 'Shipped.', new_text: 'x' }], expected_revision: revisionOf(alpha) } },
        { name: 'note_edit', arguments: { note: 'Alpha', edits: [{ old_text: 'not in the note', new_text: 'x' }] } },
        { name: 'note_create', arguments: { path: 'Projects/Beta.md', content: 'again' } },
        { name: 'note_backlinks', arguments: { note: 'Alpha' } },
      ],
    ]);
    expect(results(1)[0]).toBe(`Created Projects/Beta.md; revision ${revisionOf('# Beta\n\nlinks to [[Alpha]]\n')}.`);
    expect(results(2)[0]).toStartWith('Appended 1 line to Projects/Beta.md; revision ');
    const edited = alpha.replace('Ship it.', 'Shipped.');
    expect(results(3)[0]).toStartWith(`Edited Projects/Alpha.md: +1 -1 lines; revision ${revisionOf(edited)}.`);
    const [stale, miss, exists, backlinks] = results(4) as [string, string, string, string];
    expect(stale).toBe(`Projects/Alpha.md is not at revision ${revisionOf(alpha)}: its current revision is ${revisionOf(edited)}. Read it again (note_read) before changing it.`);
    expect(miss).toStartWith('old_text was not found in Projects/Alpha.md.');
    expect(exists).toBe('Projects/Beta.md already exists: change it with note_edit or note_append, or choose another path.');
    expect(backlinks).toContain('Projects/Beta.md:L3: links to [[Alpha]]');
    expect(await readFile(join(vaultRoot(), 'Projects/Beta.md'), 'utf8')).toBe('# Beta\n\nlinks to [[Alpha]]\n- one more line\n');
    expect(await readFile(join(vaultRoot(), 'Projects/Alpha.md'), 'utf8')).toBe(edited);
  });

  test('note_read pages a long note (2000 lines or 50 KiB); note_append keeps CRLF line endings', async () => {
    const long = Array.from({ length: 2500 }, (_, i) => `line ${i + 1}`).join('\n');
    await writeVault(vaultRoot(), { 'Long.md': `${long}\n`, 'Wide.md': `${'x'.repeat(40 * 1024)}\n${'y'.repeat(20 * 1024)}\n`, 'Crlf.md': 'a\r\nb\r\n' });
    await run([
      [
        { name: 'note_read', arguments: { note: 'Long' } },
        { name: 'note_read', arguments: { note: 'Long', offset: 2001 } },
        { name: 'note_read', arguments: { note: 'Wide' } },
        { name: 'note_append', arguments: { note: 'Crlf', text: 'c\nd' } },
      ],
    ]);
    const [first, second, wide] = results(1) as [string, string, string];
    expect(first).toContain(' · lines 1-2000 of 2500\n');
    expect(first).toEndWith('2000\tline 2000\n[lines 2001-2500 not shown: continue with offset=2001]');
    expect(second).toContain(' · lines 2001-2500 of 2500\n');
    expect(second).toEndWith('2500\tline 2500');
    expect(wide).toContain(' · lines 1-1 of 2\n');
    expect(wide).toEndWith('[lines 2-2 not shown: continue with offset=2]');
    expect(await readFile(join(vaultRoot(), 'Crlf.md'), 'utf8')).toBe('a\r\nb\r\nc\r\nd\r\n');
  });

  test('note_rename rewrites the links in three notes ([[name|alias]], [[name#heading]], an embed, a markdown link), not those in code or deny subtrees', async () => {
    const before = snapshot();
    await run([[{ name: 'note_rename', arguments: { note: 'Alpha', to: 'Archive/Shipped' } }, { name: 'note_backlinks', arguments: { note: 'Shipped' } }]]);
    const [renamed, backlinks] = results(1) as [string, string];
    expect(renamed).toBe('Renamed Projects/Alpha.md to Archive/Shipped.md; rewrote 4 links in 3 other notes.');
    expect(backlinks).toContain('4 links from 3 notes to Archive/Shipped.md');
    const after = snapshot();
    expect(after['Projects/Alpha.md']).toBeUndefined();
    // Its own relative link follows it to the new folder.
    expect(after['Archive/Shipped.md']).toBe(before['Projects/Alpha.md']!.replace('(Plan.md)', '(../Projects/Plan.md)'));
    expect(after['Index.md']).toBe(before['Index.md']!.replace('[[Alpha|the alpha]]', '[[Shipped|the alpha]]').replace('(Projects/Alpha.md)', '(Archive/Shipped.md)'));
    expect(after['Projects/Plan.md']).toBe(before['Projects/Plan.md']!.replace('[[Alpha#Goals]]', '[[Shipped#Goals]]'));
    expect(after['Daily/2026-01-01.md']).toBe(before['Daily/2026-01-01.md']!.replace('![[Alpha]]', '![[Shipped]]'));
    // Invisible to the vault, so untouched: the denied note and the dot folder.
    expect(after['Private/Secret.md']).toBe(before['Private/Secret.md']);
    expect(after['.obsidian/hidden.md']).toBe(before['.obsidian/hidden.md']);
    expect(Object.keys(after).sort()).toEqual(Object.keys(before).map((k) => (k === 'Projects/Alpha.md' ? 'Archive/Shipped.md' : k)).sort());
  });

  test.skipIf(!sandbox.ok)('a rename that fails midway (the third note cannot be replaced) leaves every note as it was', async () => {
    const before = snapshot();
    harness.server.script([{ toolCalls: [{ name: 'note_rename', arguments: { note: 'Alpha', to: 'Beta' } }] }, { text: 'done' }]);
    // Projects/Plan.md, the last of the three notes that link to Alpha, is a mount point: it cannot be
    // replaced by rename(2) nor linked as a backup, for root as for anyone, after the two others were.
    const plan = join(vaultRoot(), 'Projects/Plan.md');
    const child = Bun.spawn(['bwrap', '--dev-bind', '/', '/', '--bind', plan, plan, CONCH, '--model', 'anthropic/test-model', '--plugin', 'vault', '--no-shell', 'rename it'], {
      cwd: harness.dirs.workspace,
      env: conchEnv(harness.dirs, anthropicEnv(harness.server.anthropicBaseUrl)),
      stdout: 'pipe',
      stderr: 'pipe',
    });
    const [, stderr, code] = await Promise.all([new Response(child.stdout).text(), new Response(child.stderr).text(), child.exited]);
    expect(stderr).not.toContain('failed');
    expect(code).toBe(0);
    expect(results(1)[0]).toMatch(/^nothing was changed: Projects\/Plan\.md: the system refused \((EXDEV|EBUSY)\)\.$/);
    expect(snapshot()).toEqual(before);
  });

  test('a name shared by two notes: links are resolved or reported ambiguous, and a rename onto a taken name writes paths', async () => {
    await writeVault(vaultRoot(), {
      'Projects/Alpha.md': `${VAULT['Projects/Alpha.md']}[this note](Alpha.md), [[Alpha#Goals]], [[#Goals]]\n`,
      'Archive/Plan.md': '# Old plan\n\n[[Plan]] here is this one; [[Alpha]]\n',
    });
    await run([
      [
        { name: 'note_read', arguments: { note: 'Plan' } },
        { name: 'note_links', arguments: { note: 'Index' } },
        { name: 'note_links', arguments: { note: 'Archive/Plan.md' } },
        { name: 'note_rename', arguments: { note: 'Alpha', to: 'Plan2' } },
      ],
    ]);
    const [read, fromIndex, fromArchive, renamed] = results(1) as [string, string, string, string];
    expect(read).toBe("'Plan' names 2 notes: Archive/Plan.md, Projects/Plan.md; give the path");
    expect(fromIndex).toContain('L5 links Projects/Plan → Projects/Plan.md');
    expect(fromArchive).toContain('L3 links Plan → Archive/Plan.md');
    expect(renamed).toBe('Renamed Projects/Alpha.md to Projects/Plan2.md; rewrote 5 links in 4 other notes.');
    // Within its folder, its own links to itself follow the new name; [[#Goals]] needs nothing.
    const mid = snapshot();
    expect(mid['Projects/Plan2.md']).toEndWith('[this note](Plan2.md), [[Plan2#Goals]], [[#Goals]]\n');
    expect(mid['Index.md']).toContain('[[Plan2|the alpha]]');
    // Onto a name two other notes have: every link names the path.
    harness.server.requests.length = 0;
    await run([[{ name: 'note_rename', arguments: { note: 'Projects/Plan2.md', to: 'Daily/Plan' } }]]);
    expect(results(1)[0]).toBe("Renamed Projects/Plan2.md to Daily/Plan.md; rewrote 5 links in 4 other notes. Another note is also named 'Plan', so links to it name its path.");
    const after = snapshot();
    expect(after['Index.md']).toContain('[[Daily/Plan|the alpha]]');
    expect(after['Index.md']).toContain('[the alpha doc](Daily/Plan.md)');
    expect(after['Projects/Plan.md']).toContain('[[Daily/Plan#Goals]]');
    expect(after['Archive/Plan.md']).toContain('[[Plan]] here is this one; [[Daily/Plan]]');
    expect(after['Daily/Plan.md']).toEndWith('[this note](Plan.md), [[Daily/Plan#Goals]], [[#Goals]]\n');
    expect(after['Daily/Plan.md']).toContain('See [the plan](../Projects/Plan.md).');
  });

  test('deny subtrees refuse writes; --read-only offers no write tool', async () => {
    const before = snapshot();
    await run([
      [
        { name: 'note_create', arguments: { path: 'Private/New.md', content: 'x' } },
        { name: 'note_create', arguments: { path: '.obsidian/New.md', content: 'x' } },
        { name: 'note_create', arguments: { path: '../escape.md', content: 'x' } },
        { name: 'note_append', arguments: { note: 'Private/Secret.md', text: 'x' } },
        { name: 'note_edit', arguments: { note: 'Secret plan', edits: [{ old_text: 'needle', new_text: 'x' }] } },
        { name: 'note_rename', arguments: { note: 'Alpha', to: 'Private/Alpha' } },
        { name: 'note_rename', arguments: { note: 'Private/Secret.md', to: 'Public' } },
        { name: 'note_create', arguments: { path: 'OutDir/New.md', content: 'x' } },
      ],
    ]);
    const refused = results(1);
    expect(refused.slice(0, 3).every((t) => t.includes('is not a place for a note in the vault'))).toBe(true);
    expect(refused[5]).toStartWith("'Private/Alpha' is not a place for a note in the vault");
    for (const t of [refused[3], refused[4], refused[6]]) expect(t).toMatch(/^no note '[^']*' in the vault/);
    expect(refused[7]).toStartWith("'OutDir/New.md' is not a place for a note in the vault");
    expect(snapshot()).toEqual(before);
    expect(readdirSync(join(harness.dirs.home, 'outside'))).toEqual(['Out.md']);
    expect(readdirSync(dirname(vaultRoot()))).not.toContain('escape.md');

    harness.server.requests.length = 0;
    await run([[{ name: 'vault_overview', arguments: {} }]], ['--read-only']);
    const offered = harness.server.requests[0]!.body.tools.map((t: { name: string }) => t.name);
    expect(offered).toContain('note_read');
    for (const name of ['note_create', 'note_append', 'note_edit', 'note_rename', 'write', 'edit']) expect(offered).not.toContain(name);
  });

  test("a vault inside the workspace: conch's write policy holds for the vault tools", async () => {
    await writeVault(join(harness.dirs.workspace, 'notes'));
    await writeConfig(harness.dirs, { plugins: { vault: { root: join(harness.dirs.workspace, 'notes') } }, write: { protected: ['notes/Projects/**'] } });
    await run([[{ name: 'note_edit', arguments: { note: 'Alpha', edits: [{ old_text: 'Ship it.', new_text: 'x' }] } }, { name: 'note_append', arguments: { note: 'Index', text: 'fine' } }]]);
    const [protectedEdit, allowed] = results(1) as [string, string];
    expect(protectedEdit).toBe("'notes/Projects/Alpha.md' may not be written: the policy denies it (rule 'user:write.protected[0]'); --unrestricted does not lift policy denials.");
    expect(allowed).toStartWith('Appended 1 line to Index.md');
    expect(await readFile(join(harness.dirs.workspace, 'notes/Projects/Alpha.md'), 'utf8')).toBe(VAULT['Projects/Alpha.md']!);
  });
});
