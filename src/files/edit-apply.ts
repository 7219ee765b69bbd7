// Locating and applying exact-text edits, and explaining precisely why one cannot be applied.
import { unifiedDiff } from './diff.ts';

export interface EditSpec {
  old_text: string;
  new_text: string;
}

interface Located {
  edit: number;
  start: number;
  end: number;
  replacement: string;
}

export type Plan = { ok: true; text: string; diff: string; added: number; removed: number } | { ok: false; message: string };

/** Occurrences counted before giving up (the count is then reported as "at least"). */
const MAX_COUNTED = 1000;

/** Offsets of every '\n': line numbers by binary search, line bounds by lookup. */
class Lines {
  readonly newlines: number[] = [];
  constructor(readonly text: string) {
    for (let i = text.indexOf('\n'); i !== -1; i = text.indexOf('\n', i + 1)) this.newlines.push(i);
  }
  get count(): number {
    const last = this.newlines[this.newlines.length - 1];
    return this.newlines.length + (last === this.text.length - 1 ? 0 : 1);
  }
  /** 0-based line holding the character at `offset`. */
  lineOf(offset: number): number {
    let lo = 0;
    let hi = this.newlines.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (this.newlines[mid]! < offset) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }
  startOf(line: number): number {
    return line === 0 ? 0 : this.newlines[line - 1]! + 1;
  }
  /** Offset just past the line's '\n' (or the end of the text). */
  endOf(line: number): number {
    const nl = this.newlines[line];
    return nl === undefined ? this.text.length : nl + 1;
  }
  line(line: number): string {
    return this.text.slice(this.startOf(line), this.endOf(line)).replace(/\r?\n$/, '');
  }
}

const toCrlf = (s: string) => s.replace(/\r?\n/g, '\r\n');

function findAll(text: string, needle: string): number[] {
  const found: number[] = [];
  for (let i = text.indexOf(needle); i !== -1 && found.length < MAX_COUNTED; i = text.indexOf(needle, i + 1)) found.push(i);
  return found;
}

/** CRLF when most line breaks are CRLF: model text written with '\n' is then matched and written as CRLF. */
function usesCrlf(text: string): boolean {
  let crlf = 0;
  let all = 0;
  for (let i = text.indexOf('\n'); i !== -1; i = text.indexOf('\n', i + 1)) {
    all++;
    if (text.charCodeAt(i - 1) === 13) crlf++;
  }
  return crlf > 0 && crlf * 2 >= all;
}

/**
 * Whether text matched as written sits on CRLF lines: not when it spans an LF line break (a mixed
 * file's LF region stays LF), else as the line it ends on ends (the file's majority at its end).
 */
function landsOnCrlf(text: string, start: number, find: string): boolean {
  if (/(^|[^\r])\n/.test(find)) return false;
  const next = text.indexOf('\n', start + find.length);
  return next === -1 || text.charCodeAt(next - 1) === 13;
}

function numbered(lines: Lines, from: number, to: number): string {
  const width = String(to + 1).length;
  const out: string[] = [];
  for (let i = from; i <= to; i++) out.push(`${String(i + 1).padStart(width)}\t${lines.line(i)}`);
  return out.join('\n');
}

const squash = (s: string) => s.replace(/\s+/g, ' ').trim();

/** The region of the file most like `old`: lines voting for where old_text would start. */
function closestRegion(lines: Lines, old: string): string {
  let oldLines = old.replace(/\r\n/g, '\n').split('\n');
  const hints: string[] = [];
  if (oldLines.filter((l) => l.trim()).every((l) => /^\s*\d+\t/.test(l))) {
    hints.push('old_text seems to include the "N<TAB>" line-number prefixes from read output; they are not part of the file.');
    oldLines = oldLines.map((l) => l.replace(/^\s*\d+\t/, ''));
  }
  const wanted = new Map<string, number[]>();
  oldLines.forEach((l, j) => {
    const key = squash(l);
    if (key) wanted.set(key, [...(wanted.get(key) ?? []), j]);
  });
  const votes = new Map<number, number>();
  const total = lines.count;
  for (let i = 0; i < total; i++) {
    const hits = wanted.get(squash(lines.line(i)));
    for (const j of hits ?? []) votes.set(i - j, (votes.get(i - j) ?? 0) + 1);
  }
  // No line matches whole: a typo, or a one-line old_text that is only part of a line. Vote with
  // the most similar lines instead, so a near miss still points at its region.
  const similar = votes.size === 0;
  if (similar) similarLineVotes(lines, oldLines, votes);
  let best = -1;
  let bestVotes = 0;
  for (const [start, count] of votes) if (count > bestVotes || (count === bestVotes && start < best)) [best, bestVotes] = [start, count];
  if (bestVotes === 0) {
    hints.push('No line of old_text occurs in the file, even ignoring whitespace; re-read the file before editing.');
    return hints.join(' ');
  }
  const first = Math.max(best, 0);
  const last = Math.min(total, best + oldLines.length) - 1;
  const region: string[] = [];
  for (let i = first; i <= last; i++) region.push(lines.line(i));
  if (similar) hints.push('It is similar to old_text, not equal; copy the text exactly as read shows it.');
  else if (squash(region.join('\n')) === squash(oldLines.join('\n'))) {
    hints.push('That region differs from old_text only in whitespace (indentation, tabs or trailing spaces); copy it exactly.');
  }
  const span = first === last ? `line ${first + 1}` : `lines ${first + 1}-${last + 1}`;
  const shown = numbered(lines, Math.max(0, best - 1), Math.min(total - 1, best + oldLines.length));
  return `The closest region is ${span} (with a line of context):\n${shown}\n${hints.join(' ')}`.trimEnd();
}

