// One note's structure: YAML frontmatter (the `yaml` package), headings, code regions and Markdown
// links from marked's lexer, and what CommonMark does not know, found outside code: Obsidian
// wikilinks ([[target#heading|alias]], ![[embeds]]) and inline #tags. Every link keeps its offsets,
// so a rename can rewrite exactly the links and nothing that only looks like one in a code block.
import { Lexer, type Token, type Tokens } from 'marked';
import { parse as parseYaml } from 'yaml';

export interface Heading {
  depth: number;
  text: string;
  line: number;
}

export interface Link {
  kind: 'wiki' | 'markdown';
  /** What the link names: a note name or path (without #heading or |alias), '' for a link within the note. */
  target: string;
  heading?: string;
  alias?: string;
  embed: boolean;
  line: number;
  /** Offsets of the whole link in the text ([[…]] or the markdown link's destination). */
  start: number;
  end: number;
}

export interface ParsedNote {
  frontmatter: Record<string, unknown> | null;
  /** The frontmatter could not be parsed: what the YAML parser said. */
  frontmatterError?: string;
  /** frontmatter title, else the first level-1 heading, else null (the caller uses the file name). */
  title: string | null;
  aliases: string[];
  tags: string[];
  headings: Heading[];
  links: Link[];
  lines: number;
  /** Over MAX_STRUCTURED_CHARS: only the frontmatter was read; no headings, tags or links. */
  tooLarge?: true;
}

/**
 * The largest body whose structure is parsed. marked's lexer stops making progress on a body of
 * some 1.4 MB (a long paragraph ran for minutes), and every vault tool indexes the vault first.
 */
export const MAX_STRUCTURED_CHARS = 1024 * 1024;

