// Names a [[link]] cannot carry: '#' starts a heading, '|' an alias, '^' a block, '[' and ']' end or
// nest the link. A note created or renamed to such a name could never be linked, and a rename to one
// rewrote every link to the note into a link that leads nowhere. Through the real CLI.
import { expect, test } from 'bun:test';
import { mkdir, readdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { anthropicEnv, runConch, useHarness, writeConfig } from '../support/cli.ts';

const harness = useHarness(async (d) => {
  await mkdir(join(d.home, 'notes'), { recursive: true });
  await writeFile(join(d.home, 'notes', 'Alpha.md'), '# Alpha\n');
  await writeFile(join(d.home, 'notes', 'Index.md'), 'See [[Alpha]].\n');
  await writeConfig(d, { plugins: { vault: { root: '~/notes' } } });
});

test('note_rename and note_create refuse a name with # | ^ [ or ], and nothing changes', async () => {
  const bad = ['Alpha#2', 'Alpha|old', 'Alpha^x', '[[Beta]]', 'Sub/a]b'];
  harness.server.script([
    { toolCalls: [...bad.map((to) => ({ name: 'note_rename', arguments: { note: 'Alpha', to } })), { name: 'note_create', arguments: { path: 'New#1', content: 'x' } }] },
    { text: 'done' },
  ]);
  const r = await runConch({ dirs: harness.dirs, args: ['--model', 'anthropic/test-model', '--plugin', 'vault', 'rename alpha'], env: anthropicEnv(harness.server.anthropicBaseUrl) });
  expect(r.code).toBe(0);
  const results = (harness.server.requests[1]!.body.messages.at(-1).content as { type: string; content: unknown }[])
    .filter((c) => c.type === 'tool_result')
    .map((c) => (typeof c.content === 'string' ? c.content : (c.content as { text: string }[]).map((b) => b.text).join('')));
  for (const [i, name] of [...bad, 'New#1'].entries()) {
    expect(results[i]).toBe(`'${name}' cannot be a note's name: a [[link]] reads # | ^ [ ] as its own syntax, so no link could lead to it. Choose a name without them.`);
  }
  expect((await readdir(join(harness.dirs.home, 'notes'))).sort()).toEqual(['Alpha.md', 'Index.md']);
  expect(await readFile(join(harness.dirs.home, 'notes', 'Index.md'), 'utf8')).toBe('See [[Alpha]].\n');
});
