// Figures for the vault plugin's index on a generated 5,000-note vault (frontmatter, headings,
// wikilinks, tags, a code block each): the first index, a call with nothing changed, a call after
// one note was edited, and one note's backlinks. The baseline is the bare walk (a stat of every
// note) in the same run. Run: ./node_modules/.bin/bun bench/vault.ts
import { mkdir, mkdtemp, readdir, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { VaultIndex } from '../plugins/vault/notes.ts';

const NOTES = 5000;
const root = await mkdtemp(join(tmpdir(), 'conch-bench-vault-'));
const all = async () => true;
const note = (i: number) =>
  `---\ntitle: Note ${i}\ntags: [area${i % 7}]\n---\n# Note ${i}\n\nSee [[note${(i * 7) % NOTES}]] and [[note${(i + 1) % NOTES}#Details|next]]. #topic${i % 13}\n\n` +
  `## Details\n\n- a point about ${i}\n- another, with \`code [[not a link]]\`\n\n\`\`\`\n[[inside code]]\n\`\`\`\n`;

try {
  for (let i = 0; i < NOTES; i++) {
    const dir = join(root, `area${Math.floor(i / 100)}`);
    if (i % 100 === 0) await mkdir(dir, { recursive: true });
    await writeFile(join(dir, `note${i}.md`), note(i));
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
} finally {
  await rm(root, { recursive: true, force: true });
}