const FRONTMATTER = /^---\r?\n([\s\S]*?)\r?\n(?:---|\.\.\.)[ \t]*(?:\r?\n|$)/;
const WIKILINK = /(!?)\[\[([^\[\]\n]+?)\]\]/g;
// A tag: '#' after a line start or whitespace, letters/digits/_-/ with at least one non-digit (Obsidian's rule).
const TAG = /(^|[\s(,])#([\p{L}\p{N}_\-/]*[\p{L}_\-/][\p{L}\p{N}_\-/]*)/gu;

function escapeRegex(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/** Where `raw` (as marked has it, de-indented inside lists and quotes) occurs in `text` from `from`. */
function locate(text: string, raw: string, from: number): { start: number; end: number } | null {
  const direct = text.indexOf(raw, from);
  if (direct !== -1) return { start: direct, end: direct + raw.length };
  const pattern = new RegExp(raw.split('\n').map(escapeRegex).join('\\n[ \\t>]*'), 'g');
  pattern.lastIndex = from;
  const hit = pattern.exec(text);
  return hit ? { start: hit.index, end: hit.index + hit[0].length } : null;
}

interface Collected {
  code: { start: number; end: number }[];
  markdownLinks: { href: string; start: number; end: number }[];
}

/** Code regions and markdown links inside a block token whose text starts at `base`. */
function collect(token: Token, text: string, base: number, out: Collected): void {
  let cursor = base;
  const visit = (t: Token): void => {
    if (t.type === 'code' || t.type === 'codespan') {
      const at = locate(text, t.raw, cursor);
      if (at) {
        out.code.push(at);
        cursor = at.end;
      }
      return;
    }
    if (t.type === 'link' || t.type === 'image') {
      const link = t as Tokens.Link;
      const at = locate(text, link.raw, cursor);
      if (at) {
        const inner = text.lastIndexOf(link.href, at.end);
        if (inner >= at.start) out.markdownLinks.push({ href: link.href, start: inner, end: inner + link.href.length });
        cursor = at.end;
      }
      return;
    }
    const children = (t as { tokens?: Token[]; items?: Token[] }).tokens ?? (t as { items?: Token[] }).items;
    if (t.type === 'table') {
      const table = t as Tokens.Table;
      for (const cell of [...table.header, ...table.rows.flat()]) cell.tokens.forEach(visit);
      return;
    }
    children?.forEach(visit);
  };
  visit(token);
}

/**
 * Whether an offset falls in one of the regions, by binary search: a large note has tens of
 * thousands of links, code spans and tags, and a scan of every region per offset took minutes.
 */
function regionTest(regions: { start: number; end: number }[]): (offset: number) => boolean {
  const sorted = [...regions].sort((a, b) => a.start - b.start);
  // The furthest end among the regions starting at or before each one (regions may nest or overlap).
  const reach: number[] = [];
  for (const [i, r] of sorted.entries()) reach.push(Math.max(r.end, i ? reach[i - 1]! : 0));
  return (offset) => {
    let lo = 0;
    let hi = sorted.length - 1;
    let found = -1;
    while (lo <= hi) {
      const mid = (lo + hi) >> 1;
      if (sorted[mid]!.start <= offset) {
        found = mid;
        lo = mid + 1;
      } else hi = mid - 1;
    }
    return found !== -1 && reach[found]! > offset;
  };
}

function lineStarts(text: string): number[] {
  const starts = [0];
  for (let i = text.indexOf('\n'); i !== -1; i = text.indexOf('\n', i + 1)) starts.push(i + 1);
  return starts;
}

function lineAt(starts: number[], offset: number): number {
  let lo = 0;
  let hi = starts.length - 1;
  while (lo < hi) {
    const mid = (lo + hi + 1) >> 1;
    if (starts[mid]! <= offset) lo = mid;
    else hi = mid - 1;
  }
  return lo + 1;
}

function stringList(value: unknown): string[] {
  if (typeof value === 'string') return value.split(/[,\s]+/).filter(Boolean);
  if (Array.isArray(value)) return value.filter((v): v is string | number => typeof v === 'string' || typeof v === 'number').map(String);
  return [];
}

/** Split the inside of [[…]] into target, #heading (or ^block) and |alias. */
export function splitWikilink(inner: string): { target: string; heading?: string; alias?: string } {
  const bar = inner.indexOf('|');
  const ref = bar === -1 ? inner : inner.slice(0, bar);
  const alias = bar === -1 ? undefined : inner.slice(bar + 1);
  const hash = ref.indexOf('#');
  const target = (hash === -1 ? ref : ref.slice(0, hash)).trim();
  const heading = hash === -1 ? undefined : ref.slice(hash + 1).trim();
  return { target, ...(heading !== undefined && { heading }), ...(alias !== undefined && { alias }) };
}

export function parseNote(original: string): ParsedNote {
  // Parsed with \r\n read as \n (as marked does); link offsets are mapped back to the original text.
  const text = original.replace(/\r\n/g, '\n');
  const removed: number[] = [];
  if (text.length !== original.length) for (let i = original.indexOf('\r\n'), n = 0; i !== -1; i = original.indexOf('\r\n', i + 1), n++) removed.push(i - n);
  // Offsets shift by the \r removed before them: counted by binary search over the sorted positions.
  const toOriginal = (offset: number): number => {
    let lo = 0;
    let hi = removed.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (removed[mid]! < offset) lo = mid + 1;
      else hi = mid;
    }
    return offset + lo;
  };
  const fm = FRONTMATTER.exec(text);
  let frontmatter: Record<string, unknown> | null = null;
  let frontmatterError: string | undefined;
  if (fm) {
    try {
      const value = parseYaml(fm[1]!);
      if (value && typeof value === 'object' && !Array.isArray(value)) frontmatter = value as Record<string, unknown>;
    } catch (error) {
      frontmatterError = (error as Error).message.split('\n')[0];
    }
  }
  const bodyStart = fm ? fm[0].length : 0;
  const body = text.slice(bodyStart);
  const starts = lineStarts(text);
  const lines = text.length === 0 ? 0 : starts.length - (text.endsWith('\n') ? 1 : 0);
  if (body.length > MAX_STRUCTURED_CHARS) {
    const fmTitle = frontmatter?.title;
    return {
      frontmatter,
      ...(frontmatterError && { frontmatterError }),
      title: typeof fmTitle === 'string' && fmTitle.trim() ? fmTitle.trim() : null,
      aliases: stringList(frontmatter?.aliases ?? frontmatter?.alias),
      tags: [],
      headings: [],
      links: [],
      lines,
      tooLarge: true,
    };
  }
  const collected: Collected = { code: [], markdownLinks: [] };
  const headings: Heading[] = [];
  // Top-level tokens' raw texts add up to the body exactly, so each one's offset is known.
  let offset = bodyStart;
  for (const token of new Lexer().lex(body)) {
    if (token.type === 'heading') headings.push({ depth: (token as Tokens.Heading).depth, text: (token as Tokens.Heading).text.trim(), line: lineAt(starts, offset) });
    collect(token, text, offset, collected);
    offset += token.raw.length;
  }
  const inCode = regionTest(collected.code);

  const links: Link[] = [];
  for (const m of text.matchAll(WIKILINK)) {
    const start = m.index!;
    if (inCode(start)) continue;
    const parts = splitWikilink(m[2]!);
    links.push({ kind: 'wiki', ...parts, embed: m[1] === '!', line: lineAt(starts, start), start, end: start + m[0].length });
  }
  for (const l of collected.markdownLinks) {
    if (/^[a-z][a-z0-9+.-]*:/i.test(l.href) || l.href.startsWith('#') || l.href.startsWith('/')) continue;
    const [path, heading] = l.href.split('#', 2) as [string, string | undefined];
    let target: string;
    try {
      target = decodeURI(path);
    } catch {
      target = path;
    }
    links.push({ kind: 'markdown', target, ...(heading && { heading }), embed: false, line: lineAt(starts, l.start), start: l.start, end: l.end });
  }
  links.sort((a, b) => a.start - b.start);

  const tags = new Set<string>();
  for (const t of stringList(frontmatter?.tags ?? frontmatter?.tag)) tags.add(t.replace(/^#/, ''));
  const headingLines = new Set(headings.map((h) => h.line));
  const inLink = regionTest(links);
  for (const m of body.matchAll(TAG)) {
    const at = bodyStart + m.index! + m[1]!.length;
    if (inCode(at) || headingLines.has(lineAt(starts, at)) || inLink(at)) continue;
    tags.add(m[2]!);
  }

  const fmTitle = frontmatter?.title;
  const h1 = headings.find((h) => h.depth === 1);
  return {
    frontmatter,
    ...(frontmatterError && { frontmatterError }),
    title: typeof fmTitle === 'string' && fmTitle.trim() ? fmTitle.trim() : (h1?.text ?? null),
    aliases: stringList(frontmatter?.aliases ?? frontmatter?.alias),
    tags: [...tags].sort(),
    headings,
    links: links.map((l) => ({ ...l, start: toOriginal(l.start), end: toOriginal(l.end) })),
    lines,
  };
}
