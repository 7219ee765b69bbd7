// First-party plugin: a codebase map. The model orients (map_overview), narrows (map_file,
// map_search) and reads only the lines it needs (map_read). Written only against the public API.
import { defineTool, errorResult, Type, type ToolContext, type ToolResult } from 'conch';
import { updateIndex, type FileEntry, type MapIndex } from './store.ts';
import { readRegular } from './walk.ts';
import { call, findSymbol, formatHit, numberedSlice, outline, overview, search } from './view.ts';

const DEFAULT_DEPTH = 2;
const DEFAULT_LIMIT = 20;
const HEAD_LINES = 40;

/** A path the model gave, checked by the read policy: its canonical form and workspace-relative name. */
async function locate(ctx: ToolContext, path: string): Promise<{ abs: string; rel: string } | ToolResult> {
  try {
    const abs = await ctx.workspace.resolve(path, 'read');
    const shown = ctx.workspace.display(abs);
    if (shown.startsWith('/')) return errorResult(`${path} is outside the workspace: the map covers the workspace only`);
    return { abs, rel: shown === '.' ? '' : shown.replace(/\/$/, '') };
  } catch (error) {
    return errorResult((error as Error).message);
  }
}

/** The index, brought up to date; every listed file passed the read policy. */
async function index(ctx: ToolContext): Promise<MapIndex> {
  const allowed = (rel: string) => ctx.workspace.resolve(rel, 'read').then(() => true, () => false);
  ctx.update('map: updating the index');
  return (await updateIndex(ctx.workspace.root, allowed, { signal: ctx.signal })).index;
}

function lines(text: string): string[] {
  const all = text.split('\n');
  if (text.endsWith('\n')) all.pop();
  return all;
}

const mapOverview = defineTool({
  name: 'map_overview',
  description:
    'Orient in a codebase: the folder tree with file and line counts. Noise folders (tests, docs, vendored code, CI, generated output) ' +
    'fold into one line each; pass their path to open them. Honours .gitignore. Start here, then map_file or map_search.',
  parameters: Type.Object({
    path: Type.Optional(Type.String({ description: 'A folder, workspace-relative (default: the root)' })),
    depth: Type.Optional(Type.Integer({ minimum: 1, maximum: 10, description: `Folder levels to expand (default ${DEFAULT_DEPTH})` })),
  }),
  async execute({ path = '.', depth = DEFAULT_DEPTH }, ctx) {
    const where = await locate(ctx, path);
    if ('content' in where) return where;
    const map = await index(ctx);
    if (map.files[where.rel]) return `${where.rel} is a file: use ${call('map_file', { path: where.rel })}`;
    return overview(map, where.rel, depth) ?? errorResult(`no files under ${where.rel || '.'} (missing, empty, or all ignored by .gitignore)`);
  },
});

const mapFile = defineTool({
  name: 'map_file',
  description:
    "A file's outline: its module doc and symbol names, then every symbol's signature and line span. With symbol (a name or " +
    'Class.method), that symbol\'s body with line numbers. Never returns a whole large file.',
  parameters: Type.Object({
    path: Type.String({ minLength: 1, description: 'A file, workspace-relative' }),
    symbol: Type.Optional(Type.String({ minLength: 1, description: 'Name or qualified name (Store.get) of a symbol to show' })),
  }),
  async execute({ path, symbol }, ctx) {
    const where = await locate(ctx, path);
    if ('content' in where) return where;
    const map = await index(ctx);
    const entry: FileEntry | undefined = map.files[where.rel];
    if (!entry) {
      const folder = Object.keys(map.files).some((p) => p.startsWith(`${where.rel}/`));
      return errorResult(folder ? `${where.rel} is a folder: use ${call('map_overview', { path: where.rel })}` : `${where.rel} is not in the map (missing, or ignored by .gitignore)`);
    }
    const text = entry.binary ? [] : lines((await readRegular(where.abs)).toString('utf8'));
    if (!symbol) return outline(where.rel, entry, text.slice(0, HEAD_LINES));
    if (!entry.symbols) return errorResult(`${where.rel} is not parsed (no grammar for it): read it with ${call('map_read', { ref: `${where.rel}:L1-L${HEAD_LINES}` })}`);
    const found = findSymbol(entry.symbols, symbol);
    if (found.length === 0) {
      const names = entry.symbols.map((s) => s.qualified).slice(0, 50).join(', ');
      return errorResult(`no symbol '${symbol}' in ${where.rel}; it has: ${names || '(none)'}`);
    }
    const [first, ...others] = found;
    const body = numberedSlice(where.rel, text, first!.start, first!.end);
    const more = others.length ? `\nalso named '${symbol}': ${others.map((s) => `${where.rel}:L${s.start}-L${s.end} ${s.kind} ${s.qualified}`).join('; ')}` : '';
    return `${where.rel}:L${first!.start}-L${first!.end} ${first!.kind} ${first!.qualified}\n${body}${more}`;
  },
});

