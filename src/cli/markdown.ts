// The model's Markdown as a terminal shows it. marked (18.x: the most used Markdown lexer, fast,
// CommonMark + GFM tables, no dependencies) splits the text into blocks; each block is drawn here
// with chalk. Streaming: text arrives in deltas, and a block is drawn once the next one has begun
// (so it cannot change any more; a list once the next block can no longer be one of its items);
// the last block waits for more text or for the end. What is drawn never depends on where the
// deltas split (test/unit/markdown-stream.test.ts tries every split). On a terminal (`live`) the
// open paragraph is shown meanwhile too (markdown-live.ts); the screen still ends as it would have.
// Paragraphs are not hard-wrapped: the terminal wraps them, and re-wraps them when it is resized.
// Tables and rules are drawn to the width at the time they complete.
import { Chalk, type ChalkInstance } from 'chalk';
import { Lexer, type Token, type Tokens } from 'marked';
import { highlightCode } from './highlight.ts';
import { cutVisible, terminalSafe, visible } from './tool-lines.ts';
import { eraseShown, settledSource } from './markdown-live.ts';

export interface MarkdownOptions {
  /** ANSI styles; without them the layout stays and the markup characters go. */
  color: boolean;
  /** The terminal's width now (asked for every block, so a resize applies to what follows). */
  width: () => number;
  /**
   * On a terminal: the paragraph being written is shown as it arrives (markdown-live.ts), with the
   * screen's size now to erase it by when the finished block draws otherwise.
   */
  live?: { columns: () => number; rows: () => number };
}

export interface MarkdownStream {
  /** More text; returns what can be drawn now (whole blocks, and with `live` the open paragraph so far). */
  push(text: string): string;
  /** The text is over: draw whatever is left. */
  end(): string;
  /**
   * Something else is about to be written (a warning on stderr): takes the open paragraph shown so
   * far off the screen ('' when none is), to be shown again by the next push. When it no longer
   * fits on the screen it stays, and the line is ended instead.
   */
  retract(): string;
}

/**
 * The text not drawn yet is lexed again at each delta: within one long block (a model writing a
 * whole file into a code fence, or a hostile one streaming megabytes of it) that work is quadratic,
 * minutes of a stuck terminal. Past this many characters it is lexed again only once it has grown by
 * an eighth, which keeps the work linear; such a block is drawn a little later, and the same.
 */
const RELEX_EVERY_DELTA_BELOW = 16 * 1024;

export function markdownStream(options: MarkdownOptions): MarkdownStream {
  const c = new Chalk({ level: options.color ? 2 : 0 });
  // The text not drawn yet, exactly as it arrived (line ends made \n, as marked makes them).
  let pending = '';
  // A \r that ended a delta: whether it is a line end of its own or half of \r\n shows with the next.
  let cr = '';
  let blocks = 0;
  // How long `pending` was when it was last lexed.
  let lexed = 0;
  // What is on screen of the open paragraph (its separator first), not drawn as a block yet; once
  // `kept`, no more is shown of it (it could not be erased, or a line was ended after it).
  let shown = '';
  let kept = false;
  // A line was ended after it (retract): the cursor is no longer where it ends.
  let moved = false;
  const erase = (text: string) => (options.live ? eraseShown(text, Math.max(1, options.live.columns()), options.live.rows()) : null);
  /** The drawing of finished blocks, the first of them the open paragraph partly shown. */
  const settle = (out: string) => {
    const before = shown;
    const away = moved;
    shown = '';
    kept = moved = false;
    if (!before || out.startsWith(before)) return out.slice(before.length);
    if (away) return out;
    // Drawn otherwise than shown (a setext heading, a span guessed wrong): drawn again in its place,
    // or below it when the screen no longer holds all of it.
    return `${erase(before) ?? '\n'}${out}`;
  };
  /** The open paragraph (the last block, `src` from its start), shown as far as it is settled. */
  const showOpen = (token: Token | undefined, src: string) => {
    if (!options.live || kept || token?.type !== 'paragraph') return '';
    const settled = settledSource(src);
    const tokens = settled ? new Lexer().lex(settled).filter((t) => t.type !== 'space') : [];
    if (tokens.length !== 1 || tokens[0]!.type !== 'paragraph') return '';
    const next = `${blocks ? '\n' : ''}${block(tokens[0]!, c, options.width())}`;
    if (next.startsWith(shown)) {
      const more = next.slice(shown.length);
      shown = next;
      return more;
    }
    const back = erase(shown);
    if (back === null) {
      kept = true;
      return '';
    }
    shown = next;
    return back + next;
  };
  const draw = (tokens: Token[]) => {
    let out = '';
    for (const token of tokens) {
      if (token.type === 'space') continue;
      // One blank line between blocks, as the Markdown meant.
      out += `${blocks++ ? '\n' : ''}${block(token, c, options.width())}\n`;
    }
    return out;
  };
  return {
    push(text) {
      const more = cr + text;
      cr = more.endsWith('\r') ? '\r' : '';
      pending += (cr ? more.slice(0, -1) : more).replace(/\r\n?/g, '\n');
      if (pending.length > RELEX_EVERY_DELTA_BELOW && pending.length - lexed < pending.length / 8) return '';
      lexed = pending.length;
      const tokens = new Lexer().lex(pending);
      let last = tokens.length - 1;
      while (last >= 0 && tokens[last]!.type === 'space') last--;
      let done = Math.max(0, last);
      // A list stays open while the block after it may still turn out to be its next item
      // ("1. a\n\n2" before ". b" arrives), or the items would be drawn as two lists.
      let before = done - 1;
      while (before >= 0 && tokens[before]!.type === 'space') before--;
      if (before >= 0 && tokens[before]!.type === 'list' && /^[ \t]*(\d{1,9}|[-+*])?$/.test(source(tokens, done, pending))) done = before;
      // Only a paragraph that is the first block not drawn is shown open: what was shown of it is
      // what the next drawing of finished blocks starts with.
      const lexedText = pending;
      const open = (from: number) => (tokens.slice(from, last).every((t) => t.type === 'space') ? showOpen(tokens[last], source(tokens, last, lexedText)) : '');
      if (done <= 0) return open(0);
      // What is kept is cut from the text itself: marked rewrites some raws ("- " becomes "-\n"),
      // and text rebuilt from them would lex differently. If the raws do not add up to the text's
      // start, nothing is final yet.
      const drawn = tokens.slice(0, done).map((t) => t.raw).join('');
      if (!pending.startsWith(drawn)) return '';
      pending = pending.slice(drawn.length);
      lexed = pending.length;
      const out = settle(draw(tokens.slice(0, done)));
      return out + open(done);
    },
    end() {
      const rest = pending + (cr ? '\n' : '');
      const out = rest.trim() ? draw(new Lexer().lex(rest)) : '';
      pending = cr = '';
      lexed = 0;
      return settle(out);
    },
    retract() {
      if (!shown || kept) return '';
      const back = erase(shown);
      if (back !== null) {
        shown = '';
        return back;
      }
      kept = moved = true;
      return '\n';
    },
  };
}

