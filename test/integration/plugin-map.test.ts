// The map plugin end to end: `--plugin map`, the real CLI, the real SDKs and the local model server.
// The fixture repository has code in four languages and noise folders that must fold.
import { describe, expect, test } from 'bun:test';
import { existsSync, readdirSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { anthropicEnv, openaiEnv, runConch, useHarness } from '../support/cli.ts';

const FIXTURE: Record<string, string> = {
  '.gitignore': 'secret-build/\n*.log\n',
  'src/store.ts': [
    '// Store: keeps items in memory.',
    "import { join } from 'node:path';",
    '',
    '/** Adds two numbers. */',
    'export function add(a: number, b: number): number {',
    '  return a + b;',
    '}',
    '',
    'export class Store<T> {',
    '  private items: T[] = [];',
    '  /** Look one item up by position. */',
    '  get(i: number): T | undefined {',
    '    return this.items[i];',
    '  }',
    '}',
    '',
  ].join('\n'),
  'src/geometry.py': [
    '"""Geometry helpers."""',
    '',
    'class Circle:',
    '    """A circle."""',
    '    def area(self, r: float) -> float:',
    '        """Area of the circle."""',
    '        return 3.14 * r * r',
    '',
  ].join('\n'),
  'src/cache.go': [
    '// Package cache stores values.',
    'package cache',
    '',
    '// Cache holds entries.',
    'type Cache struct {',
    '\titems map[string]int',
    '}',
    '',
    '// Lookup returns an entry.',
    'func (c *Cache) Lookup(key string) (int, bool) {',
    '\tv, ok := c.items[key]',
    '\treturn v, ok',
    '}',
    '',
  ].join('\n'),
  'src/point.rs': [
    '//! Points on a plane.',
    '',
    '/// A point.',
    'pub struct Point { x: i32 }',
    '',
    'impl Point {',
    '    /// Distance from the origin along x.',
    '    pub fn norm(&self) -> f64 {',
    '        (self.x as f64).abs()',
    '    }',
    '}',
    '',
  ].join('\n'),
  // Ranking: a name match beats a signature match beats a doc match.
  'src/rank.ts': [
    '/** Mentions parseConfig in its doc only. */',
    'export function loader(): void {}',
    '',
    'export function reader(parseConfigFn: () => void): void {}',
    '',
    'export function parseConfig(text: string): object {',
    '  return {};',
    '}',
    '',
  ].join('\n'),
  'README.txt': 'plain text\nnot parsed\n',
  'test/store.test.ts': 'export function testAdd() {}\n',
  'test/more.test.ts': 'export function testMore() {}\n',
  'docs/guide.md': '# Guide\n',
  'vendor/lib.js': 'function vendored() {}\n',
  '.github/workflows/ci.yml': 'on: push\n',
  'secret-build/out.ts': 'export function ignoredByGitignore() {}\n',
  'debug.log': 'noise\n',
};

const harness = useHarness(async (d) => {
  for (const [path, text] of Object.entries(FIXTURE)) {
    await mkdir(dirname(join(d.workspace, path)), { recursive: true });
    await writeFile(join(d.workspace, path), text);
  }
});

type Call = { name: string; arguments: Record<string, unknown> };
const anthropic = (calls: Call[][]) => run(calls, ['--model', 'anthropic/test-model'], anthropicEnv(harness.server.anthropicBaseUrl));

async function run(turns: Call[][], model: string[], env: Record<string, string>) {
  harness.server.script([...turns.map((toolCalls) => ({ toolCalls })), { text: 'done' }]);
  const r = await runConch({ dirs: harness.dirs, args: [...model, '--plugin', 'map', 'look around'], env });
  expect(r.stderr).not.toContain('failed');
  expect(r.code).toBe(0);
  return r;
}

/** The text of every tool result sent back in request `n` (Anthropic wire). */
function results(n: number): string[] {
  const content = harness.server.requests[n]!.body.messages.at(-1).content as { type: string; content: unknown }[];
  return content.filter((c) => c.type === 'tool_result').map((c) => (typeof c.content === 'string' ? c.content : JSON.stringify(c.content)));
}

const workspaceFiles = () => readdirSync(harness.dirs.workspace, { recursive: true }).map(String).sort();

describe('map plugin through the CLI', () => {
  test('map_overview: counts, .gitignore honoured, noise folders folded into one line each and opened on request', async () => {
    const before = workspaceFiles();
    await anthropic([[{ name: 'map_overview', arguments: {} }], [{ name: 'map_overview', arguments: { path: 'test' } }]]);
    const tools = harness.server.requests[0]!.body.tools.map((t: { name: string }) => t.name);
    expect(tools).toEqual(expect.arrayContaining(['map_overview', 'map_file', 'map_read', 'map_search']));
    const [tree] = results(1);
    expect(tree).toContain('src/ — 5 files');
    expect(tree).toContain('store.ts — 15 lines · 3 symbols');
    expect(tree).toContain('README.txt — 2 lines');
    for (const [name, kind] of [['test', 'tests'], ['docs', 'docs'], ['vendor', 'vendored'], ['.github', 'ci']]) {
      expect(tree).toContain(`${name}/ — ${kind}, folded:`);
      expect(tree).toContain(`map_overview {\\"path\\":\\"${name}\\"}`);
    }
    // Folded: none of the noise folders' files are listed.
    expect(tree).not.toContain('more.test.ts');
    expect(tree).not.toContain('secret-build');
    expect(tree).not.toContain('debug.log');
    const [opened] = results(2);
    expect(opened).toContain('test/ — 2 files');
    expect(opened).toContain('more.test.ts — 1 line');
    // The index lives in the cache folder, outside the workspace, and nothing was written there.
    expect(workspaceFiles()).toEqual(before);
    expect(readdirSync(join(harness.dirs.home, '.cache', 'conch', 'map')).filter((f) => f.endsWith('.json'))).toHaveLength(1);
  });

  test("map_file with symbol: a symbol's body by name in TypeScript, Python, Go and Rust", async () => {
    await anthropic([
      [
        { name: 'map_file', arguments: { path: 'src/store.ts', symbol: 'Store.get' } },
        { name: 'map_file', arguments: { path: 'src/geometry.py', symbol: 'area' } },
        { name: 'map_file', arguments: { path: 'src/cache.go', symbol: 'Lookup' } },
        { name: 'map_file', arguments: { path: 'src/point.rs', symbol: 'norm' } },
        { name: 'map_file', arguments: { path: 'src/store.ts' } },
      ],
    ]);
    const [ts, py, go, rs, outline] = results(1);
    expect(ts).toContain('src/store.ts:L11-L14 method Store.get');
    expect(ts).toContain('12\\t  get(i: number): T | undefined {');
    expect(ts).toContain('return this.items[i];');
    expect(ts).not.toContain('return a + b');
    expect(py).toContain('src/geometry.py:L5-L7 function Circle.area');
    expect(py).toContain('return 3.14 * r * r');
    expect(go).toContain('src/cache.go:L9-L13 method Cache.Lookup');
    expect(go).toContain('v, ok := c.items[key]');
    expect(rs).toContain('src/point.rs:L7-L10 fn Point.norm');
    expect(rs).toContain('(self.x as f64).abs()');
    // Without symbol: the head and the outline, no bodies.
    expect(outline).toContain('# Store: keeps items in memory.');
    expect(outline).toContain('symbols: add, Store');
    expect(outline).toContain('L4-L7 function add: function add(a: number, b: number): number');
    expect(outline).not.toContain('return a + b');
  });

  test('map_search ranks name, then signature, then doc; map_read reads the ref it hands out (OpenAI wire too)', async () => {
    harness.server.script([
      { toolCalls: [{ name: 'map_search', arguments: { query: 'parseConfig' } }, { name: 'map_read', arguments: { ref: 'src/rank.ts:L6-L8' } }, { name: 'map_read', arguments: { ref: 'src/../../etc/passwd' } }] },
      { text: 'done' },
    ]);
    const r = await runConch({ dirs: harness.dirs, args: ['--model', 'openai/test-model', '--plugin', 'map', 'find it'], env: openaiEnv(harness.server.openaiBaseUrl) });
    expect(r.code).toBe(0);
    const toolMessages = harness.server.requests[1]!.body.messages.filter((m: { role: string }) => m.role === 'tool').map((m: { content: unknown }) => (typeof m.content === 'string' ? m.content : JSON.stringify(m.content)));
    const [found, read, outside] = toolMessages as string[];
    const order = ['function parseConfig (name)', 'function reader (signature)', 'function loader (doc)'].map((s) => found!.indexOf(s));
    expect(order.every((i) => i >= 0)).toBe(true);
    expect(order).toEqual([...order].sort((a, b) => a - b));
    expect(found).toContain('map_read {"ref":"src/rank.ts:L6-L8"}');
    expect(read).toContain('src/rank.ts:L6-L8 of 8');
    expect(read).toContain('6\texport function parseConfig(text: string): object {');
    expect(read).not.toContain('loader');
    expect(outside).not.toContain('root:');
  });

  test('an edit between calls is picked up: the index updates incrementally, in the run and in the next one', async () => {
    await anthropic([
      [{ name: 'map_search', arguments: { query: 'renamedLookup' } }],
      [{ name: 'bash', arguments: { command: "sed -i 's/function add/function renamedLookup/' src/store.ts" } }],
      [{ name: 'map_search', arguments: { query: 'renamedLookup' } }],
    ]);
    expect(results(1)[0]).toContain("no symbol matches 'renamedLookup'");
    expect(results(3)[0]).toContain('src/store.ts:L4-L7 function renamedLookup (name)');
    // A second run starts from the stored index and still sees the edit and the other files.
    harness.server.requests.length = 0;
    await writeFile(join(harness.dirs.workspace, 'src/extra.go'), 'package cache\n\nfunc Fresh() int { return 1 }\n');
    await anthropic([[{ name: 'map_search', arguments: { query: 'Fresh' } }, { name: 'map_search', arguments: { query: 'renamedLookup' } }]]);
    expect(results(1)[0]).toContain('src/extra.go:L3-L3 func Fresh (name)');
    expect(results(1)[1]).toContain('src/store.ts:L4-L7 function renamedLookup');
    expect(existsSync(join(harness.dirs.workspace, '.conch'))).toBe(false);
  });

  test('FIFOs the model made (a .gitignore, a source file) are skipped or refused, not opened: a map call hung until abandoned', async () => {
    await anthropic([
      [{ name: 'bash', arguments: { command: 'mkfifo src/.gitignore pipe.ts' } }],
      [{ name: 'map_overview', arguments: {} }],
      [{ name: 'map_read', arguments: { ref: 'pipe.ts' } }],
    ]);
    expect(results(2)[0]).toContain('store.ts — 15 lines · 3 symbols');
    expect(results(2)[0]).not.toContain('abandoned');
    expect(results(3)[0]).toContain('pipe.ts is not a regular file');
  });
});