/** Files above this are not searched for similar lines: an error message must stay cheap. */
const SIMILAR_SEARCH_MAX_CHARS = 16 * 1024 * 1024;
/** Old lines searched for (each is one pass over the file). */
const SIMILAR_MAX_LINES = 20;
/** Lowest share of old_text's characters that must line up (1 - edit distance / length). */
const SIMILAR_MIN_SCORE = 0.6;

/** For each line of old_text, the file line most like it votes (by its score) for where old_text starts. */
function similarLineVotes(lines: Lines, oldLines: string[], votes: Map<number, number>): void {
  if (lines.text.length > SIMILAR_SEARCH_MAX_CHARS) return;
  const total = lines.count;
  const file: string[] = [];
  for (let i = 0; i < total; i++) file.push(squash(lines.line(i)));
  let searched = 0;
  for (const [j, raw] of oldLines.entries()) {
    const wanted = squash(raw);
    if (wanted.length < 4 || searched++ >= SIMILAR_MAX_LINES) continue;
    const match = mostSimilar(file, wanted);
    if (match) votes.set(match.line - j, (votes.get(match.line - j) ?? 0) + match.score);
  }
}

/**
 * The line containing the closest approximation of `wanted`: a bigram pre-filter picks a few
 * candidates, then edit distance of `wanted` against the best-matching part of each line decides.
 */
function mostSimilar(file: string[], wanted: string): { line: number; score: number } | null {
  const index = new Map<number, number>();
  for (let k = 0; k + 1 < wanted.length; k++) {
    const key = (wanted.charCodeAt(k) << 16) | wanted.charCodeAt(k + 1);
    if (!index.has(key)) index.set(key, index.size);
  }
  const seen = new Int32Array(index.size).fill(-1);
  const candidates: { line: number; shared: number }[] = [];
  for (const [i, text] of file.entries()) {
    let shared = 0;
    for (let k = 0; k + 1 < text.length; k++) {
      const at = index.get((text.charCodeAt(k) << 16) | text.charCodeAt(k + 1));
      if (at !== undefined && seen[at] !== i) {
        seen[at] = i;
        shared++;
      }
    }
    if (shared * 3 >= index.size) candidates.push({ line: i, shared });
  }
  candidates.sort((a, b) => b.shared - a.shared || a.line - b.line);
  let best: { line: number; score: number } | null = null;
  for (const { line } of candidates.slice(0, 8)) {
    const score = 1 - substringDistance(wanted, file[line]!) / wanted.length;
    if (score >= SIMILAR_MIN_SCORE && (!best || score > best.score)) best = { line, score };
  }
  return best;
}

/** Fewest single-character edits turning `pattern` into some part of `text` (Sellers). */
function substringDistance(pattern: string, text: string): number {
  const m = pattern.length;
  // Long lines are cut: beyond this the pre-filter's ranking is as good as an exact figure.
  const t = text.length * m > 4_000_000 ? text.slice(0, Math.floor(4_000_000 / m)) : text;
  const column = Array.from({ length: m + 1 }, (_, i) => i);
  let best = m;
  for (let c = 0; c < t.length; c++) {
    let diagonal = 0; // a match may start anywhere in text
    column[0] = 0;
    for (let i = 1; i <= m; i++) {
      const above = column[i]!;
      column[i] = Math.min(above + 1, column[i - 1]! + 1, diagonal + (pattern.charCodeAt(i - 1) === t.charCodeAt(c) ? 0 : 1));
      diagonal = above;
    }
    best = Math.min(best, column[m]!);
  }
  return best;
}

/**
 * Locate every edit in `text` (as it stands before any of them), check each matches exactly once
 * and none overlap, and apply them all. `shown` is the file's display path for messages.
 */
