// What a tool call did, in a few terminal lines: an edit as its path, +added −removed and a compact
// diff; a write as its path and line count; a command as itself, its exit code and its last lines.
// Pure functions from events to text, so the renderer's output can be tested as text.
import { isAbsolute, relative } from 'node:path';
import type { RunEvent } from '../agent/events.ts';

export interface Paint {
  bold(t: string): string;
  dim(t: string): string;
  red(t: string): string;
  green(t: string): string;
  yellow(t: string): string;
  cyan(t: string): string;
}

export interface LineContext {
  paint: Paint;
  /** Columns available now. */
  width: number;
  /** Paths in details are absolute; shown relative to this. */
  cwd: string;
}

/** Diff lines shown before the rest is counted instead. */
export const DIFF_LINES = 12;
/** A command's last output lines kept on screen. */
export const TAIL_LINES = 5;
/** The line src/process/output.ts puts where it cut a command's output. */
const OMITTED = /^\[\.\.\. \d+ bytes omitted[;\]]/;

type Started = Extract<RunEvent, { type: 'tool.started' }>;
type Finished = Extract<RunEvent, { type: 'tool.finished' }>;

/** Tools whose line waits for the result (it carries the counts). */
export function showsAtFinish(name: string): boolean {
  return name === 'edit' || name === 'write';
}

export function startedLine(event: Started, ctx: LineContext): string {
  return fit(`${ctx.paint.cyan('›')} ${ctx.paint.bold(safe(event.name))} ${ctx.paint.dim(summarizeArgs(event.args))}`, ctx.width);
}

/** Lines after a tool ends (the start line too, for edit and write). */
export function finishedLines(event: Finished, args: unknown, ctx: LineContext): string[] {
  const { paint } = ctx;
  const details = event.details ?? {};
  const lines: string[] = [];
  const path = shownPath(details.path, args, ctx.cwd);
  if (event.name === 'edit' || event.name === 'write') {
    if (event.isError) {
      lines.push(`${paint.cyan('›')} ${paint.bold(event.name)} ${paint.dim(path)}`);
    } else {
      const diff = typeof details.diff === 'string' ? details.diff : '';
      const { added, removed } = countDiff(diff);
      const counts = `${paint.green(`+${added}`)} ${paint.red(`−${removed}`)}`;
      const what = event.name === 'write'
        ? `${lineCount(details.newText)}${details.oldText === null ? ', new' : `  ${counts}`}`
        : counts;
      lines.push(`${paint.cyan('›')} ${paint.bold(event.name)} ${path}  ${what}`);
      // A new file's diff is the whole file: its line count says enough.
      if (!(event.name === 'write' && details.oldText === null)) lines.push(...diffLines(diff, ctx));
    }
  }
  const ran = typeof details.exitCode === 'number' || details.timedOut === true || details.cancelled === true || typeof details.signal === 'string';
  const log = event.name === 'bash' && ran ? logLine(details, ctx) : [];
  if (event.name === 'bash' && ran) {
    lines.push(...commandLines(event, ctx));
  } else if (event.isError) {
    lines.push(`  ${paint.red('✗')} ${paint.dim(safe(firstLine(event.output)))}`);
  } else if (typeof details.exitCode === 'number' && details.exitCode !== 0) {
    lines.push(`  ${paint.yellow('!')} ${paint.dim(`exit ${details.exitCode}`)}`);
  }
  return [...lines.map((l) => fit(l, ctx.width)), ...log];
}

/**
 * Where a cut command's whole output is: on a line of its own and never cut to the width, as it is
 * there to be copied, and saying it goes with the run's private directory when conch exits.
 */
function logLine(d: Record<string, unknown>, ctx: LineContext): string[] {
  if (typeof d.logPath !== 'string') return [];
  return [ctx.paint.dim(`  full output (removed when conch exits): ${safe(shownPath(d.logPath, undefined, ctx.cwd))}`)];
}

function diffLines(diff: string, ctx: LineContext): string[] {
  const { paint } = ctx;
  const body = diff.split('\n').filter((l) => l && !l.startsWith('--- ') && !l.startsWith('+++ '));
  const shown = body.slice(0, DIFF_LINES).map((l) => {
    const text = `    ${safe(l)}`;
    if (l.startsWith('@@')) return paint.cyan(text);
    if (l.startsWith('+')) return paint.green(text);
    if (l.startsWith('-')) return paint.red(text);
    return paint.dim(text);
  });
  if (body.length > DIFF_LINES) shown.push(paint.dim(`    … ${body.length - DIFF_LINES} more diff lines`));
  return shown;
}

