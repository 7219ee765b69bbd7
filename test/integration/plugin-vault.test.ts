// The vault plugin end to end: `--plugin vault`, the real CLI, the real SDKs and the local model
// server, over a fixture vault outside the workspace with a deny subtree that must stay invisible.
import { describe, expect, test } from 'bun:test';
import { mkdir, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { anthropicEnv, runConch, useHarness, writeConfig } from '../support/cli.ts';

export const VAULT: Record<string, string> = {
  'Index.md': ['---', 'title: Home', 'tags: [hub]', '---', 'Start at [[Projects/Plan]] and [[Alpha|the alpha]].', '', '```', '[[Code]] is not a link', '```', ''].join('\n'),
  'Projects/Plan.md': ['# Plan', '', 'Goals live in [[Alpha#Goals]]. #project', ''].join('\n'),
  'Projects/Alpha.md': ['# Alpha project', '', '## Goals', '', 'Ship it. #project/alpha', ''].join('\n'),
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

    expect(read).toMatch(/^Projects\/Alpha\.md · revision [0-9a-f]{64} · lines 1-5 of 5\n/);
    expect(read).toContain('3\t## Goals');

    expect(find).toContain('2 notes');
    expect(find).toContain('Projects/Alpha.md — Alpha project · #project/alpha');
    expect(find).toContain('Projects/Plan.md');

    expect(search).toContain('1 matching line');
    expect(search).toContain('Daily/2026-01-01.md:L2: needle in the daily note');

    expect(links).toContain('L3 links Alpha#Goals → Projects/Alpha.md');

    expect(backlinks).toContain('3 links from 3 notes to Projects/Alpha.md');
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
      ],
    ]);
    const all = results(1);
    // The named ones echo the name given; none says more than that it is not there.
    for (const text of all.slice(0, 5)) {
      expect(text).not.toContain('Private');
      expect(text).not.toContain('Secret plan');
      expect(text).not.toContain('hidden');
      expect(text).not.toContain('.obsidian');
    }
    const [, everything, tagged, search, backlinks, ...named] = all;
    expect(everything).toContain('4 notes');
    expect(tagged).toBe('no note matches');
    expect(search).toContain('1 matching line');
    expect(backlinks).toContain('3 links from 3 notes');
    for (const text of named) expect(text).toMatch(/^no note '[^']*' in the vault \(note_find lists notes\)$/);
  });

  test('without a configured root the plugin does not start and says how to configure one', async () => {
    await writeConfig(harness.dirs, {});
    harness.server.script([{ text: 'done' }]);
    const r = await runConch({ dirs: harness.dirs, args: ['--model', 'anthropic/test-model', '--plugin', 'vault', 'hi'], env: anthropicEnv(harness.server.anthropicBaseUrl) });
    expect(r.stderr).toContain(`vault/index.ts failed: the vault plugin needs the folder of your notes: add "plugins": { "vault": { "root": "~/notes" } } to ${join(harness.dirs.configHome, 'conch', 'config.json')} (an absolute path or ~/…)`);
    expect(harness.server.requests[0]!.body.tools.map((t: { name: string }) => t.name)).not.toContain('vault_overview');
  });
});
