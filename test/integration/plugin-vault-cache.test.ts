// The vault index across conch processes: each run is a new process through the real CLI, and the
// second finds what the first stored in conch's cache folder. The cached entry of an unchanged note
// is marked between the runs, so the test sees which notes the second run took from the cache and
// which it read again. Notes are dated an hour back: one changed just before an index is taken is
// parsed again by the next process by design.
import { expect, test } from 'bun:test';
import { readdirSync } from 'node:fs';
import { mkdir, readFile, rm, utimes, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { anthropicEnv, runConch, useHarness, writeConfig } from '../support/cli.ts';

const NOTES: Record<string, string> = {
  'Alpha.md': '# Alpha\n\nSee [[Beta]].\n',
  'Beta.md': '# Beta\n',
  'Gamma.md': '# Gamma\n',
  'Private/Secret.md': '# Secret title\n\nclassified\n',
};

async function put(path: string, text: string): Promise<void> {
  const abs = join(harness.dirs.home, 'notes', path);
  await mkdir(dirname(abs), { recursive: true });
  await writeFile(abs, text);
  const hourAgo = new Date(Date.now() - 3600_000);
  await utimes(abs, hourAgo, hourAgo);
}

const harness = useHarness(async (d) => {
  await writeConfig(d, { plugins: { vault: { root: '~/notes', deny: ['Private'] } } });
});

/** One conch process that lists every note; the text of note_find's result. */
async function listNotes(): Promise<string> {
  harness.server.script([{ toolCalls: [{ name: 'note_find', arguments: {} }] }, { text: 'done' }]);
  const r = await runConch({ dirs: harness.dirs, args: ['--model', 'anthropic/test-model', '--plugin', 'vault', 'list my notes'], env: anthropicEnv(harness.server.anthropicBaseUrl) });
  expect(r.code).toBe(0);
  expect(r.stderr).not.toContain('cache');
  const content = harness.server.requests.at(-1)!.body.messages.at(-1).content as { type: string; content: unknown }[];
  const result = content.find((c) => c.type === 'tool_result')!.content;
  return typeof result === 'string' ? result : (result as { text: string }[]).map((b) => b.text).join('');
}

function cacheFile(): string {
  const dir = join(harness.dirs.home, '.cache', 'conch', 'vault');
  const files = readdirSync(dir);
  expect(files).toHaveLength(1);
  return join(dir, files[0]!);
}

test('a second process takes unchanged notes from the cache, reads an edited one again and drops a deleted one', async () => {
  for (const [path, text] of Object.entries(NOTES)) await put(path, text);
  expect(await listNotes()).toBe('3 notes\nAlpha.md\nBeta.md\nGamma.md');
  const stored = await readFile(cacheFile(), 'utf8');
  expect(stored).not.toContain('Private');
  expect(stored).not.toContain('Secret');

  const cache = JSON.parse(stored);
  cache.notes['Alpha.md'].parsed.title = 'Title only the cache knows';
  await writeFile(cacheFile(), JSON.stringify(cache));
  await put('Beta.md', '# Beta, edited\n');
  await rm(join(harness.dirs.home, 'notes', 'Gamma.md'));
  expect(await listNotes()).toBe('2 notes\nAlpha.md — Title only the cache knows\nBeta.md — Beta, edited');
  expect(Object.keys(JSON.parse(await readFile(cacheFile(), 'utf8')).notes).sort()).toEqual(['Alpha.md', 'Beta.md']);
});

test('a corrupt cache is ignored: the run indexes the vault afresh and stores a good one', async () => {
  for (const [path, text] of Object.entries(NOTES)) await put(path, text);
  await listNotes();
  await writeFile(cacheFile(), '{"version":1,"notes":{"Alpha.md":');
  expect(await listNotes()).toBe('3 notes\nAlpha.md\nBeta.md\nGamma.md');
  expect(Object.keys(JSON.parse(await readFile(cacheFile(), 'utf8')).notes).sort()).toEqual(['Alpha.md', 'Beta.md', 'Gamma.md']);
});
