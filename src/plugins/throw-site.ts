// Where in a plugin's own file its execute threw, for the author: the model gets the tool error,
// the human gets one line on stderr naming file:line:col and the message (output.ts keeps plugin
// code off stdout; this line goes the same way).
import { readFile } from 'node:fs/promises';
import { extname } from 'node:path';
import { tildePath } from '../core/display-path.ts';
import { thrownText } from '../core/errors.ts';
import { stderr } from '../core/stdio.ts';
import { sourceMapOf, type Shift } from './transform.ts';

export interface PluginFile {
  /** The plugin file as the author knows it. */
  path: string;
  /** The file that actually ran, when that is a private copy (a project plugin's snapshot). */
  ran?: string;
}

/** Tell the author which tool threw, where in their file, and what. Never throws. */
export async function reportThrown(tool: string, file: PluginFile, error: unknown): Promise<void> {
  let where = tildePath(file.path);
  try {
    const frame = topFrame(error, file.ran ?? file.path);
    if (frame) {
      const column = await sourceColumn(file.ran ?? file.path, frame.line, frame.column);
      where += `:${frame.line}${column === null ? '' : `:${column}`}`;
    }
  } catch {
    // Only the position is lost; the line still names the file.
  }
  const message = thrownText(error).split('\n')[0]!.trim() || '(no message)';
  stderr.write(`conch: tool '${tool}' threw at ${where}: ${message}\n`);
}

/** The first stack frame in `path` (1-based line and column, as the stack gives them), or null. */
export function topFrame(error: unknown, path: string): { line: number; column: number } | null {
  const stack = error instanceof Error && typeof error.stack === 'string' ? error.stack : '';
  for (const line of stack.split('\n')) {
    const index = line.indexOf(`${path}:`);
    if (index < 0) continue;
    const match = /^:(\d+):(\d+)/.exec(line.slice(index + path.length));
    if (match) return { line: Number(match[1]), column: Number(match[2]) };
  }
  return null;
}

const TYPESCRIPT = /\.[cm]?tsx?$/;
const ESM_SYNTAX = /(?:^|[\s;])(?:import\s*[\w*{'"]|export\s*[\w*{])|\bimport\.meta\b/m;
/** Column maps per file and content: a tool that keeps throwing is transpiled once. */
const maps = new Map<string, Map<number, Array<[generated: number, source: number]>>>();

/**
 * The column in the author's source for a stack position. jiti runs TypeScript (and ES-module .js)
 * through Babel, which keeps lines but rewrites spacing and drops types, so the stack's columns are
 * the transpiled code's: the same transform with a source map gives the original column back
 * (sucrase's or Babel's, whichever made the code: transform.ts routes both requests alike).
 * Files jiti imports untouched (.mjs, .cjs, CommonJS .js) keep their columns. Null when unknown.
 */
export async function sourceColumn(path: string, line: number, column: number): Promise<number | null> {
  const source = await readFile(path, 'utf8');
  const ext = extname(path);
  const transpiled = TYPESCRIPT.test(path) || (ext !== '.mjs' && ext !== '.cjs' && ESM_SYNTAX.test(source));
  if (!transpiled) return column;
  const key = `${path}\0${Bun.hash(source)}`;
  let byLine = maps.get(key);
  if (!byLine) {
    // The request jiti's import makes (async module, no interop), so the map is the code that ran's.
    const map = sourceMapOf({ source, filename: path, ts: TYPESCRIPT.test(path), async: true, jsx: false, interopDefault: false, babel: {} });
    if (!map) return null;
    byLine = decodeMappings(map.mappings, map.shifts);
    maps.clear(); // one file at a time is what a failing tool needs
    maps.set(key, byLine);
  }
  const segments = byLine.get(line - 1);
  if (!segments?.length) return null;
  let best: [number, number] | undefined;
  for (const segment of segments) if (segment[0] <= column - 1 && (!best || segment[0] >= best[0])) best = segment;
  return best ? best[1] + 1 : null;
}

const BASE64 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';

/**
 * Source map v3 mappings → for each generated line (0-based), its [generated column, source column]
 * pairs that map to the same line of the source (both transforms keep lines; others are Babel's helpers).
 */
function decodeMappings(mappings: string, shifts: Shift[]): Map<number, Array<[number, number]>> {
  const out = new Map<number, Array<[number, number]>>();
  let sourceLine = 0;
  let sourceColumn = 0;
  for (const [generatedLine, text] of mappings.split(';').entries()) {
    let generatedColumn = 0;
    const pairs: Array<[number, number]> = [];
    for (const segment of text.split(',')) {
      if (!segment) continue;
      const fields = vlq(segment);
      generatedColumn += fields[0] ?? 0;
      if (fields.length < 4) continue;
      sourceLine += fields[2]!;
      sourceColumn += fields[3]!;
      if (sourceLine === generatedLine) pairs.push([shifted(generatedLine, generatedColumn, shifts), sourceColumn]);
    }
    if (pairs.length) out.set(generatedLine, pairs);
  }
  return out;
}

/** Where a column of the mapped code ended up after the edits made to it since (sucrase.ts). */
function shifted(line: number, column: number, shifts: Shift[]): number {
  let moved = column;
  for (const shift of shifts) if (shift.line === line && shift.column < moved) moved += shift.delta;
  return moved;
}

function vlq(segment: string): number[] {
  const values: number[] = [];
  let value = 0;
  let shift = 0;
  for (const char of segment) {
    const digit = BASE64.indexOf(char);
    value += (digit & 31) << shift;
    if (digit & 32) {
      shift += 5;
      continue;
    }
    values.push(value & 1 ? -(value >>> 1) : value >>> 1);
    value = 0;
    shift = 0;
  }
  return values;
}