function commandLines(event: Finished, ctx: LineContext): string[] {
  const { paint } = ctx;
  const d = event.details ?? {};
  // The model's text is the output then one bracketed status line ("[exit 0 …]").
  const body = event.output.replace(/\n?\[[^\n]*\]$/, '');
  const lines = body === '(no output)' ? [] : body.split('\n').filter((l) => l.trim() !== '');
  const out = lines.slice(-TAIL_LINES).map((l) => paint.dim(`  │ ${safe(l)}`));
  // Cut in the middle (head, marker, tail): the lines the model got are not the lines printed, and
  // only the byte count is known, so that is what is said.
  const cut = lines.some((l) => OMITTED.test(l));
  const hidden = cut ? 0 : lines.length - Math.min(lines.length, TAIL_LINES);
  const exit = typeof d.exitCode === 'number' ? d.exitCode : null;
  const status = d.timedOut ? paint.red('✗ timed out') : d.cancelled ? paint.yellow('✗ cancelled')
    : exit === 0 ? paint.green('✓ exit 0') : exit !== null ? paint.red(`✗ exit ${exit}`) : paint.red(`✗ ${d.signal ?? 'failed'}`);
  const notes: string[] = [];
  if (typeof d.durationMs === 'number') notes.push(seconds(d.durationMs));
  if (cut && typeof d.totalBytes === 'number') notes.push(`${d.totalBytes.toLocaleString('en-US')} bytes of output, cut in the middle`);
  if (hidden > 0) notes.push(`${hidden} earlier line${hidden === 1 ? '' : 's'}`);
  return [...out, `  ${status}${notes.length ? paint.dim(` · ${notes.join(' · ')}`) : ''}`];
}

function countDiff(diff: string): { added: number; removed: number } {
  let added = 0;
  let removed = 0;
  for (const l of diff.split('\n')) {
    if (l.startsWith('+') && !l.startsWith('+++ ')) added++;
    else if (l.startsWith('-') && !l.startsWith('--- ')) removed++;
  }
  return { added, removed };
}

function lineCount(text: unknown): string {
  if (typeof text !== 'string') return '';
  const n = text === '' ? 0 : text.split('\n').length - (text.endsWith('\n') ? 1 : 0);
  return `${n} line${n === 1 ? '' : 's'}`;
}

function shownPath(abs: unknown, args: unknown, cwd: string): string {
  if (typeof abs === 'string' && isAbsolute(abs)) {
    const rel = relative(cwd, abs);
    return safe(rel && !rel.startsWith('..') && !isAbsolute(rel) ? rel : abs);
  }
  const typed = args && typeof args === 'object' ? (args as Record<string, unknown>).path : undefined;
  return typeof typed === 'string' ? safe(typed) : '';
}

export function seconds(ms: number): string {
  return ms < 10_000 ? `${(ms / 1000).toFixed(1)}s` : ms < 120_000 ? `${Math.round(ms / 1000)}s` : `${Math.floor(ms / 60_000)}m${Math.round((ms % 60_000) / 1000)}s`;
}

/** One screen line: cut to the width (a wrapped line would break the spinner's erase). */
export function fit(line: string, width: number): string {
  return cutVisible(line, Math.max(10, width));
}

/**
 * Text from the model or a tool, made safe for a terminal: control characters other than newline
 * and tab are dropped (C0, DEL and C1), so escape sequences cannot set the clipboard (OSC 52), the
 * window title, move the cursor to forge lines, or clear the screen.
 */
export function terminalSafe(text: string): string {
  return text.replace(/[\x00-\x08\x0b-\x1f\x7f-\x9f]/g, '');
}

const safe = (text: string) => terminalSafe(text).replace(/\t/g, '  ');

function summarizeArgs(args: unknown): string {
  if (!args || typeof args !== 'object') return typeof args === 'string' ? oneLine(args) : '';
  const a = args as Record<string, unknown>;
  const main = a.command ?? a.path ?? Object.values(a).find((v) => typeof v === 'string');
  return typeof main === 'string' ? oneLine(main) : oneLine(JSON.stringify(args));
}

/** The first line, marked when there was more. */
function oneLine(text: string): string {
  const first = safe(firstLine(text));
  return `${first}${first.length < text.length ? ' …' : ''}`;
}

export function firstLine(text: string): string {
  return text.split('\n', 1)[0] ?? '';
}

/** Columns a string takes on screen (escape codes take none, wide characters two). */
export function visible(text: string): number {
  return Bun.stringWidth(text);
}

/** The longest prefix of `text` that takes at most `width` columns, styles closed. */
export function cutVisible(text: string, width: number): string {
  if (visible(text) <= width) return text;
  let out = '';
  for (const part of text.split(/(\x1b\[[0-9;]*m)/)) {
    if (part.startsWith('\x1b[')) {
      out += part;
      continue;
    }
    for (const ch of part) {
      if (visible(out + ch) > width) return /\x1b\[/.test(out) ? `${out}\x1b[0m` : out;
      out += ch;
    }
  }
  return out;
}
