// The paragraph still being written, shown as it arrives (markdown.ts draws a block only once it is
// complete, which for a long paragraph is seconds of nothing). What is shown is the paragraph's
// text up to its last whole word and before any markup that is not closed yet, drawn as the
// finished paragraph would draw it; when the block completes, the finished drawing normally goes
// on from there. When it does not (a setext underline made the paragraph a heading, a span came
// out otherwise than guessed), what was shown is erased and drawn again, provided it still fits on
// the screen: the cursor cannot reach lines scrolled away.

/** What may be shown of an open paragraph's source `src` ('' for nothing yet). */
export function settledSource(src: string): string {
  // A paragraph's first line that starts otherwise may still turn out to be a list, a quote, a
  // heading, a table, HTML: nothing is shown until the block is known.
  if (!startsWith(WORD_START, src, 0)) return '';
  let end = src.length;
  // Stopped at a line's end, the words before it are whole.
  let whole = false;
  for (let i = 0; i < src.length; ) {
    // A later line may start a block of its own (or be a table's rule): shown once it starts with a word.
    if (src[i] === '\n' && !startsWith(WORD_START, src, i + 1)) {
      end = i;
      whole = true;
      break;
    }
    const span = closedSpan(src, i);
    if (span === null) {
      end = i;
      break;
    }
    i = span;
  }
  const text = src.slice(0, end);
  // The last word may be only part of one (an address, a word that opens or closes a span).
  if (whole || /\s$/.test(text)) return text.trimEnd();
  return text.slice(0, lastWordEnd(text)).trimEnd();
}

// Chinese and Japanese are written without spaces: each of their characters ends a word, or a
// paragraph of them would show nothing until it ended.
const WORD_CHAR = /[\p{Script=Han}\p{Script=Hiragana}\p{Script=Katakana}\u3000-\u303f\uff01-\uff60]/u;

/** Where the text's last whole word ends: at its last space or line break, or after its last CJK character. */
function lastWordEnd(text: string): number {
  for (let i = text.length - 1; i >= 0; i--) {
    const ch = text[i]!;
    if (ch === ' ' || ch === '\n') return i;
    if (WORD_CHAR.test(ch)) return i + 1;
    // The low half of a character outside the BMP (CJK extension B on): the pair is the character.
    if (i > 0 && /[\udc00-\udfff]/.test(ch) && WORD_CHAR.test(text.slice(i - 1, i + 1))) return i + 1;
  }
  return 0;
}

// Sticky: matched where startsWith puts them, with no copy of the text (a paragraph is scanned at each delta).
const WORD_START = / {0,3}[\p{L}"'(]/uy;
const ADDRESS = /https?:\/\/|ftp:\/\/|www\./iy;
const RUN = /`+|\*+|_+|~+/y;
const LINK = /!?\[[^\[\]\\`<]*\]\([^()\s\\<]*\)/y;

function startsWith(re: RegExp, text: string, at: number): RegExpExecArray | null {
  re.lastIndex = at;
  return re.exec(text);
}

/**
 * Where the text from `i` on is past whatever starts at `i`: the next character for plain text, the
 * end of a closed code span, emphasis or link; null when what starts there is not closed yet (or
 * is something this does not guess at: HTML, entities, addresses, escapes).
 */
function closedSpan(src: string, i: number): number | null {
  const ch = src[i]!;
  // "a & b", "x < y" are text; "&amp;", "<b>" may not be.
  if ((ch === '&' || ch === '<') && /\s/.test(src[i + 1] ?? '')) return i + 1;
  if ('\\<&|@\t\r'.includes(ch) || startsWith(ADDRESS, src, i)) return null;
  if (ch === '`' || ch === '*' || ch === '_' || ch === '~') {
    const run = startsWith(RUN, src, i)![0];
    // An underscore inside a word is a letter (snake_case).
    if (ch === '_' && /\w/.test(src[i - 1] ?? '') && /\w/.test(src[i + run.length] ?? '')) return i + run.length;
    const close = src.indexOf(run, i + run.length + 1);
    if (close === -1) return null;
    const after = src[close + run.length];
    // The run must end there (not be part of a longer one), and what follows must be known.
    if (after === undefined || after === ch) return null;
    // A code span's body is literal; emphasis must hold no unclosed markup of its own.
    if (ch !== '`' && /[`\\<&\[\]]/.test(src.slice(i + run.length, close))) return null;
    return close + run.length;
  }
  if (ch === '[' || ch === ']' || ch === '!') {
    if (ch === '!' && src[i + 1] !== '[') return i + 1;
    if (ch === ']') return null;
    const m = startsWith(LINK, src, i);
    return m && i + m[0].length < src.length ? i + m[0].length : null;
  }
  return i + 1;
}

/**
 * How to take `shown` off the screen when the cursor is right after it and it began at a line's
 * start; null when it takes more rows than the screen has (some are out of the cursor's reach).
 */
export function eraseShown(shown: string, columns: number, rows: number): string | null {
  let lines = 0;
  for (const line of shown.split('\n')) lines += Math.max(1, Math.ceil(Bun.stringWidth(line) / columns));
  if (lines >= rows) return null;
  return `\r${lines > 1 ? `\x1b[${lines - 1}A` : ''}\x1b[J`;
}
