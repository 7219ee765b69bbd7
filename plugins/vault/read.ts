// The vault's read tools: orient (vault_overview), find (note_find, note_search), look at one note
// (note_lookup, note_read) and follow the graph (note_links, note_backlinks).
import { defineTool, errorResult, PathChanged, revisionOf, Type, type ToolContext, type ToolDefinition } from 'conch';
import { stringify } from 'yaml';
import type { Note, Resolution, VaultIndex } from './notes.ts';
import { readNote } from './read-note.ts';
import { current, describe, numbered, plural, splitLines, type Vault } from './shared.ts';

const NOTE = Type.String({ minLength: 1, description: 'A note: its vault path (Projects/Plan.md), a [[wikilink]], its file name or its title' });
const MAX_LIST = 100;
const MAX_HITS = 50;
const PAGE_LINES = 2000;
const PAGE_BYTES = 50 * 1024;
const MAX_FOLDERS = 200;

async function named(vault: Vault, ctx: ToolContext, name: string): Promise<{ index: VaultIndex; note: Note } | { error: string }> {
  const index = await current(vault, ctx);
  const found = await index.find(name);
  return 'note' in found ? { index, note: found.note } : found;
}

/** A note's text now, or '' when it is gone or was replaced since the index saw it. */
const textOf = (note: Note): Promise<string> => readNote(note.abs).then((r) => r.bytes.toString('utf8'), () => '');

function shownResolution(r: Resolution): string {
  if ('note' in r) return r.note.path;
  if ('ambiguous' in r) return `ambiguous: ${r.ambiguous.map((n) => n.path).join(', ')}`;
  if ('attachment' in r) return 'attachment';
  return 'no such note';
}