export function planEdits(text: string, edits: EditSpec[], shown: string): Plan {
  const crlf = usesCrlf(text);
  const located: Located[] = [];
  let lines: Lines | null = null;
  const getLines = () => (lines ??= new Lines(text));
  for (const [index, edit] of edits.entries()) {
    const label = edits.length > 1 ? `edit ${index + 1}: ` : '';
    // As written (adapt): in a CRLF file the new text takes the line ending of where it lands.
    const variants: { find: string; replacement: string; adapt?: boolean }[] = [{ find: edit.old_text, replacement: edit.new_text, adapt: true }];
    if (crlf && /(^|[^\r])\n/.test(edit.old_text)) variants.push({ find: toCrlf(edit.old_text), replacement: toCrlf(edit.new_text) });
    if (!crlf && edit.old_text.includes('\r\n')) {
      variants.push({ find: edit.old_text.replace(/\r\n/g, '\n'), replacement: edit.new_text.replace(/\r\n/g, '\n') });
    }
    let done = false;
    for (const variant of variants) {
      const at = findAll(text, variant.find);
      if (at.length === 0) continue;
      if (at.length > 1) {
        const where = at.slice(0, 10).map((o) => getLines().lineOf(o) + 1);
        const count = at.length >= MAX_COUNTED ? `at least ${MAX_COUNTED}` : String(at.length);
        return {
          ok: false,
          message: `${label}old_text occurs ${count} times in ${shown} (starting on lines ${where.join(', ')}${at.length > 10 ? ', …' : ''}); include more surrounding lines so it matches exactly once.`,
        };
      }
      const replacement = variant.adapt && crlf && landsOnCrlf(text, at[0]!, variant.find) ? toCrlf(variant.replacement) : variant.replacement;
      located.push({ edit: index, start: at[0]!, end: at[0]! + variant.find.length, replacement });
      done = true;
      break;
    }
    if (!done) return { ok: false, message: `${label}old_text was not found in ${shown}. ${closestRegion(getLines(), edit.old_text)}` };
  }
  located.sort((x, y) => x.start - y.start);
  for (let i = 1; i < located.length; i++) {
    const [p, q] = [located[i - 1]!, located[i]!];
    if (q.start < p.end) {
      return { ok: false, message: `edits ${Math.min(p.edit, q.edit) + 1} and ${Math.max(p.edit, q.edit) + 1} overlap in ${shown}; merge them into one edit.` };
    }
  }
  const parts: string[] = [];
  let cursor = 0;
  for (const l of located) {
    parts.push(text.slice(cursor, l.start), l.replacement);
    cursor = l.end;
  }
  parts.push(text.slice(cursor));
  const result = parts.join('');
  if (result === text) return { ok: false, message: `The edits change nothing in ${shown}: each new_text equals its old_text.` };
  return { ok: true, text: result, ...regionalDiff(getLines(), located) };
}

/** A diff built only from the regions around the edits: cheap on a 50 MB file. */
function regionalDiff(lines: Lines, located: Located[], ctx = 3): { diff: string; added: number; removed: number } {
  const span = (l: Located) => [lines.lineOf(l.start), lines.lineOf(Math.max(l.start, l.end - 1))] as const;
  const groups: Located[][] = [];
  for (const l of located) {
    const group = groups[groups.length - 1];
    if (group && span(l)[0] - span(group[group.length - 1]!)[1] <= 2 * ctx + 1) group.push(l);
    else groups.push([l]);
  }
  const hunks: string[] = [];
  let added = 0;
  let removed = 0;
  let shift = 0;
  for (const group of groups) {
    const firstLine = Math.max(0, span(group[0]!)[0] - ctx);
    const lastLine = Math.min(lines.count - 1, span(group[group.length - 1]!)[1] + ctx);
    const from = lines.startOf(firstLine);
    const to = lines.endOf(lastLine);
    let replaced = '';
    let cursor = from;
    for (const l of group) {
      replaced += lines.text.slice(cursor, l.start) + l.replacement;
      cursor = l.end;
    }
    replaced += lines.text.slice(cursor, to);
    const original = lines.text.slice(from, to);
    const d = unifiedDiff(original, replaced, { context: ctx, oldStart: firstLine + 1, newStart: firstLine + 1 + shift });
    hunks.push(d.text);
    added += d.added;
    removed += d.removed;
    shift += countNewlines(replaced) - countNewlines(original);
  }
  return { diff: hunks.filter(Boolean).join('\n'), added, removed };
}

function countNewlines(s: string): number {
  let n = 0;
  for (let i = s.indexOf('\n'); i !== -1; i = s.indexOf('\n', i + 1)) n++;
  return n;
}
