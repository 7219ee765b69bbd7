// The import graph of src/, read from the source text (static, type-only and dynamic imports all
// count: a type import is still a dependency of the design). Used by the layering test and, run
// directly (`bun test/support/import-graph.ts [--files]`), prints the graph between folders.
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';

export const SRC = resolve(import.meta.dir, '../../src');

export interface ImportEdge {
  from: string; // file, relative to src/
  to: string; // file, relative to src/
  typeOnly: boolean;
}

function sourceFiles(dir: string): string[] {
  const out: string[] = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) out.push(...sourceFiles(path));
    else if (entry.name.endsWith('.ts')) out.push(path);
  }
  return out.sort();
}

// `import x from '…'`, `import type …`, `export … from '…'`, `import '…'` and `import('…')`.
const STATIC = /^\s*(import|export)\s+(type\s+)?[^'";]*?\bfrom\s+['"]([^'"]+)['"]/gm;
const BARE = /^\s*import\s+['"]([^'"]+)['"]/gm;
const DYNAMIC = /\bimport\(\s*['"]([^'"]+)['"]\s*\)/g;

function stripComments(text: string): string {
  return text.replace(/\/\*[\s\S]*?\*\//g, '').replace(/(^|[^:'"`])\/\/.*$/gm, '$1');
}

export function importEdges(root = SRC): ImportEdge[] {
  const edges: ImportEdge[] = [];
  for (const file of sourceFiles(root)) {
    const text = stripComments(readFileSync(file, 'utf8'));
    const found: { spec: string; typeOnly: boolean }[] = [];
    for (const m of text.matchAll(STATIC)) found.push({ spec: m[3]!, typeOnly: Boolean(m[2]) });
    for (const m of text.matchAll(BARE)) found.push({ spec: m[1]!, typeOnly: false });
    for (const m of text.matchAll(DYNAMIC)) found.push({ spec: m[1]!, typeOnly: false });
    for (const { spec, typeOnly } of found) {
      if (!spec.startsWith('.')) continue; // packages and node: builtins are not layers
      const target = resolve(dirname(file), spec);
      if (!target.startsWith(root + '/') || !target.endsWith('.ts')) continue; // package.json and such
      edges.push({ from: relative(root, file), to: relative(root, target), typeOnly });
    }
  }
  return edges;
}

// The layer a file belongs to: its folder under src/ (tools/kernel counts as its own folder), or
// the file's own name for the few files that sit in src/ itself.
export function folderOf(file: string): string {
  const parts = file.split('/');
  if (parts.length === 1) return parts[0]!.replace(/\.ts$/, '');
  if (parts[0] === 'tools' && parts[1] === 'kernel' && parts.length > 2) return 'tools/kernel';
  return parts[0]!;
}

export function folderEdges(edges: ImportEdge[]): Map<string, Map<string, number>> {
  const graph = new Map<string, Map<string, number>>();
  for (const e of edges) {
    const a = folderOf(e.from);
    const b = folderOf(e.to);
    if (a === b) continue;
    const row = graph.get(a) ?? new Map<string, number>();
    row.set(b, (row.get(b) ?? 0) + 1);
    graph.set(a, row);
  }
  return graph;
}

// Strongly connected components with more than one member (Tarjan): each one is an import cycle.
export function cycles(graph: Map<string, Iterable<string>>): string[][] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const out: string[][] = [];
  let next = 0;
  const nodes = new Set<string>();
  for (const [a, bs] of graph) {
    nodes.add(a);
    for (const b of bs) nodes.add(b);
  }
  const visit = (v: string): void => {
    index.set(v, next);
    low.set(v, next);
    next++;
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) === index.get(v)) {
      const component: string[] = [];
      let w: string;
      do {
        w = stack.pop()!;
        onStack.delete(w);
        component.push(w);
      } while (w !== v);
      if (component.length > 1) out.push(component.sort());
    }
  };
  for (const v of [...nodes].sort()) if (!index.has(v)) visit(v);
  return out;
}

export function fileGraph(edges: ImportEdge[]): Map<string, Set<string>> {
  const graph = new Map<string, Set<string>>();
  for (const e of edges) {
    const row = graph.get(e.from) ?? new Set<string>();
    row.add(e.to);
    graph.set(e.from, row);
  }
  return graph;
}

function print(showFiles: boolean): void {
  const edges = importEdges();
  const folders = folderEdges(edges);
  console.log('# imports between folders of src/ (count of import statements)');
  for (const a of [...folders.keys()].sort()) {
    const row = folders.get(a)!;
    const targets = [...row.keys()].sort().map((b) => `${b}(${row.get(b)})`);
    console.log(`${a.padEnd(13)} -> ${targets.join(' ')}`);
  }
  const folderCycles = cycles(new Map([...folders].map(([a, row]) => [a, [...row.keys()]])));
  console.log(`# folder cycles: ${folderCycles.length}`);
  for (const c of folderCycles) console.log(`  ${c.length} folders: ${c.join(' ')}`);
  const fileCycles = cycles(fileGraph(edges));
  console.log(`# file cycles: ${fileCycles.length}`);
  for (const c of fileCycles) console.log(`  ${c.join(' ')}`);
  if (showFiles) {
    console.log('# file edges between folders');
    for (const e of edges) {
      if (folderOf(e.from) !== folderOf(e.to)) console.log(`  ${e.from} -> ${e.to}${e.typeOnly ? ' (type)' : ''}`);
    }
  }
}

if (import.meta.main) print(process.argv.includes('--files'));
