// The vault's notes: a walk of the visible Markdown files (symlinks not followed, dot folders and
// deny subtrees never entered), each parsed once and kept while its inode, size and mtime stay the
// same, across processes too (cache.ts); and the names a note answers to, resolved the way
// Obsidian resolves links.
import { lstat, readdir } from 'node:fs/promises';
import { join, posix } from 'node:path';
import { canonicalize } from 'conch';
import { loadCache, saveCache, type LoadedCache } from './cache.ts';
import { parseNote, splitWikilink, type Link, type ParsedNote } from './parse.ts';
import { noteKey, readNote } from './read-note.ts';
import { relativeTo, visible, type VaultSettings } from './settings.ts';

export interface Note {
  /** Vault-relative path, with its .md. */
  path: string;
  abs: string;
  /** File name without .md: what a [[wikilink]] names. */
  name: string;
  /** Vault-relative folder ('' at the root). */
  folder: string;
  title: string;
  parsed: ParsedNote;
  key: string;
}

export type Resolution = { note: Note } | { ambiguous: Note[] } | { missing: true } | { attachment: true };

const MAX_NOTES = 100_000;
const ATTACHMENT = /\.(png|jpe?g|gif|svg|webp|bmp|pdf|mp3|mp4|webm|wav|ogg|m4a|mov|canvas|excalidraw|csv|txt|zip)$/i;
const stem = (path: string) => path.replace(/\.md$/i, '');

/** What the last refresh did: notes indexed, of them parsed (read) and taken from the stored cache; notes gone. */
export interface RefreshStats {
  notes: number;
  parsed: number;
  cached: number;
  removed: number;
}

export class VaultIndex {
  private notes = new Map<string, Note>();
  private byName = new Map<string, Note[]>();
  private readable = new Map<string, boolean>();
  /** Until the first refresh: whether the stored cache still has to be read. */
  private loaded = false;
  lastRefresh: RefreshStats = { notes: 0, parsed: 0, cached: 0, removed: 0 };

  /** `cache`: the file the index is kept in between processes (cache.ts), null for none. */
  constructor(
    readonly settings: VaultSettings,
    private readonly cache: string | null = null,
  ) {}