const REF = /^(.*?)(?::L?(\d+)(?:-L?(\d+))?)?$/;

const mapRead = defineTool({
  name: 'map_read',
  description:
    'Read source with line numbers: ref is a path or path:L1-L2 (as map_file and map_search print them). ' +
    'Capped at 64 KB per call; the cut says how to go on.',
  parameters: Type.Object({ ref: Type.String({ minLength: 1, description: 'path, path:L10-L40 or path:L10' }) }),
  async execute({ ref }, ctx) {
    const match = REF.exec(ref.trim())!;
    const path = match[1]!;
    if (!path) return errorResult(`map_read needs a path in ref, like src/main.ts:L1-L40 (got '${ref}')`);
    const where = await locate(ctx, path);
    if ('content' in where) return where;
    let text: string[];
    try {
      const bytes = await readRegular(where.abs);
      if (bytes.subarray(0, 8192).includes(0)) return errorResult(`${where.rel} is a binary file`);
      text = lines(bytes.toString('utf8'));
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (code === 'EISDIR') return errorResult(`${where.rel} is a folder: use ${call('map_overview', { path: where.rel })}`);
      if (code === 'ENOTREG') return errorResult(`${where.rel} is not a regular file (a FIFO, socket or device); the map reads files only`);
      return errorResult(`cannot read ${where.rel}: ${code ?? (error as Error).message}`);
    }
    const from = match[2] ? Number(match[2]) : 1;
    const to = match[3] ? Number(match[3]) : match[2] ? from : text.length;
    if (from < 1 || to < from) return errorResult(`bad line range in '${ref}': write path:L<first>-L<last> with first ≤ last, counting from 1`);
    if (from > text.length) return errorResult(`${where.rel} has ${text.length} lines; line ${from} is past its end`);
    const last = Math.min(to, text.length);
    return `${where.rel}:L${from}-L${last} of ${text.length}\n${numberedSlice(where.rel, text, from, last)}`;
  },
});

const mapSearch = defineTool({
  name: 'map_search',
  description:
    'Find symbols by name across the codebase, ranked: exact name, name prefix, part of a name, then signature, then doc comment. ' +
    'Each hit carries a ready map_read call for its lines.',
  parameters: Type.Object({
    query: Type.String({ minLength: 1, description: 'A name or a word to look for' }),
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 200, description: `Hits to return (default ${DEFAULT_LIMIT})` })),
  }),
  async execute({ query, limit = DEFAULT_LIMIT }, ctx) {
    if (query.trim() === '') return errorResult('map_search needs a non-empty query');
    const { hits, total } = search(await index(ctx), query, limit);
    if (hits.length === 0) return `no symbol matches '${query}' (names, signatures and doc comments were searched)`;
    const header = `${total} match${total === 1 ? '' : 'es'} for '${query}'${total > hits.length ? `, first ${hits.length} shown (raise limit for more)` : ''}`;
    return `${header}\n${hits.map(formatHit).join('\n')}`;
  },
});

export default [mapOverview, mapFile, mapRead, mapSearch];
