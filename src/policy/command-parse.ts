// Literal parsing of one POSIX *simple command* for command rules: quotes, escapes, leading
// NAME=value assignments and the `env NAME=value cmd` wrapper. Anything the shell would expand or
// combine (pipes, lists, redirections, substitutions, variables, globs, braces, tildes, …) is
// reported as the construct it is, never interpreted: a rule can only be proven against a command
// whose argv is known exactly from its text. This is deliberately not a shell parser.

export type Construct =
  | 'pipe'
  | 'sequence'
  | 'and'
  | 'or'
  | 'background'
  | 'redirection'
  | 'here-doc'
  | 'here-string'
  | 'process substitution'
  | 'subshell'
  | 'command substitution'
  | 'arithmetic expansion'
  | 'backticks'
  | 'variable expansion'
  | 'dollar quoting'
  | 'glob'
  | 'brace expansion'
  | 'tilde'
  | 'negation'
  | 'reserved word'
  | 'shell builtin'
  | 'env option'
  | 'unterminated quote'
  | 'trailing backslash'
  | 'control character'
  | 'empty command'
  | 'no command';

export interface Assignment {
  name: string;
  value: string;
}

export type ParsedCommand =
  | { ok: true; assignments: Assignment[]; argv: string[] }
  | { ok: false; construct: Construct; message: string };

/** Words the shell treats as syntax when they start a command unquoted. */
const RESERVED = new Set([
  'if', 'then', 'else', 'elif', 'fi', 'do', 'done', 'case', 'esac', 'while', 'until', 'for', 'in',
  'function', 'select', 'time', 'coproc', '{', '}', '[[', ']]',
]);

// Builtins that run or redefine other code, or change how later code runs; the shell never looks
// them up on PATH, so no rule about an executable file could describe what they do.
const BUILTINS = new Set([
  '.', 'source', 'eval', 'exec', 'command', 'builtin', 'trap', 'alias', 'unalias', 'set', 'export',
  'unset', 'readonly', 'local', 'declare', 'typeset', 'let', 'shopt', 'enable', 'fc', 'hash', 'cd',
  'ulimit', 'umask', 'read', 'wait', 'jobs', 'fg', 'bg', 'disown', 'return', 'exit', 'break',
  'continue', 'shift', 'getopts', 'times',
]);

const NAME_ASSIGNMENT = /^[A-Za-z_][A-Za-z0-9_]*=/;

interface Word {
  value: string;
  /** Offset in `value` of the first quoted or escaped character (Infinity when none). */
  quotedAt: number;
}

class Refusal {
  constructor(
    readonly construct: Construct,
    readonly message: string,
  ) {}
}

function refuse(construct: Construct, what: string, at: number): never {
  throw new Refusal(construct, `${what} at column ${at + 1}`);
}

function isControl(ch: string): boolean {
  const code = ch.charCodeAt(0);
  return (code < 0x20 && ch !== '\t' && ch !== '\n') || code === 0x7f;
}

