// The vault index kept between processes (plugins/vault/cache.ts). A new VaultIndex starts with
// nothing in memory, as a new process does; what it knows without reading comes from the file.
// Fixture notes are dated an hour back: a note changed just before the index was taken is parsed
// again by design (its mtime could hide an edit), which would hide the cache from these tests.
import { afterEach, beforeEach, expect, test } from 'bun:test';
import { existsSync, readdirSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, realpath, rm, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { cacheFile } from '../../plugins/vault/cache.ts';
import { VaultIndex } from '../../plugins/vault/notes.ts';
import type { VaultSettings } from '../../plugins/vault/settings.ts';

let base: string;
let root: string;
let file: string;
const all = async () => true;
const hourAgo = () => new Date(Date.now() - 3600_000);

async function note(path: string, text: string, when: Date | null = hourAgo()): Promise<void> {
  await mkdir(dirname(join(root, path)), { recursive: true });
  await writeFile(join(root, path), text);
  if (when) await utimes(join(root, path), when, when);
}

beforeEach(async () => {
  base = await realpath(await mkdtemp(join(tmpdir(), 'conch-vault-cache-')));
  root = join(base, 'notes');
  file = cacheFile(root, { XDG_CACHE_HOME: join(base, 'cache') })!;
  await note('Plan.md', '# Plan\n\nSee [[Alpha]]. #work\n');
  await note('Projects/Alpha.md', '---\ntitle: Alpha project\ntags: [a]\n---\nBack to [[Plan]].\n');
  await note('Private/Secret.md', '# Secret title\n\nclassified words #hidden\n');
});
afterEach(() => rm(base, { recursive: true, force: true }));

const settings = (deny: string[] = []): VaultSettings => ({ root, allow: [], deny: deny.map((d) => join(root, d)) });

async function index(deny: string[] = []): Promise<VaultIndex> {
  const i = new VaultIndex(settings(deny), file);
  await i.refresh(all);
  return i;
}

const titles = (i: VaultIndex) => i.all().map((n) => `${n.path}=${n.title}`);
const stored = async () => JSON.parse(await readFile(file, 'utf8')) as { notes: Record<string, { key: string; parsed: { title: string | null } }> };

test('the cache lives in conch cache folder, not in the vault', () => {
  expect(file.startsWith(join(base, 'cache', 'conch', 'vault') + '/')).toBe(true);
  expect(cacheFile(root, { XDG_CACHE_HOME: join(root, '.cache') })).toBeNull();
});

test('a second process parses nothing that did not change, and gets the same index', async () => {
  const first = await index();
  expect(first.lastRefresh).toEqual({ notes: 3, parsed: 3, cached: 0, removed: 0 });
  const second = await index();
  expect(second.lastRefresh).toEqual({ notes: 3, parsed: 0, cached: 3, removed: 0 });
  expect(second.all().map((n) => n.parsed)).toEqual(first.all().map((n) => n.parsed));
  expect(second.backlinks(second.get('Plan.md')!).map((b) => b.from.path)).toEqual(['Projects/Alpha.md']);
});

test('between runs: an edited note is read again, an unchanged one is taken from the cache, a deleted one is dropped', async () => {
  await index();
  // Mark what only the cache can say: if Plan.md were read again, this title would not survive.
  const s = await stored();
  s.notes['Plan.md']!.parsed.title = 'Title from the cache';
  await writeFile(file, JSON.stringify(s));
  await note('Projects/Alpha.md', '---\ntitle: Alpha, renamed\n---\nNo links any more.\n');
  await rm(join(root, 'Private', 'Secret.md'));
  const next = await index();
  expect(next.lastRefresh).toEqual({ notes: 2, parsed: 1, cached: 1, removed: 1 });
  expect(titles(next)).toEqual(['Plan.md=Title from the cache', 'Projects/Alpha.md=Alpha, renamed']);
  expect(next.backlinks(next.get('Plan.md')!)).toEqual([]);
  expect(Object.keys((await stored()).notes).sort()).toEqual(['Plan.md', 'Projects/Alpha.md']);
});

test('a corrupt, foreign or malformed cache is ignored and rebuilt, never fatal', async () => {
  const good = titles(await index());
  const bad = [
    '{"version":1,"root":', // a run killed mid-write by something that wrote in place
    'not json at all',
    JSON.stringify({ version: 99, root, savedAt: 0, notes: {} }),
    JSON.stringify({ version: 1, root: '/elsewhere', savedAt: Date.now(), notes: {} }),
    JSON.stringify({ version: 1, root, savedAt: Date.now(), notes: { 'Plan.md': { key: 'x', parsed: { links: 'nope' } } } }),
  ];
  for (const text of bad) {
    await writeFile(file, text);
    const i = await index();
    expect(titles(i)).toEqual(good);
    expect(i.lastRefresh.parsed).toBe(3);
    // rebuilt: the next process reads nothing
    expect((await index()).lastRefresh.parsed).toBe(0);
  }
  // An entry whose key matches but whose shape does not is parsed again, not trusted.
  const s = await stored();
  (s.notes['Plan.md']!.parsed as unknown as { links: unknown }).links = [{ kind: 'wiki' }];
  await writeFile(file, JSON.stringify(s));
  const i = await index();
  expect(i.lastRefresh).toEqual({ notes: 3, parsed: 1, cached: 2, removed: 0 });
  expect(i.get('Plan.md')!.parsed.links.map((l) => l.target)).toEqual(['Alpha']);
});

test('nothing from a deny subtree is written, and adding a deny removes what an earlier run stored', async () => {
  await index(['Private']);
  let text = await readFile(file, 'utf8');
  expect(text).not.toContain('Private');
  expect(text).not.toContain('Secret');
  await index(); // a run without the deny stores the note
  expect(await readFile(file, 'utf8')).toContain('Secret title');
  const narrowed = await index(['Private']);
  expect(narrowed.lastRefresh).toEqual({ notes: 2, parsed: 0, cached: 2, removed: 1 });
  text = await readFile(file, 'utf8');
  expect(text).not.toContain('Private');
  expect(text).not.toContain('Secret');
});

test('a note refused by the read policy is not written either', async () => {
  const i = new VaultIndex(settings(), file);
  await i.refresh(async (abs) => !abs.includes('Secret'));
  expect(Object.keys((await stored()).notes).sort()).toEqual(['Plan.md', 'Projects/Alpha.md']);
});

test('a note changed just before the index was taken is read again by the next process', async () => {
  await note('Plan.md', '# Plan now\n', null); // mtime: now
  await index();
  const next = await index();
  expect(next.lastRefresh).toEqual({ notes: 3, parsed: 1, cached: 2, removed: 0 });
  expect(next.get('Plan.md')!.title).toBe('Plan now');
});

test('a YAML value JSON cannot carry is not cached, so the next process parses that note again', async () => {
  await note('Inf.md', '---\nlimit: .inf\n---\nbody\n');
  const first = await index();
  expect(first.get('Inf.md')!.parsed.frontmatter).toEqual({ limit: Infinity });
  expect(Object.keys((await stored()).notes)).not.toContain('Inf.md');
  const next = await index();
  expect(next.get('Inf.md')!.parsed.frontmatter).toEqual({ limit: Infinity });
  expect(next.lastRefresh.parsed).toBe(1);
});

test('a temporary file left by a killed run is ignored, and removed once old; a fresh one is left to its writer', async () => {
  await index();
  const orphan = `${file}.99999.dead.tmp`;
  const fresh = `${file}.99998.live.tmp`;
  await writeFile(orphan, '{"version":1,"root":"'); // half written when the run was killed
  await utimes(orphan, hourAgo(), hourAgo());
  await writeFile(fresh, '{');
  expect((await index()).lastRefresh.parsed).toBe(0);
  await note('Plan.md', '# Plan v2\n');
  expect((await index()).lastRefresh.parsed).toBe(1); // a save: old temporary files go
  expect(existsSync(orphan)).toBe(false);
  expect(existsSync(fresh)).toBe(true);
});

test('two processes indexing and saving at once leave a complete cache and no temporary file', async () => {
  const script = (n: number) =>
    `import { VaultIndex } from ${JSON.stringify(join(import.meta.dir, '../../plugins/vault/notes.ts'))};\n` +
    `import { writeFileSync, utimesSync } from 'node:fs';\n` +
    `const root = ${JSON.stringify(root)};\n` +
    `for (let round = 0; round < 15; round++) {\n` +
    `  writeFileSync(root + '/p${n}.md', '# P${n} round ' + round + '\\n' + 'x'.repeat(round));\n` +
    `  const t = new Date(Date.now() - 3600000); utimesSync(root + '/p${n}.md', t, t);\n` +
    `  const i = new VaultIndex({ root, allow: [], deny: [] }, ${JSON.stringify(file)});\n` +
    `  await i.refresh(async () => true);\n` +
    // Whatever the other wrote meanwhile was complete: at most its note and this one are new to it.
    `  if (round > 0 && i.lastRefresh.parsed > 2) { console.error(JSON.stringify(i.lastRefresh)); process.exit(3); }\n` +
    `}\n`;
  const runs = [1, 2].map((n) => Bun.spawn([process.execPath, '-e', script(n)], { stdout: 'pipe', stderr: 'pipe' }));
  const codes = await Promise.all(runs.map((r) => r.exited));
  expect(codes).toEqual([0, 0]);
  expect(readdirSync(dirname(file)).filter((n) => n.endsWith('.tmp'))).toEqual([]);
  const s = await stored(); // parses: whole
  expect(Object.keys(s.notes)).toContain('Plan.md');
  const last = new VaultIndex(settings(), file);
  await last.refresh(all);
  expect(titles(last)).toEqual(['Plan.md=Plan', 'Private/Secret.md=Secret title', 'Projects/Alpha.md=Alpha project', 'p1.md=P1 round 14', 'p2.md=P2 round 14']);
});