/** The text from token `from` on, as the tokens before it leave it ('' if their raws do not match the text). */
function source(tokens: Token[], from: number, text: string): string {
  const head = tokens.slice(0, from).map((t) => t.raw).join('');
  return text.startsWith(head) ? text.slice(head.length) : '';
}

/** A whole text at once (tests, and a non-streamed answer). */
export function renderMarkdown(text: string, options: MarkdownOptions): string {
  const stream = markdownStream(options);
  return stream.push(text) + stream.end();
}

function block(token: Token, c: ChalkInstance, width: number): string {
  switch (token.type) {
    case 'heading': {
      const t = token as Tokens.Heading;
      const text = inline(t.tokens, c);
      // Without styles the level stays visible as Markdown writes it.
      if (!c.level) return `${'#'.repeat(t.depth)} ${text}`;
      return t.depth === 1 ? c.bold.underline(text) : t.depth === 2 ? c.bold(text) : c.bold.dim(text);
    }
    case 'paragraph':
      return inline((token as Tokens.Paragraph).tokens, c);
    case 'text': {
      const t = token as Tokens.Text;
      return t.tokens ? inline(t.tokens, c) : leaf(t.text);
    }
    case 'code': {
      const t = token as Tokens.Code;
      const lang = leaf((t.lang ?? '').split(/\s/)[0] ?? '');
      const body = c.level ? highlightCode(leaf(t.text), lang, c) : leaf(t.text);
      const rule = c.dim((lang ? `─── ${lang} ` : '').padEnd(Math.min(width, 40), '─').slice(0, width));
      return `${rule}\n${body.split('\n').map((l) => `  ${l}`).join('\n')}\n${c.dim('─'.repeat(Math.min(width, 40)))}`;
    }
    case 'blockquote': {
      const inner = (token as Tokens.Blockquote).tokens.filter((t) => t.type !== 'space').map((t) => block(t, c, width - 2)).join('\n\n');
      return inner.split('\n').map((l) => `${c.dim('│')} ${c.italic(l)}`).join('\n');
    }
    case 'list':
      return list(token as Tokens.List, c, width);
    case 'table':
      return table(token as Tokens.Table, c, width);
    case 'hr':
      return c.dim('─'.repeat(Math.max(1, Math.min(width, 80))));
    case 'html':
      return leaf((token as Tokens.HTML).text.replace(/\n+$/, ''));
    default:
      return 'tokens' in token && Array.isArray(token.tokens) ? inline(token.tokens, c) : leaf(token.raw.replace(/\n+$/, ''));
  }
}

