// Parsing a JSON file a person wrote (config, policy): a leading UTF-8 byte-order mark is accepted
// (editors on Windows write one, and it is invisible), and a syntax error says where it is, by line
// and column, because the parser's own message ("Unrecognized token") does not.

export type JsonText = { ok: true; value: unknown } | { ok: false; message: string };

const BOM = '\uFEFF';

/** The parsed value, or a message such as `not valid JSON at line 3, column 7 (Unexpected identifier "tru")`. */
export function parseJsonText(raw: string): JsonText {
  const text = raw.startsWith(BOM) ? raw.slice(BOM.length) : raw;
  try {
    return { ok: true, value: JSON.parse(text) };
  } catch (e) {
    const why = (e as Error).message.replace(/^JSON Parse error:\s*/, '');
    const offset = firstBadOffset(text);
    if (offset < 0) return { ok: false, message: `not valid JSON (${why})` };
    const { line, column } = lineColumn(text, offset);
    const found = offset >= text.length ? 'the end of the file' : JSON.stringify(text.slice(offset, offset + 12).split('\n')[0]);
    return { ok: false, message: `not valid JSON at line ${line}, column ${column}, at ${found} (${why})` };
  }
}

function lineColumn(text: string, offset: number): { line: number; column: number } {
  let line = 1;
  let lineStart = 0;
  for (let i = 0; i < offset; i++) {
    if (text.charCodeAt(i) === 10) {
      line++;
      lineStart = i + 1;
    }
  }
  return { line, column: offset - lineStart + 1 };
}

const SCALAR = /-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?|true|false|null/y;
const ESCAPES = '"\\/bfnrt';

/**
 * Where `text` stops being JSON (an offset), or -1 when it is valid. Iterative, so that a hostile
 * file nested a million levels deep costs memory, not the call stack.
 */
function firstBadOffset(text: string): number {
  const stack: ('{' | '[')[] = [];
  let i = 0;
  let want: 'value' | 'key' | 'after' = 'value';
  const skipSpace = () => {
    while (i < text.length && ' \t\n\r'.includes(text[i]!)) i++;
  };
  // At an opening quote: past the closing one, or false with `i` at the offending character.
  const string = (): boolean => {
    i++;
    while (i < text.length) {
      const c = text.charCodeAt(i);
      if (c === 34) {
        i++;
        return true;
      }
      if (c < 0x20) return false;
      if (c !== 92) {
        i++;
        continue;
      }
      const e = text[i + 1];
      if (e === 'u' && /^[0-9a-fA-F]{4}$/.test(text.slice(i + 2, i + 6))) i += 6;
      else if (e !== undefined && e !== 'u' && ESCAPES.includes(e)) i += 2;
      else return false;
    }
    return false;
  };
  for (;;) {
    skipSpace();
    if (want === 'key') {
      if (text[i] !== '"' || !string()) return i;
      skipSpace();
      if (text[i] !== ':') return i;
      i++;
      want = 'value';
      continue;
    }
    if (want === 'after') {
      const top = stack.at(-1);
      if (top === undefined) return i < text.length ? i : -1;
      if (text[i] === ',') {
        i++;
        want = top === '{' ? 'key' : 'value';
      } else if (text[i] === (top === '{' ? '}' : ']')) {
        i++;
        stack.pop();
      } else return i;
      continue;
    }
    const c = text[i];
    if (c === '{' || c === '[') {
      stack.push(c);
      i++;
      skipSpace();
      if (text[i] === (c === '{' ? '}' : ']')) {
        i++;
        stack.pop();
        want = 'after';
      } else want = c === '{' ? 'key' : 'value';
      continue;
    }
    if (c === '"') {
      if (!string()) return i;
      want = 'after';
      continue;
    }
    SCALAR.lastIndex = i;
    const m = SCALAR.exec(text);
    if (!m) return i;
    i += m[0].length;
    want = 'after';
  }
}
