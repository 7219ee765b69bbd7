// What the map tools print: the folder tree with noise folded, a file's outline, numbered source.
import type { MapSymbol } from './parse.ts';
import type { FileEntry, MapIndex } from './store.ts';
import { noiseKind } from './walk.ts';

/** The cap on source one call returns (map_read, map_file with a symbol). */
export const MAX_SOURCE_BYTES = 64 * 1024;
const MAX_OVERVIEW_LINES = 400;

interface Folder {
  files: number;
  lines: number;
  children: Map<string, Folder>;
  leaves: Map<string, FileEntry>;
}

const newFolder = (): Folder => ({ files: 0, lines: 0, children: new Map(), leaves: new Map() });
const count = (n: number) => n.toLocaleString('en-US');
const plural = (n: number, word: string) => `${count(n)} ${word}${n === 1 ? '' : 's'}`;
export const call = (tool: string, args: Record<string, unknown>) => `${tool} ${JSON.stringify(args)}`;

/** The tree under `base` ('' for the root), `depth` folder levels deep. */
export function overview(index: MapIndex, base: string, depth: number): string | null {
  const root = newFolder();
  const prefix = base ? `${base}/` : '';
  for (const [path, entry] of Object.entries(index.files)) {
    if (base && !path.startsWith(prefix)) continue;
    const parts = path.slice(prefix.length).split('/');
    let folder = root;
    const add = (f: Folder) => {
      f.files++;
      f.lines += entry.lines;
    };
    add(root);
    for (const part of parts.slice(0, -1)) {
      let child = folder.children.get(part);
      if (!child) folder.children.set(part, (child = newFolder()));
      add(child);
      folder = child;
    }
    folder.leaves.set(parts.at(-1)!, entry);
  }
  if (root.files === 0) return null;
  const out: string[] = [`${base || '.'}/ — ${plural(root.files, 'file')}, ${plural(root.lines, 'line')}`];
  const render = (folder: Folder, path: string, level: number) => {
    const indent = '  '.repeat(level);
    for (const [name, child] of [...folder.children].sort(([a], [b]) => (a < b ? -1 : 1))) {
      const childPath = path ? `${path}/${name}` : name;
      const sizes = `${plural(child.files, 'file')}, ${plural(child.lines, 'line')}`;
      const kind = noiseKind(name);
      if (kind) {
        out.push(`${indent}${name}/ — ${kind}, folded: ${sizes} · open with ${call('map_overview', { path: childPath })}`);
      } else if (level + 1 >= depth) {
        out.push(`${indent}${name}/ — ${sizes}`);
      } else {
        out.push(`${indent}${name}/ — ${sizes}`);
        render(child, childPath, level + 1);
      }
    }
    for (const [name, entry] of [...folder.leaves].sort(([a], [b]) => (a < b ? -1 : 1))) {
      const what = entry.binary ? 'binary' : plural(entry.lines, 'line');
      const symbols = entry.symbols ? ` · ${plural(entry.symbols.length, 'symbol')}` : '';
      out.push(`${indent}${name} — ${what}${symbols}`);
    }
  };
  render(root, base, 0);
  if (out.length > MAX_OVERVIEW_LINES) {
    return `${out.slice(0, MAX_OVERVIEW_LINES).join('\n')}\n… ${count(out.length - MAX_OVERVIEW_LINES)} more lines: narrow with path, or lower depth`;
  }
  return out.join('\n');
}

/** A file's head and outline: module doc, symbol names, then each symbol's signature and span. */
export function outline(path: string, entry: FileEntry, firstLines: string[]): string {
  const out = [`${path} — ${entry.binary ? 'binary' : plural(entry.lines, 'line')}${entry.grammar ? ` (${entry.grammar})` : ', not parsed'}`];
  if (!entry.symbols) {
    if (!entry.binary && firstLines.length) {
      out.push(`first ${plural(firstLines.length, 'line')}:`, numbered(firstLines, 1));
      if (entry.lines > firstLines.length) out.push(`read further with ${call('map_read', { ref: `${path}:L${firstLines.length + 1}-L${Math.min(entry.lines, firstLines.length + 200)}` })}`);
    }
    return out.join('\n');
  }
  if (entry.head) out.push(entry.head.split('\n').slice(0, 12).map((l) => `# ${l}`).join('\n'));
  const top = entry.symbols.filter((s) => s.depth === 0).map((s) => s.name);
  out.push(`symbols: ${top.length ? top.join(', ') : '(none)'}`);
  for (const s of entry.symbols) out.push(`${'  '.repeat(s.depth + 1)}L${s.start}-L${s.end} ${s.kind} ${s.qualified}: ${s.signature}`);
  out.push(`a body: ${call('map_file', { path, symbol: top[0] ?? 'NAME' })}; lines: ${call('map_read', { ref: `${path}:L1-L40` })}`);
  return out.join('\n');
}