  /**
   * Bring the index up to date with the disk. `allowed` is conch's read policy (read.deny, secrets):
   * a note it refuses is left out as if absent.
   */
  async refresh(allowed: (abs: string) => Promise<boolean>, signal?: AbortSignal): Promise<void> {
    const takenAt = Date.now();
    let stored: LoadedCache | null = null;
    if (!this.loaded && this.cache) stored = await loadCache(this.cache, this.settings.root);
    this.loaded = true;
    const stats: RefreshStats = { notes: 0, parsed: 0, cached: 0, removed: 0 };
    const next = new Map<string, Note>();
    const visit = async (dir: string): Promise<void> => {
      signal?.throwIfAborted();
      const entries = await readdir(dir, { withFileTypes: true }).catch(() => []);
      for (const entry of entries) {
        if (entry.name.startsWith('.')) continue;
        const abs = join(dir, entry.name);
        if (entry.isDirectory()) {
          if (visible(this.settings, abs, 'folder')) await visit(abs);
          continue;
        }
        if (!entry.isFile() || !/\.md$/i.test(entry.name) || !visible(this.settings, abs, 'note') || next.size >= MAX_NOTES) continue;
        const path = relativeTo(this.settings.root, abs);
        if (!this.readable.has(path)) this.readable.set(path, await allowed(abs));
        if (!this.readable.get(path)) continue;
        const st = await lstat(abs).catch(() => null);
        if (!st?.isFile()) continue;
        const key = noteKey(st);
        const old = this.notes.get(path);
        if (old?.key === key) {
          next.set(path, old);
          continue;
        }
        const kept = stored?.notes.get(path);
        if (kept?.key === key) {
          next.set(path, noteOf(path, abs, kept.parsed, key));
          stats.cached++;
          continue;
        }
        // A note swapped for a link since the walk saw it (PathChanged) is left out like an unreadable one.
        const read = await readNote(abs).catch(() => null);
        if (!read) continue;
        next.set(path, makeNote(path, abs, read.bytes.toString('utf8'), read.key));
        stats.parsed++;
      }
    };
    await visit(this.settings.root);
    const before = stored ? stored.notes : this.notes;
    stats.notes = next.size;
    stats.removed = [...before.keys()].filter((p) => !next.has(p)).length;
    this.lastRefresh = stats;
    if (this.cache && (stats.parsed > 0 || stats.removed > 0 || stored?.stale)) {
      await saveCache(this.cache, this.settings.root, [...next].map(([p, n]) => [p, { key: n.key, parsed: n.parsed }]), takenAt);
    }
    this.notes = new Map([...next].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
    this.byName = new Map();
    for (const note of this.notes.values()) {
      const k = note.name.toLowerCase();
      this.byName.set(k, [...(this.byName.get(k) ?? []), note]);
    }
  }

  all(): Note[] {
    return [...this.notes.values()];
  }

  get(path: string): Note | undefined {
    return this.notes.get(path);
  }

  /** Notes other than `except` whose file name is `name` (case-insensitive). */
  named(name: string, except?: Note): Note[] {
    return (this.byName.get(name.toLowerCase()) ?? []).filter((n) => n !== except);
  }

  /** Where a link in `from` leads, like Obsidian: by file name, or by path when it has a '/'; markdown links relative to the note. */
  resolve(link: Pick<Link, 'kind' | 'target'>, from: Note | null): Resolution {
    const target = link.target.trim();
    if (target === '') return from ? { note: from } : { missing: true };
    if (ATTACHMENT.test(target)) return { attachment: true };
    if (link.kind === 'markdown') {
      const path = posix.normalize(posix.join(from?.folder ?? '', target));
      const note = this.notes.get(path) ?? this.notes.get(`${path}.md`);
      return note ? { note } : { missing: true };
    }
    const wanted = stem(target.replace(/^\/+/, '')).toLowerCase();
    const found = wanted.includes('/')
      ? this.all().filter((n) => {
          const s = stem(n.path).toLowerCase();
          return s === wanted || s.endsWith(`/${wanted}`);
        })
      : (this.byName.get(wanted) ?? []);
    if (found.length === 1) return { note: found[0]! };
    if (found.length === 0) return { missing: true };
    const near = from ? found.filter((n) => n.folder === from.folder) : [];
    return near.length === 1 ? { note: near[0]! } : { ambiguous: found };
  }

  /** The note a tool argument names: a vault path, a [[wikilink]], a file name or a title. */
  async find(name: string): Promise<{ note: Note } | { error: string }> {
    const given = name.trim();
    const inner = /^!?\[\[(.*)\]\]$/.exec(given)?.[1] ?? given;
    const { target } = splitWikilink(inner);
    if (target === '') return { error: `name a note: a path (Projects/Plan.md), a [[wikilink]], a file name or a title (got '${name}')` };
    if (target.includes('/') || /\.md$/i.test(target)) {
      const lexical = target.startsWith('/') ? target : join(this.settings.root, target);
      for (const candidate of /\.md$/i.test(lexical) ? [lexical] : [lexical, `${lexical}.md`]) {
        // The path as given and where it leads must both be part of the vault.
        if (!visible(this.settings, candidate, 'note')) continue;
        const abs = await canonicalize(candidate);
        if (!visible(this.settings, abs, 'note')) continue;
        const note = this.notes.get(relativeTo(this.settings.root, abs));
        if (note) return { note };
      }
    }
    const linked = this.resolve({ kind: 'wiki', target }, null);
    if ('note' in linked) return linked;
    if ('ambiguous' in linked) return { error: `'${target}' names ${linked.ambiguous.length} notes: ${linked.ambiguous.map((n) => n.path).join(', ')}; give the path` };
    const lower = target.toLowerCase();
    const titled = this.all().filter((n) => n.title.toLowerCase() === lower || n.parsed.aliases.some((a) => a.toLowerCase() === lower));
    if (titled.length === 1) return { note: titled[0]! };
    if (titled.length > 1) return { error: `'${target}' is the title of ${titled.length} notes: ${titled.map((n) => n.path).join(', ')}; give the path` };
    const near = this.all()
      .filter((n) => n.name.toLowerCase().includes(lower) || n.title.toLowerCase().includes(lower))
      .slice(0, 5)
      .map((n) => n.path);
    return { error: `no note '${target}' in the vault${near.length ? `; similar: ${near.join(', ')}` : ''} (note_find lists notes)` };
  }

  /** Every link elsewhere in the vault that leads to `note`. */
  backlinks(note: Note): { from: Note; link: Link }[] {
    const found: { from: Note; link: Link }[] = [];
    for (const from of this.notes.values()) {
      if (from === note) continue;
      for (const link of from.parsed.links) {
        const r = this.resolve(link, from);
        if ('note' in r && r.note === note) found.push({ from, link });
      }
    }
    return found;
  }
}

export function makeNote(path: string, abs: string, text: string, key: string): Note {
  return noteOf(path, abs, parseNote(text), key);
}

function noteOf(path: string, abs: string, parsed: ParsedNote, key: string): Note {
  const name = posix.basename(path).replace(/\.md$/i, '');
  const folder = posix.dirname(path) === '.' ? '' : posix.dirname(path);
  return { path, abs, name, folder, title: parsed.title ?? name, parsed, key };
}
