// The map's symbols: what tree-sitter's grammars yield per language, and the ranking of a search.
import { expect, test } from 'bun:test';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { grammarFor, parseSource } from '../../plugins/map/parse.ts';
import type { MapIndex } from '../../plugins/map/store.ts';
import { search } from '../../plugins/map/view.ts';

const outline = async (file: string, source: string) => {
  const parsed = (await parseSource(grammarFor(file)!, source))!;
  return { head: parsed.head, symbols: parsed.symbols.map((s) => `${s.start}-${s.end} ${s.kind} ${s.qualified} | ${s.signature} | ${s.doc}`) };
};

test('TypeScript and TSX: functions, classes with methods, arrow consts, interfaces; doc comments and the module doc', async () => {
  const ts = await outline('a.ts', '// Store module.\nimport x from "y";\n\n/** Adds. */\nexport function add(a: number): number {\n  return a;\n}\nexport class Store {\n  /** One. */\n  get(i: number) { return i; }\n}\nexport const mul = (a: number) => a * 2;\ninterface Shape { area(): number }\n');
  expect(ts.head).toBe('Store module.');
  expect(ts.symbols).toEqual([
    '4-7 function add | function add(a: number): number | Adds.',
    '8-11 class Store | class Store | ',
    '9-10 method Store.get | get(i: number) | One.',
    '12-12 function mul | const mul = (a: number) => | ',
    '13-13 interface Shape | interface Shape | ',
  ]);
  const tsx = await outline('v.tsx', 'export function View() {\n  return <div>hi</div>;\n}\n');
  expect(tsx.symbols).toEqual(['1-3 function View | function View() | ']);
});

test('Python, Go and Rust: containers qualify their members; docstrings and /// docs; decorators are in the span', async () => {
  const py = await outline('g.py', '"""Geometry."""\n\nclass Circle:\n    """A circle."""\n    def area(self) -> float:\n        return 1.0\n\n@cache\ndef load(path: str) -> dict:\n    return {}\n');
  expect(py.head).toBe('Geometry.');
  expect(py.symbols).toEqual(['3-6 class Circle | class Circle | A circle.', '5-6 function Circle.area | def area(self) -> float | ', '8-10 function load | def load(path: str) -> dict | ']);
  const go = await outline('c.go', '// Package cache.\npackage cache\n\n// Cache holds.\ntype Cache struct{ n int }\n\nfunc (c *Cache) Get(k string) int { return c.n }\n');
  expect(go.head).toBe('Package cache.');
  expect(go.symbols).toEqual(['4-5 type Cache | type Cache struct{ n int } | Cache holds.', '7-7 method Cache.Get | func (c *Cache) Get(k string) int | ']);
  const rs = await outline('p.rs', '//! Points.\n\n/// A point.\npub struct Point { x: i32 }\n\nimpl Point {\n    pub fn norm(&self) -> i32 { self.x }\n}\n');
  expect(rs.head).toBe('Points.');
  expect(rs.symbols).toEqual(['3-4 struct Point | pub struct Point | A point.', '6-8 impl Point | impl Point | ', '7-7 fn Point.norm | pub fn norm(&self) -> i32 | ']);
});

test('search ranks exact name, prefix, part of a name (all words of a multi-word query), signature, doc', async () => {
  const parsed = (await parseSource('typescript', [
    '/** Uses parseConfig. */', 'function loader() {}',
    'function reader(parseConfig: string) {}',
    'function parseConfigFile() {}',
    'function parseConfig() {}',
    'function strictParseConfig() {}',
  ].join('\n')))!;
  const index: MapIndex = { version: 1, root: '/r', files: { 'a.ts': { size: 0, mtimeMs: 0, hash: '', lines: 6, symbols: parsed.symbols } } };
  expect(search(index, 'parseConfig', 10).hits.map((h) => h.symbol.name)).toEqual(['parseConfig', 'parseConfigFile', 'strictParseConfig', 'reader', 'loader']);
  expect(search(index, 'parse config', 10).hits.map((h) => h.symbol.name)).toEqual(['parseConfig', 'parseConfigFile', 'strictParseConfig']);
  expect(search(index, 'parseConfig', 2)).toMatchObject({ total: 5 });
});

test('the parsers load lazily: no plugin file imports web-tree-sitter or the grammars at module level', () => {
  const dir = join(import.meta.dir, '../../plugins/map');
  for (const file of readdirSync(dir)) {
    const text = readFileSync(join(dir, file), 'utf8');
    expect(text).not.toMatch(/^import\s+(?!type\b)[^;]*from\s+'(web-tree-sitter|@vscode\/tree-sitter-wasm)/m);
  }
  expect(readFileSync(join(dir, 'parse.ts'), 'utf8')).toContain("await import('web-tree-sitter')");
});
