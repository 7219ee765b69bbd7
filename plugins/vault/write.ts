// The vault's write tools: note_create, note_append, note_edit and note_rename, which rewrites every
// link to the renamed note across the vault in one all-or-nothing commit (writeFilesAtomic).
import { join, posix } from 'node:path';
import { canonicalize, defineTool, errorResult, FilesNotWritten, PathChanged, planEdits, revisionOf, Type, writeFilesAtomic, type AtomicSetOptions, type FileChange, type ToolContext, type ToolDefinition } from 'conch';
import { makeNote, type Note, type VaultIndex } from './notes.ts';
import type { Link } from './parse.ts';
import { readNote } from './read-note.ts';
import { relativeTo, visible } from './settings.ts';
import { current, plural, writeRefusal, type Vault } from './shared.ts';

const NOTE = Type.String({ minLength: 1, description: 'A note: its vault path (Projects/Plan.md), a [[wikilink]], its file name or its title' });
const REVISION = Type.Optional(Type.String({ description: 'Change it only if the note is still at this revision (from note_read)' }));

/** A vault path for a new note: inside the vault, visible, writable; '.md' added when missing. */
async function newPath(index: VaultIndex, ctx: ToolContext, given: string): Promise<{ abs: string; path: string } | { error: string }> {
  const rel = /\.md$/i.test(given.trim()) ? given.trim() : `${given.trim()}.md`;
  // A link names a note by its path or name: these would read as the link's own syntax.
  if (/[#|^[\]]/.test(rel)) return { error: `'${given}' cannot be a note's name: a [[link]] reads # | ^ [ ] as its own syntax, so no link could lead to it. Choose a name without them.` };
  const lexical = join(index.settings.root, rel);
  const abs = await canonicalize(lexical);
  if (!visible(index.settings, lexical, 'note') || !visible(index.settings, abs, 'note')) {
    return { error: `'${given}' is not a place for a note in the vault: give a path inside it, outside dot folders (note_find shows where notes are)` };
  }
  const refusal = await writeRefusal(ctx, abs);
  return refusal ? { error: refusal } : { abs, path: relativeTo(index.settings.root, abs) };
}

/** The note's bytes now, checked against expected_revision and conch's write policy. */
async function loadForChange(ctx: ToolContext, note: Note, expected: string | undefined): Promise<{ text: string; revision: string } | { error: string }> {
  const refusal = await writeRefusal(ctx, note.abs);
  if (refusal) return { error: refusal };
  let bytes: Buffer;
  try {
    ({ bytes } = await readNote(note.abs));
  } catch (error) {
    if (!(error instanceof PathChanged)) throw error;
    return { error: `${note.path} was replaced since the vault was checked (a folder on its path, or the note itself, e.g. by a symbolic link); nothing was changed. Try again to have it checked afresh.` };
  }
  const revision = revisionOf(bytes);
  if (expected !== undefined && expected !== revision) {
    return { error: `${note.path} is not at revision ${expected}: its current revision is ${revision}. Read it again (note_read) before changing it.` };
  }
  return { text: bytes.toString('utf8'), revision };
}

async function commit(changes: FileChange[], index: VaultIndex, options: AtomicSetOptions): Promise<string | null> {
  try {
    await writeFilesAtomic(changes, options);
    return null;
  } catch (error) {
    if (!(error instanceof FilesNotWritten)) throw error;
    const shown = relativeTo(index.settings.root, error.path);
    const why = error.code === 'changed' ? 'it changed meanwhile; read it again' : error.code === 'exists' ? 'it already exists' : `the system refused (${error.code})`;
    const lost = error.unrestored.length ? ` Could not put back: ${error.unrestored.map((u) => `${relativeTo(index.settings.root, u.path)} (its original is ${relativeTo(index.settings.root, u.original)})`).join(', ')}.` : '';
    return `nothing was changed: ${shown}: ${why}.${lost}`;
  }
}

/** The text of a link to `to`, written from `from`, in the style of `link` (its #heading, |alias and embed kept). */
function relink(link: Link, original: string, to: { path: string; name: string; folder: string }, unique: boolean, fromFolder: string): string {
  if (link.kind === 'markdown') {
    const rel = posix.relative(fromFolder || '.', to.path);
    return `${encodeURI(rel)}${link.heading ? `#${link.heading}` : ''}`;
  }
  const withExt = /\.md$/i.test(link.target);
  const stemmed = to.path.replace(/\.md$/i, '');
  const target = (link.target.includes('/') || !unique ? stemmed : to.name) + (withExt ? '.md' : '');
  const inner = original.slice(original.indexOf('[[') + 2, -2);
  const bar = inner.indexOf('|');
  const hash = inner.indexOf('#');
  const rest = hash !== -1 && (bar === -1 || hash < bar) ? inner.slice(hash) : bar !== -1 ? inner.slice(bar) : '';
  return `${link.embed ? '!' : ''}[[${target}${rest}]]`;
}

function rewrite(text: string, edits: { start: number; end: number; text: string }[]): string {
  let out = text;
  for (const e of [...edits].sort((a, b) => b.start - a.start)) out = out.slice(0, e.start) + e.text + out.slice(e.end);
  return out;
}

export function writeTools(vault: Vault, options: AtomicSetOptions = {}): ToolDefinition[] {
  const create = defineTool({
    name: 'note_create',
    description: 'Create a new note at a vault path (folders are made; .md is added when missing). Refused if the note exists.',
    writes: true,
    parameters: Type.Object({
      path: Type.String({ minLength: 1, description: 'Vault path of the new note, such as Projects/Beta.md' }),
      content: Type.String({ description: 'The note text (Markdown, frontmatter allowed)' }),
    }),
    async execute({ path, content }, ctx) {
      const index = await current(vault, ctx);
      const where = await newPath(index, ctx, path);
      if ('error' in where) return errorResult(where.error);
      if (index.get(where.path)) return errorResult(`${where.path} already exists: change it with note_edit or note_append, or choose another path.`);
      const failed = await commit([{ path: where.abs, data: Buffer.from(content, 'utf8'), expectedRevision: null }], index, options);
      if (failed) return errorResult(failed);
      return `Created ${where.path}; revision ${revisionOf(content)}.`;
    },
  });

  const append = defineTool({
    name: 'note_append',
    description: 'Add text at the end of a note, on a line of its own.',
    writes: true,
    parameters: Type.Object({ note: NOTE, text: Type.String({ minLength: 1, description: 'Text to add' }), expected_revision: REVISION }),
    async execute({ note: name, text, expected_revision }, ctx) {
      const index = await current(vault, ctx);
      const found = await index.find(name);
      if ('error' in found) return errorResult(found.error);
      const now = await loadForChange(ctx, found.note, expected_revision);
      if ('error' in now) return errorResult(now.error);
      // In the note's own line endings.
      const eol = now.text.includes('\r\n') ? '\r\n' : '\n';
      const added = text.replace(/\r?\n/g, eol);
      const joined = `${now.text}${now.text === '' || now.text.endsWith('\n') ? '' : eol}${added}${added.endsWith('\n') ? '' : eol}`;
      const failed = await commit([{ path: found.note.abs, data: Buffer.from(joined, 'utf8'), expectedRevision: now.revision }], index, options);
      if (failed) return errorResult(failed);
      return `Appended ${plural(text.split('\n').filter((l, i, all) => i < all.length - 1 || l !== '').length, 'line')} to ${found.note.path}; revision ${revisionOf(joined)}.`;
    },
  });

  const edit = defineTool({
    name: 'note_edit',
    description: "Replace exact text in a note, like edit: each old_text must occur exactly once; all edits apply or none. Returns the note's new revision.",
    writes: true,
    parameters: Type.Object({
      note: NOTE,
      edits: Type.Array(
        Type.Object({ old_text: Type.String({ minLength: 1, description: 'Exact text to replace, as note_read shows it (without line numbers)' }), new_text: Type.String({ description: 'The replacement' }) }),
        { minItems: 1 },
      ),
      expected_revision: REVISION,
    }),
    async execute({ note: name, edits, expected_revision }, ctx) {
      const index = await current(vault, ctx);
      const found = await index.find(name);
      if ('error' in found) return errorResult(found.error);
      const now = await loadForChange(ctx, found.note, expected_revision);
      if ('error' in now) return errorResult(now.error);
      const plan = planEdits(now.text, edits, found.note.path);
      if (!plan.ok) return errorResult(plan.message);
      const failed = await commit([{ path: found.note.abs, data: Buffer.from(plan.text, 'utf8'), expectedRevision: now.revision }], index, options);
      if (failed) return errorResult(failed);
      return `Edited ${found.note.path}: +${plan.added} -${plan.removed} lines; revision ${revisionOf(plan.text)}.\n${plan.diff}`;
    },
  });

  const rename = defineTool({
    name: 'note_rename',
    description:
      'Rename or move a note and rewrite every link to it across the vault ([[name]], [[name|alias]], [[name#heading]], embeds, markdown links), ' +
      'all files at once or none. `to` is a new name (same folder) or a vault path.',
    writes: true,
    parameters: Type.Object({ note: NOTE, to: Type.String({ minLength: 1, description: 'New name (Beta) or vault path (Archive/Beta.md)' }) }),
    async execute({ note: name, to }, ctx) {
      const index = await current(vault, ctx);
      const found = await index.find(name);
      if ('error' in found) return errorResult(found.error);
      const old = found.note;
      const dest = await newPath(index, ctx, to.includes('/') ? to : posix.join(old.folder, to));
      if ('error' in dest) return errorResult(dest.error);
      if (dest.path === old.path) return errorResult(`${old.path} already has that name`);
      if (index.get(dest.path)) return errorResult(`${dest.path} already exists: choose another name, or rename or remove that note first`);
      const target = makeNote(dest.path, dest.abs, '', '');
      const unique = index.named(target.name, old).length === 0;

      // Every note with a link to the old one, read now: offsets come from this text, and the commit checks it is still the same.
      const changes: FileChange[] = [];
      let rewritten = 0;
      const own = await loadForChange(ctx, old, undefined);
      if ('error' in own) return errorResult(own.error);
      for (const from of new Set(index.backlinks(old).map((b) => b.from))) {
        const now = await loadForChange(ctx, from, undefined);
        if ('error' in now) return errorResult(`cannot rewrite the links in ${from.path}: ${now.error}`);
        const fresh = makeNote(from.path, from.abs, now.text, from.key);
        const edits = fresh.parsed.links
          .filter((l) => {
            const r = index.resolve(l, fresh);
            return 'note' in r && r.note === old;
          })
          .map((l) => ({ start: l.start, end: l.end, text: relink(l, now.text.slice(l.start, l.end), target, unique, from.folder) }));
        rewritten += edits.length;
        changes.push({ path: from.abs, data: Buffer.from(rewrite(now.text, edits), 'utf8'), expectedRevision: now.revision });
      }
      // The note itself: links naming it, and markdown links relative to a folder it leaves.
      const self = makeNote(old.path, old.abs, own.text, old.key);
      const selfEdits = self.parsed.links.flatMap((l) => {
        const r = index.resolve(l, self);
        if (l.kind === 'wiki' && 'note' in r && r.note === old && l.target !== '') return [{ start: l.start, end: l.end, text: relink(l, own.text.slice(l.start, l.end), target, unique, target.folder) }];
        if (l.kind === 'markdown' && 'note' in r && (r.note === old || target.folder !== old.folder)) {
          return [{ start: l.start, end: l.end, text: relink(l, '', r.note === old ? target : r.note, true, target.folder) }];
        }
        return [];
      });
      changes.push({ path: dest.abs, data: Buffer.from(rewrite(own.text, selfEdits), 'utf8'), expectedRevision: null });
      changes.push({ path: old.abs, data: null, expectedRevision: own.revision });

      ctx.update(`vault: renaming ${old.path} and rewriting ${plural(rewritten, 'link')}`);
      const failed = await commit(changes, index, options);
      if (failed) return errorResult(failed);
      const notes = changes.length - 2;
      const also = unique ? '' : ` Another note is also named '${target.name}', so links to it name its path.`;
      // Their links are not known, so they may still name the old one: said, not guessed at.
      const large = index.all().filter((n) => n.parsed.tooLarge && n !== old).map((n) => n.path);
      const unchecked = large.length ? ` Not checked for links (over 1 MiB, their structure is not parsed): ${large.slice(0, 10).join(', ')}${large.length > 10 ? ` and ${large.length - 10} more` : ''}.` : '';
      return `Renamed ${old.path} to ${dest.path}; rewrote ${plural(rewritten, 'link')} in ${plural(notes, 'other note')}.${also}${unchecked}`;
    },
  });

  return [create, append, edit, rename] as ToolDefinition[];
}