export function readTools(vault: Vault): ToolDefinition[] {
  const overview = defineTool({
    name: 'vault_overview',
    description: 'Orient in the notes vault: its folders with note counts (depth levels), the notes at the top, and the most used tags. Start here.',
    parameters: Type.Object({ depth: Type.Optional(Type.Integer({ minimum: 1, maximum: 10, description: 'Folder levels to show (default 2)' })) }),
    async execute({ depth = 2 }, ctx) {
      const notes = (await current(vault, ctx)).all();
      if (notes.length === 0) return 'The vault has no notes yet (note_create adds one).';
      const counts = new Map<string, number>();
      for (const note of notes) {
        const parts = note.folder ? note.folder.split('/') : [];
        for (let i = 1; i <= parts.length; i++) counts.set(parts.slice(0, i).join('/'), (counts.get(parts.slice(0, i).join('/')) ?? 0) + 1);
      }
      const lines = [`${plural(notes.length, 'note')} in ${plural(counts.size, 'folder')}`];
      const shown = [...counts].filter(([folder]) => folder.split('/').length <= depth).sort(([a], [b]) => (a < b ? -1 : 1));
      for (const [folder, n] of shown.slice(0, MAX_FOLDERS)) {
        const level = folder.split('/').length;
        lines.push(`${'  '.repeat(level - 1)}${folder.split('/').at(-1)}/ — ${plural(n, 'note')}`);
      }
      if (shown.length > MAX_FOLDERS) lines.push(`… ${shown.length - MAX_FOLDERS} more folders (a smaller depth, or note_find with a folder)`);
      const top = notes.filter((n) => n.folder === '');
      for (const note of top.slice(0, MAX_LIST)) lines.push(describe(note));
      if (top.length > MAX_LIST) lines.push(`… ${top.length - MAX_LIST} more at the top (note_find)`);
      const tags = new Map<string, number>();
      for (const note of notes) for (const t of note.parsed.tags) tags.set(t, (tags.get(t) ?? 0) + 1);
      const ranked = [...tags].sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1)).slice(0, 30);
      if (ranked.length) lines.push(`tags: ${ranked.map(([t, n]) => `#${t} (${n})`).join(', ')}`);
      return lines.join('\n');
    },
  });

  const lookup = defineTool({
    name: 'note_lookup',
    description: "A note's outline without its text: title, frontmatter, tags, headings with line numbers, outgoing links and how many notes link to it.",
    parameters: Type.Object({ note: NOTE }),
    async execute({ note: name }, ctx) {
      const found = await named(vault, ctx, name);
      if ('error' in found) return errorResult(found.error);
      const { index, note } = found;
      const p = note.parsed;
      const out = [`${note.path} — title: ${note.title} · ${plural(p.lines, 'line')}`];
      if (p.tooLarge) out.push('structure: not parsed (the note is over 1 MiB): no headings, tags or links are known; note_read and note_search see its text');
      if (p.frontmatterError) out.push(`frontmatter: not valid YAML (${p.frontmatterError})`);
      else if (p.frontmatter) out.push(`frontmatter:\n${stringify(p.frontmatter).trimEnd().replace(/^/gm, '  ')}`);
      if (p.tags.length) out.push(`tags: ${p.tags.map((t) => `#${t}`).join(' ')}`);
      if (p.headings.length) out.push(`headings:\n${p.headings.map((h) => `  L${h.line} ${'#'.repeat(h.depth)} ${h.text}`).join('\n')}`);
      if (p.links.length) out.push(`links (${p.links.length}):\n${p.links.map((l) => `  L${l.line} ${l.target || '(this note)'}${l.heading ? `#${l.heading}` : ''} → ${shownResolution(index.resolve(l, note))}`).join('\n')}`);
      out.push(`backlinks: ${plural(index.backlinks(note).length, 'note link')} here (note_backlinks)`);
      return out.join('\n');
    },
  });

  const read = defineTool({
    name: 'note_read',
    description: "A note's text with line numbers and its revision (pass it to note_edit or note_append as expected_revision). Pages of 2000 lines.",
    parameters: Type.Object({
      note: NOTE,
      offset: Type.Optional(Type.Integer({ minimum: 1, description: 'First line to show (default 1)' })),
    }),
    async execute({ note: name, offset = 1 }, ctx) {
      const found = await named(vault, ctx, name);
      if ('error' in found) return errorResult(found.error);
      let bytes: Buffer;
      try {
        ({ bytes } = await readNote(found.note.abs));
      } catch (error) {
        if (!(error instanceof PathChanged)) throw error;
        return errorResult(`nothing was read from ${found.note.path}: it was replaced since the vault was checked (a folder on its path, or the note itself, e.g. by a symbolic link); ask again to have it checked afresh`);
      }
      const lines = splitLines(bytes.toString('utf8'));
      if (offset > Math.max(lines.length, 1)) return errorResult(`${found.note.path} has ${plural(lines.length, 'line')}; offset ${offset} is past its end`);
      // Pages end at 2000 lines or 50 KiB, whichever comes first, so one call never floods the context.
      const page: string[] = [];
      let used = 0;
      for (const line of lines.slice(offset - 1, offset - 1 + PAGE_LINES)) {
        const shown = line.length > PAGE_BYTES ? `${line.slice(0, PAGE_BYTES)} [line cut at ${PAGE_BYTES} characters]` : line;
        if (page.length > 0 && used + shown.length > PAGE_BYTES) break;
        page.push(shown);
        used += shown.length + 1;
      }
      const last = offset - 1 + page.length;
      const more = last < lines.length ? `\n[lines ${last + 1}-${lines.length} not shown: continue with offset=${last + 1}]` : '';
      return `${found.note.path} · revision ${revisionOf(bytes)} · lines ${page.length ? offset : 0}-${last} of ${lines.length}\n${numbered(page, offset)}${more}`;
    },
  });

  const find = defineTool({
    name: 'note_find',
    description: 'List notes by title (part of it, any case), tag (#tag or tag; nested tags match their parent) and folder; the filters combine. None lists every note.',
    parameters: Type.Object({
      title: Type.Optional(Type.String({ description: 'Part of the title or file name' })),
      tag: Type.Optional(Type.String({ description: 'A tag, with or without #' })),
      folder: Type.Optional(Type.String({ description: 'A vault folder; its subfolders count' })),
    }),
    async execute({ title, tag, folder }, ctx) {
      const want = title?.toLowerCase();
      const tagged = tag?.replace(/^#/, '').toLowerCase();
      const under = folder?.replace(/^\/+|\/+$/g, '');
      const hits = (await current(vault, ctx)).all().filter((n) =>
        (!want || n.title.toLowerCase().includes(want) || n.name.toLowerCase().includes(want)) &&
        (!tagged || n.parsed.tags.some((t) => t.toLowerCase() === tagged || t.toLowerCase().startsWith(`${tagged}/`))) &&
        (!under || n.folder === under || n.folder.startsWith(`${under}/`)),
      );
      if (hits.length === 0) return 'no note matches';
      const shown = hits.slice(0, MAX_LIST).map((n) => `${describe(n)}${n.parsed.tags.length ? ` · ${n.parsed.tags.map((t) => `#${t}`).join(' ')}` : ''}`);
      return `${plural(hits.length, 'note')}${hits.length > MAX_LIST ? `, first ${MAX_LIST} shown (narrow the filters)` : ''}\n${shown.join('\n')}`;
    },
  });

  const search = defineTool({
    name: 'note_search',
    description: 'Search the text of every note (any case): matching lines with their note and line number, notes whose title matches first.',
    parameters: Type.Object({ text: Type.String({ minLength: 1, description: 'The text to look for' }) }),
    async execute({ text }, ctx) {
      const needle = text.toLowerCase();
      const notes = (await current(vault, ctx)).all();
      const ordered = [...notes.filter((n) => n.title.toLowerCase().includes(needle)), ...notes.filter((n) => !n.title.toLowerCase().includes(needle))];
      const hits: string[] = [];
      let total = 0;
      for (const note of ordered) {
        if (ctx.signal.aborted) break;
        const lines = splitLines(await textOf(note));
        for (const [i, line] of lines.entries()) {
          if (!line.toLowerCase().includes(needle)) continue;
          total++;
          if (hits.length < MAX_HITS) hits.push(`${note.path}:L${i + 1}: ${line.length > 200 ? `${line.slice(0, 200)}…` : line}`);
        }
      }
      if (total === 0) return `no note contains '${text}'`;
      return `${plural(total, 'matching line')}${total > hits.length ? `, first ${hits.length} shown` : ''}\n${hits.join('\n')}`;
    },
  });

  const links = defineTool({
    name: 'note_links',
    description: 'The links going out of a note: each with its line and the note it leads to (or that it leads nowhere, or is ambiguous).',
    parameters: Type.Object({ note: NOTE }),
    async execute({ note: name }, ctx) {
      const found = await named(vault, ctx, name);
      if ('error' in found) return errorResult(found.error);
      const { index, note } = found;
      const all = note.parsed.links;
      if (all.length === 0) return `${note.path} links nowhere`;
      return `${note.path}: ${plural(all.length, 'link')}\n${all.map((l) => `L${l.line} ${l.embed ? 'embeds' : 'links'} ${l.target || '(this note)'}${l.heading ? `#${l.heading}` : ''} → ${shownResolution(index.resolve(l, note))}`).join('\n')}`;
    },
  });

  const backlinks = defineTool({
    name: 'note_backlinks',
    description: 'The notes that link to a note, each link with its line number and the line itself.',
    parameters: Type.Object({ note: NOTE }),
    async execute({ note: name }, ctx) {
      const found = await named(vault, ctx, name);
      if ('error' in found) return errorResult(found.error);
      const incoming = found.index.backlinks(found.note);
      if (incoming.length === 0) return `no note links to ${found.note.path}`;
      const lines: string[] = [];
      const texts = new Map<Note, string[]>();
      for (const { from, link } of incoming.slice(0, MAX_HITS)) {
        if (!texts.has(from)) texts.set(from, splitLines(await textOf(from)));
        lines.push(`${from.path}:L${link.line}: ${texts.get(from)![link.line - 1]?.trim() ?? ''}`);
      }
      const notes = new Set(incoming.map((i) => i.from)).size;
      return `${plural(incoming.length, 'link')} from ${plural(notes, 'note')} to ${found.note.path}${incoming.length > lines.length ? `, first ${lines.length} shown` : ''}\n${lines.join('\n')}`;
    },
  });

  return [overview, lookup, read, find, search, links, backlinks] as ToolDefinition[];
}