/** Symbols named `wanted`: the qualified name exactly, then the plain name, then either ignoring case. */
export function findSymbol(symbols: MapSymbol[], wanted: string): MapSymbol[] {
  const lower = wanted.toLowerCase();
  for (const test of [
    (s: MapSymbol) => s.qualified === wanted,
    (s: MapSymbol) => s.name === wanted,
    (s: MapSymbol) => s.qualified.toLowerCase() === lower || s.name.toLowerCase() === lower,
  ]) {
    const found = symbols.filter(test);
    if (found.length) return found;
  }
  return [];
}

/** Lines `from`..`to` (1-based) with their numbers, cut at MAX_SOURCE_BYTES with a note how to go on. */
export function numberedSlice(path: string, lines: string[], from: number, to: number): string {
  const last = Math.min(to, lines.length);
  const width = String(last).length;
  const out: string[] = [];
  let bytes = 0;
  for (let n = from; n <= last; n++) {
    const line = `${String(n).padStart(width)}\t${lines[n - 1]}`;
    bytes += Buffer.byteLength(line) + 1;
    if (bytes > MAX_SOURCE_BYTES && out.length > 0) {
      out.push(`… cut at ${MAX_SOURCE_BYTES / 1024} KB; go on with ${call('map_read', { ref: `${path}:L${n}-L${last}` })}`);
      break;
    }
    out.push(line);
  }
  return out.join('\n');
}

function numbered(lines: string[], first: number): string {
  const width = String(first + lines.length - 1).length;
  return lines.map((l, i) => `${String(first + i).padStart(width)}\t${l}`).join('\n');
}

export interface Hit {
  path: string;
  symbol: MapSymbol;
  tier: number;
}

const TIERS = ['name', 'name', 'name', 'signature', 'doc'];

/** Ranked symbol search: exact name, name prefix, name substring, then signature, then doc comment. */
export function search(index: MapIndex, query: string, limit: number): { hits: Hit[]; total: number } {
  const q = query.toLowerCase().trim();
  // "parse config" finds parseConfig and parse_config: every word in the name counts as a name match.
  const words = q.split(/[^a-z0-9]+/).filter(Boolean);
  const hits: Hit[] = [];
  for (const [path, entry] of Object.entries(index.files)) {
    for (const symbol of entry.symbols ?? []) {
      const name = symbol.name.toLowerCase();
      const qualified = symbol.qualified.toLowerCase();
      const tier =
        name === q || qualified === q ? 0
        : name.startsWith(q) ? 1
        : qualified.includes(q) || (words.length > 1 && words.every((w) => qualified.includes(w))) ? 2
        : symbol.signature.toLowerCase().includes(q) ? 3
        : symbol.doc.toLowerCase().includes(q) ? 4
        : -1;
      if (tier >= 0) hits.push({ path, symbol, tier });
    }
  }
  hits.sort((a, b) => a.tier - b.tier || a.symbol.name.length - b.symbol.name.length || (a.path < b.path ? -1 : a.path > b.path ? 1 : a.symbol.start - b.symbol.start));
  return { hits: hits.slice(0, limit), total: hits.length };
}

export function formatHit(hit: Hit): string {
  const { path, symbol: s } = hit;
  return `${path}:L${s.start}-L${s.end} ${s.kind} ${s.qualified} (${TIERS[hit.tier]}): ${s.signature}\n  ${call('map_read', { ref: `${path}:L${s.start}-L${s.end}` })}`;
}