function list(t: Tokens.List, c: ChalkInstance, width: number): string {
  const start = typeof t.start === 'number' ? t.start : 1;
  return t.items
    .map((item, i) => {
      const mark = item.task ? (item.checked ? '☑' : '☐') : t.ordered ? `${start + i}.` : '•';
      // marked gives a task item's box as a token of its own: the mark above draws it.
      const body = item.tokens
        .filter((x) => x.type !== 'space' && x.type !== 'checkbox')
        .map((x) => block(x, c, width - mark.length - 1))
        .join(item.loose ? '\n\n' : '\n');
      const pad = ' '.repeat(mark.length + 1);
      return body.split('\n').map((l, n) => (n === 0 ? `${c.cyan(mark)} ${l}` : l ? `${pad}${l}` : l)).join('\n');
    })
    .join(t.loose ? '\n\n' : '\n');
}

function table(t: Tokens.Table, c: ChalkInstance, width: number): string {
  const head = t.header.map((cell) => inline(cell.tokens, c));
  const rows = t.rows.map((r) => r.map((cell) => inline(cell.tokens, c)));
  const cols = head.length;
  const widths = head.map((h, i) => Math.max(visible(h), ...rows.map((r) => visible(r[i] ?? ''))));
  // Too wide for the terminal: the widest columns give way, cells are cut with an ellipsis.
  const budget = Math.max(cols * 4, width - (cols * 3 + 1));
  while (widths.reduce((a, b) => a + b, 0) > budget) {
    const widest = widths.indexOf(Math.max(...widths));
    if (widths[widest]! <= 3) break;
    widths[widest]!--;
  }
  const cell = (text: string, i: number) => {
    const w = widths[i]!;
    const fitted = visible(text) > w ? `${cutVisible(text, w - 1)}…` : text;
    const gap = ' '.repeat(Math.max(0, w - visible(fitted)));
    const align = t.align[i];
    if (align === 'right') return gap + fitted;
    if (align === 'center') return gap.slice(0, gap.length >> 1) + fitted + gap.slice(gap.length >> 1);
    return fitted + gap;
  };
  const line = (cells: string[]) => `${c.dim('│')} ${cells.map(cell).join(` ${c.dim('│')} `)} ${c.dim('│')}`;
  const rule = (l: string, m: string, r: string) => c.dim(`${l}${widths.map((w) => '─'.repeat(w + 2)).join(m)}${r}`);
  return [rule('┌', '┬', '┐'), line(head.map((h) => c.bold(h))), rule('├', '┼', '┤'), ...rows.map(line), rule('└', '┴', '┘')].join('\n');
}

function inline(tokens: Token[] | undefined, c: ChalkInstance): string {
  let out = '';
  for (const token of tokens ?? []) {
    switch (token.type) {
      case 'strong':
        out += c.bold(inline((token as Tokens.Strong).tokens, c));
        break;
      case 'em':
        out += c.italic(inline((token as Tokens.Em).tokens, c));
        break;
      case 'del': {
        // Struck-out text without styles would read as meant: it keeps its marks.
        const text = inline((token as Tokens.Del).tokens, c);
        out += c.level ? c.strikethrough(text) : `~~${text}~~`;
        break;
      }
      case 'codespan':
        out += c.level ? c.yellow(leaf((token as Tokens.Codespan).text)) : `\`${leaf((token as Tokens.Codespan).text)}\``;
        break;
      case 'link': {
        const t = token as Tokens.Link;
        const text = inline(t.tokens, c);
        // The address is shown unless the text already is it (autolinks, bare URLs).
        out += t.text === t.href || `mailto:${t.text}` === t.href ? c.blue.underline(text) : `${c.blue.underline(text)} ${c.dim(`(${leaf(t.href)})`)}`;
        break;
      }
      case 'image': {
        const t = token as Tokens.Image;
        out += `${c.dim('[image:')} ${leaf(t.text)} ${c.dim(`(${leaf(t.href)})]`)}`;
        break;
      }
      case 'br':
        out += '\n';
        break;
      // A loose task item's box is in its paragraph; the list's mark draws it.
      case 'checkbox':
        break;
      case 'text':
        out += 'tokens' in token && token.tokens ? inline(token.tokens, c) : leaf(unescapeHtml((token as Tokens.Text).text));
        break;
      case 'escape':
        out += leaf((token as Tokens.Escape).text);
        break;
      default:
        out += leaf(unescapeHtml(token.raw));
    }
  }
  return out;
}

/**
 * Text from the model, as it goes on screen. The deltas were made terminal-safe, but marked decodes
 * character references (`&#27;`, `&#x9b;`): decoded, they would be escape sequences again.
 */
const leaf = terminalSafe;

const unescapeHtml = (text: string) =>
  text.replace(/&(amp|lt|gt|quot|#39);/g, (_, e: string) => ({ amp: '&', lt: '<', gt: '>', quot: '"', '#39': "'" })[e]!);