/** What follows an unquoted (or double-quoted) `$`, or null when the `$` is literal. */
function dollar(src: string, i: number, inDouble: boolean): Construct | null {
  const next = src[i + 1];
  if (next === undefined) return null;
  if (next === '(') return src[i + 2] === '(' ? 'arithmetic expansion' : 'command substitution';
  if (next === '{' || /[A-Za-z_0-9@*#?$!-]/.test(next)) return 'variable expansion';
  if (!inDouble && (next === "'" || next === '"')) return 'dollar quoting';
  return null;
}

const DOLLAR_TEXT: Record<string, string> = {
  'arithmetic expansion': "arithmetic expansion '$((…))'",
  'command substitution': "command substitution '$(…)'",
  'variable expansion': "variable expansion '$…'",
  'dollar quoting': "dollar quoting '$'…'' or '$\"…\"'",
};

function tokenize(src: string): Word[] {
  const words: Word[] = [];
  let value = '';
  let quotedAt = Infinity;
  let inWord = false;
  const markQuoted = () => {
    if (quotedAt === Infinity) quotedAt = value.length;
    inWord = true;
  };
  const endWord = () => {
    if (inWord) words.push({ value, quotedAt });
    value = '';
    quotedAt = Infinity;
    inWord = false;
  };

  for (let i = 0; i < src.length; i++) {
    const ch = src[i]!;
    if (isControl(ch)) refuse('control character', `control character U+${ch.charCodeAt(0).toString(16).padStart(4, '0')}`, i);
    switch (ch) {
      case ' ':
      case '\t':
        endWord();
        continue;
      case '\n':
        refuse('sequence', 'a newline (a second command)', i);
      case '#':
        if (!inWord) {
          // A comment runs to the end of the line; anything after a newline is another command.
          const nl = src.indexOf('\n', i);
          if (nl === -1) i = src.length;
          else refuse('sequence', 'a newline (a second command)', nl);
          continue;
        }
        break;
      case "'": {
        const close = src.indexOf("'", i + 1);
        if (close === -1) refuse('unterminated quote', 'an unterminated single quote', i);
        markQuoted();
        const inner = src.slice(i + 1, close);
        for (let k = 0; k < inner.length; k++) {
          if (isControl(inner[k]!)) refuse('control character', 'a control character', i + 1 + k);
        }
        value += inner;
        i = close;
        continue;
      }
      case '"': {
        markQuoted();
        let j = i + 1;
        for (; ; j++) {
          const c = src[j];
          if (c === undefined) refuse('unterminated quote', 'an unterminated double quote', i);
          if (c === '"') break;
          if (isControl(c)) refuse('control character', 'a control character', j);
          if (c === '\\') {
            const n = src[j + 1];
            if (n === '\n') j++;
            else if (n === '$' || n === '`' || n === '"' || n === '\\') {
              value += n;
              j++;
            } else value += '\\';
            continue;
          }
          if (c === '`') refuse('backticks', 'backticks (command substitution)', j);
          if (c === '$') {
            const construct = dollar(src, j, true);
            if (construct) refuse(construct, DOLLAR_TEXT[construct]!, j);
          }
          value += c;
        }
        i = j;
        continue;
      }
      case '\\': {
        const n = src[i + 1];
        if (n === undefined) refuse('trailing backslash', 'a trailing backslash', i);
        i++;
        if (n === '\n') continue; // line continuation
        markQuoted();
        value += n;
        continue;
      }
      case '$': {
        const construct = dollar(src, i, false);
        if (construct) refuse(construct, DOLLAR_TEXT[construct]!, i);
        break;
      }
      case '`':
        refuse('backticks', 'backticks (command substitution)', i);
      case '|':
        if (src[i + 1] === '|') refuse('or', "'||'", i);
        refuse('pipe', "a pipe '|'", i);
      case '&':
        if (src[i + 1] === '&') refuse('and', "'&&'", i);
        if (src[i + 1] === '>') refuse('redirection', "a redirection '&>'", i);
        refuse('background', "'&' (background job)", i);
      case ';':
        refuse('sequence', "';' (a second command)", i);
      case '<':
        if (src[i + 1] === '(') refuse('process substitution', "process substitution '<(…)'", i);
        if (src.startsWith('<<<', i)) refuse('here-string', "a here-string '<<<'", i);
        if (src[i + 1] === '<') refuse('here-doc', "a here-doc '<<'", i);
        refuse('redirection', "a redirection '<'", i);
      case '>':
        if (src[i + 1] === '(') refuse('process substitution', "process substitution '>(…)'", i);
        refuse('redirection', "a redirection '>'", i);
      case '(':
      case ')':
        refuse('subshell', `'${ch}' (subshell or grouping)`, i);
      case '*':
      case '?':
        refuse('glob', `a glob '${ch}'`, i);
      case '[': {
        // '[' opens a bracket expression only when a ']' follows in the same word.
        const rest = src.slice(i + 1).split(/[\s;&|<>()]/, 1)[0] ?? '';
        if (rest.includes(']')) refuse('glob', "a glob '[…]'", i);
        break;
      }
      case '{':
        // `{}` standing alone is literal (find -exec … {} +); every other unquoted brace may expand.
        if (!inWord && src[i + 1] === '}' && /^[ \t]?$/.test(src[i + 2] ?? '')) {
          value += '{}';
          inWord = true;
          i++;
          continue;
        }
        refuse('brace expansion', "an unquoted '{' (brace expansion or group)", i);
      case '~':
        if (!inWord || src[i - 1] === '=' || src[i - 1] === ':') refuse('tilde', "a tilde '~' (home directory expansion)", i);
        break;
    }
    value += ch;
    inWord = true;
  }
  endWord();
  return words;
}

function unwrapEnv(argv: string[], assignments: Assignment[]): ParsedCommand {
  // `env NAME=value … cmd` runs cmd; env's own options change what runs or how, so they are refused.
  for (;;) {
    const head = argv[0]!;
    if (head !== 'env' && !/^\/(?:usr\/)?bin\/env$/.test(head)) break;
    let k = 1;
    const set: Assignment[] = [];
    for (; k < argv.length; k++) {
      const word = argv[k]!;
      if (word === '--') {
        k++;
        break;
      }
      if (word.startsWith('-')) {
        return { ok: false, construct: 'env option', message: `env option '${word}' (only 'env NAME=value … command' is understood)` };
      }
      const eq = word.indexOf('=');
      if (eq <= 0) break;
      set.push({ name: word.slice(0, eq), value: word.slice(eq + 1) });
    }
    if (k >= argv.length) break; // plain `env …` prints the environment: env itself is the program
    assignments.push(...set);
    argv = argv.slice(k);
  }
  return { ok: true, assignments, argv };
}

/** Parse `src` as one simple command; see the module comment for what is refused. */
export function parseCommand(src: string): ParsedCommand {
  let words: Word[];
  try {
    words = tokenize(src);
  } catch (e) {
    if (e instanceof Refusal) return { ok: false, construct: e.construct, message: e.message };
    throw e;
  }
  if (words.length === 0) return { ok: false, construct: 'empty command', message: 'an empty command' };

  const assignments: Assignment[] = [];
  let i = 0;
  for (; i < words.length; i++) {
    const w = words[i]!;
    const m = NAME_ASSIGNMENT.exec(w.value);
    if (!m || m[0].length > w.quotedAt) break;
    assignments.push({ name: m[0].slice(0, -1), value: w.value.slice(m[0].length) });
  }
  if (i === words.length) {
    return { ok: false, construct: 'no command', message: 'only variable assignments, no command' };
  }
  const first = words[i]!;
  if (first.quotedAt === Infinity) {
    if (first.value === '!') return { ok: false, construct: 'negation', message: "'!' (pipeline negation)" };
    if (RESERVED.has(first.value)) {
      return { ok: false, construct: 'reserved word', message: `the shell keyword '${first.value}'` };
    }
  }
  if (BUILTINS.has(first.value)) {
    return { ok: false, construct: 'shell builtin', message: `the shell builtin '${first.value}' (not a program on PATH)` };
  }
  return unwrapEnv(words.slice(i).map((w) => w.value), assignments);
}
