// A vault holding a note too large to parse (a pasted log, a clipped page): marked's lexer ran for
// minutes on it, and every vault tool indexes the vault first. Through the real CLI.
import { expect, test } from 'bun:test';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { anthropicEnv, runConch, useHarness, writeConfig } from '../support/cli.ts';

const BIG = `---\ntitle: Server log\n---\n${'GET /index 200 see [[Alpha]] #noise\n'.repeat(40_000)}`;

const harness = useHarness(async (d) => {
  for (const [path, text] of Object.entries({ 'Alpha.md': '# Alpha\n', 'Index.md': 'See [[Alpha]].\n', 'Logs/Big.md': BIG })) {
    await mkdir(dirname(join(d.home, 'notes', path)), { recursive: true });
    await writeFile(join(d.home, 'notes', path), text);
  }
  await writeConfig(d, { plugins: { vault: { root: '~/notes' } } });
});

test('a note over 1 MiB is listed, read and searched; its structure is not parsed, and a rename says it was not checked', async () => {
  harness.server.script([
    {
      toolCalls: [
        { name: 'vault_overview', arguments: {} },
        { name: 'note_lookup', arguments: { note: 'Server log' } },
        { name: 'note_search', arguments: { text: 'GET /index' } },
      ],
    },
    { toolCalls: [{ name: 'note_rename', arguments: { note: 'Alpha', to: 'Beta' } }] },
    { text: 'done' },
  ]);
  const r = await runConch({ dirs: harness.dirs, args: ['--model', 'anthropic/test-model', '--plugin', 'vault', 'tidy my notes'], env: anthropicEnv(harness.server.anthropicBaseUrl) });
  expect(r.code).toBe(0);
  const results = (n: number) =>
    (harness.server.requests[n]!.body.messages.at(-1).content as { type: string; content: unknown }[])
      .filter((c) => c.type === 'tool_result')
      .map((c) => (typeof c.content === 'string' ? c.content : (c.content as { text: string }[]).map((b) => b.text).join('')));
  const [overview, lookup, search] = results(1) as [string, string, string];
  expect(overview).toContain('3 notes in 1 folder');
  expect(lookup).toContain('Logs/Big.md — title: Server log · 40003 lines');
  expect(lookup).toContain('structure: not parsed (the note is over 1 MiB)');
  expect(search).toContain('40000 matching lines');
  expect(results(2)[0]).toBe('Renamed Alpha.md to Beta.md; rewrote 1 link in 1 other note. Not checked for links (over 1 MiB, their structure is not parsed): Logs/Big.md.');
  expect(await readFile(join(harness.dirs.home, 'notes', 'Index.md'), 'utf8')).toBe('See [[Beta]].\n');
  expect(await readFile(join(harness.dirs.home, 'notes', 'Logs/Big.md'), 'utf8')).toBe(BIG);
});
