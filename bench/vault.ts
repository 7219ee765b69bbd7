// Figures for the vault plugin's index on a generated 5,000-note vault (frontmatter, headings,
// wikilinks, tags, a code block each): the first index, a call with nothing changed, a call after
// one note was edited, and one note's backlinks; then the first index of a new process without
// the stored cache (cold) and with it (warm), each in a child process of its own. The baseline is
// the bare walk (a stat of every note) in the same run. Run: ./node_modules/.bin/bun bench/vault.ts
import { mkdir, mkdtemp, readdir, rm, stat, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { VaultIndex } from '../plugins/vault/notes.ts';

const all = async () => true;

// The child: one new process's first index, with the cache file given; prints its time and counts.
if (process.argv[2] === '--start') {
  const [root, cache] = process.argv.slice(3) as [string, string];
  const index = new VaultIndex({ root, allow: [], deny: [] }, cache);
  const started = performance.now();
  await index.refresh(all);
  console.log(JSON.stringify({ ms: performance.now() - started, ...index.lastRefresh }));
  process.exit(0);
}

const NOTES = 5000;
const root = await mkdtemp(join(tmpdir(), 'conch-bench-vault-'));
const note = (i: number) =>
  `---\ntitle: Note ${i}\ntags: [area${i % 7}]\n---\n# Note ${i}\n\nSee [[note${(i * 7) % NOTES}]] and [[note${(i + 1) % NOTES}#Details|next]]. #topic${i % 13}\n\n` +
  `## Details\n\n- a point about ${i}\n- another, with \`code [[not a link]]\`\n\n\`\`\`\n[[inside code]]\n\`\`\`\n`;

try {
  for (let i = 0; i < NOTES; i++) {
    const dir = join(root, `area${Math.floor(i / 100)}`);
    if (i % 100 === 0) await mkdir(dir, { recursive: true });
    await writeFile(join(dir, `note${i}.md`), note(i));
    // Dated back, as a vault's notes are: one changed in the last seconds is parsed again by design.
    const then = new Date(Date.now() - 3600_000);
    await utimes(join(dir, `note${i}.md`), then, then);
  }
  const time = async (f: () => Promise<unknown>): Promise<number> => {
    const started = performance.now();
    await f();
    return performance.now() - started;
  };
  const walkMs = await time(async () => {
    for (const dir of await readdir(root)) for (const f of await readdir(join(root, dir))) await stat(join(root, dir, f));
  });
  const index = new VaultIndex({ root, allow: [], deny: [] });
  const firstMs = await time(() => index.refresh(all));
  const unchangedMs = await time(() => index.refresh(all));
  await writeFile(join(root, 'area7', 'note730.md'), `${note(730)}\nedited [[note1]]\n`);
  const editedMs = await time(() => index.refresh(all));
  const target = index.get('area0/note1.md')!;
  let incoming = 0;
  const backlinksMs = await time(async () => void (incoming = index.backlinks(target).length));
  const links = index.all().reduce((n, x) => n + x.parsed.links.length, 0);
  console.log(`vault: ${index.all().length} notes, ${links} links`);
  console.log(`vault: walk only (baseline) ${walkMs.toFixed(0)} ms`);
  console.log(`vault: first index ${firstMs.toFixed(0)} ms (${(firstMs / walkMs).toFixed(1)}x walk)`);
  console.log(`vault: call with nothing changed ${unchangedMs.toFixed(0)} ms (${(unchangedMs / walkMs).toFixed(1)}x walk)`);
  console.log(`vault: call after editing one note ${editedMs.toFixed(0)} ms (${(editedMs / walkMs).toFixed(1)}x walk)`);
  console.log(`vault: backlinks of one note (${incoming} links) ${backlinksMs.toFixed(0)} ms (${(backlinksMs / walkMs).toFixed(1)}x walk)`);
  const cache = join(root, '..', `${root.split('/').at(-1)}-cache.json`);
  const start = () => {
    const child = Bun.spawnSync([process.execPath, import.meta.path, '--start', root, cache]);
    if (child.exitCode !== 0) throw new Error(child.stderr.toString());
    return JSON.parse(child.stdout.toString()) as { ms: number; parsed: number; cached: number };
  };
  await rm(cache, { force: true });
  const cold = start();
  const warm = start();
  await rm(cache, { force: true });
  console.log(`vault: new process, cold cache ${cold.ms.toFixed(0)} ms (${(cold.ms / walkMs).toFixed(1)}x walk; ${cold.parsed} parsed, stores the cache)`);
  console.log(`vault: new process, warm cache ${warm.ms.toFixed(0)} ms (${(warm.ms / walkMs).toFixed(1)}x walk; ${warm.parsed} parsed, ${warm.cached} from the cache; ${(cold.ms / warm.ms).toFixed(1)}x faster than cold)`);
} finally {
  await rm(root, { recursive: true, force: true });
}
