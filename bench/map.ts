// Figures for the map plugin's index on a generated 5,000-file repository (TypeScript, Python, Go,
// Rust and plain files): the first index, an update with nothing changed, and an incremental update
// after touching one file. The baseline is the bare walk (stat of every file) in the same run.
// Run: ./node_modules/.bin/bun bench/map.ts
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { forgetMemory, updateIndex } from '../plugins/map/store.ts';
import { walk } from '../plugins/map/walk.ts';

const FILES = 5000;
const base = await mkdtemp(join(tmpdir(), 'conch-bench-map-'));
const root = join(base, 'repo');
const env = { XDG_CACHE_HOME: join(base, 'cache') };
const all = async () => true;

const SOURCES: [string, (i: number) => string][] = [
  ['ts', (i) => `/** Module ${i}. */\nexport interface Item${i} { id: number }\n\nexport class Store${i} {\n  private items: Item${i}[] = [];\n  /** Add one. */\n  add(item: Item${i}): void {\n    this.items.push(item);\n  }\n  get(i: number): Item${i} | undefined {\n    return this.items[i];\n  }\n}\n\nexport const double${i} = (x: number) => x * 2;\n`],
  ['py', (i) => `"""Module ${i}."""\n\nclass Shape${i}:\n    """A shape."""\n    def area(self) -> float:\n        return 0.0\n\ndef load_${i}(path: str) -> dict:\n    return {}\n`],
  ['go', (i) => `// Package p${i} does things.\npackage p${i}\n\n// Cache${i} holds entries.\ntype Cache${i} struct{ items map[string]int }\n\nfunc (c *Cache${i}) Get(k string) int { return c.items[k] }\n\nfunc New${i}() *Cache${i} { return &Cache${i}{} }\n`],
  ['rs', (i) => `//! Crate ${i}.\n\n/// A point.\npub struct Point${i} { x: i32 }\n\nimpl Point${i} {\n    pub fn norm(&self) -> i32 { self.x.abs() }\n}\n\npub fn make_${i}() -> Point${i} { Point${i} { x: ${i} } }\n`],
  ['md', (i) => `# Notes ${i}\n\nplain text, listed unparsed\n`],
];

try {
  for (let i = 0; i < FILES; i++) {
    const [ext, source] = SOURCES[i % SOURCES.length]!;
    const dir = join(root, `pkg${Math.floor(i / 100)}`, `mod${Math.floor(i / 10) % 10}`);
    if (i % 10 === 0) await mkdir(dir, { recursive: true });
    await writeFile(join(dir, `file${i}.${ext}`), source(i));
  }

  const time = async <T>(f: () => Promise<T>): Promise<[number, T]> => {
    const started = performance.now();
    const value = await f();
    return [performance.now() - started, value];
  };
  const [walkMs] = await time(() => walk(root, all));
  const [firstMs, first] = await time(() => updateIndex(root, all, { env }));
  forgetMemory(); // as a new conch process would: start from the stored index
  const [unchangedMs] = await time(() => updateIndex(root, all, { env }));
  await writeFile(join(root, 'pkg7', 'mod3', 'file730.ts'), SOURCES[0]![1](730).replace('add(item', 'insert(item'));
  forgetMemory();
  const [touchedMs, touched] = await time(() => updateIndex(root, all, { env }));

  const symbols = Object.values(first.index.files).reduce((n, f) => n + (f.symbols?.length ?? 0), 0);
  console.log(`map: repository ${first.stats.files} files, ${first.stats.parsed} parsed, ${symbols} symbols`);
  console.log(`map: walk only (baseline) ${walkMs.toFixed(0)} ms`);
  console.log(`map: first index ${firstMs.toFixed(0)} ms (${(firstMs / walkMs).toFixed(1)}x walk)`);
  console.log(`map: update, nothing changed, from the stored index ${unchangedMs.toFixed(0)} ms (${(unchangedMs / walkMs).toFixed(1)}x walk)`);
  console.log(`map: update after touching one file ${touchedMs.toFixed(0)} ms (${(touchedMs / walkMs).toFixed(1)}x walk; hashed ${touched.stats.hashed}, parsed ${touched.stats.parsed})`);
} finally {
  await rm(base, { recursive: true, force: true });
}
