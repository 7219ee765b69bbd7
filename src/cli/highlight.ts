// Syntax colours for code blocks on a terminal. highlight.js (11.x: maintained, no dependencies, a
// grammar per file) does the lexing; its HTML spans are turned into ANSI styles here. Only the
// grammars a block asks for are loaded, synchronously (the renderer runs inside an event emit), so a
// run that shows no code pays nothing.
import { createRequire } from 'node:module';
import type { ChalkInstance } from 'chalk';

interface Hljs {
  registerLanguage(name: string, grammar: unknown): void;
  getLanguage(name: string): unknown;
  highlight(code: string, options: { language: string; ignoreIllegals: boolean }): { value: string };
}

const require = createRequire(import.meta.url);
let hljs: Hljs | null = null;
const missing = new Set<string>();

/** The names people write after ``` that are not highlight.js file names. */
const ALIASES: Record<string, string> = {
  js: 'javascript', jsx: 'javascript', mjs: 'javascript', cjs: 'javascript', ts: 'typescript', tsx: 'typescript',
  sh: 'bash', shell: 'bash', zsh: 'bash', console: 'bash', py: 'python', rb: 'ruby', rs: 'rust', yml: 'yaml',
  md: 'markdown', html: 'xml', htm: 'xml', svg: 'xml', 'c++': 'cpp', cc: 'cpp', h: 'c', hpp: 'cpp', cs: 'csharp',
  kt: 'kotlin', golang: 'go', jsonc: 'json', json5: 'json', patch: 'diff', toml: 'ini', dockerfile: 'dockerfile',
};

function grammar(lang: string): string | null {
  const name = ALIASES[lang] ?? lang;
  if (!/^[a-z0-9-]+$/.test(name) || missing.has(name)) return null;
  try {
    hljs ??= require('highlight.js/lib/core') as Hljs;
    if (!hljs.getLanguage(name)) hljs.registerLanguage(name, require(`highlight.js/lib/languages/${name}`));
    return name;
  } catch {
    missing.add(name);
    return null;
  }
}

type Style = (text: string) => string;

function styles(c: ChalkInstance): Record<string, Style> {
  return {
    keyword: c.magenta, built_in: c.cyan, type: c.cyan, literal: c.blue, number: c.yellow, string: c.green,
    regexp: c.red, symbol: c.yellow, title: c.blue, 'title.function': c.blue, 'title.class': c.cyan, params: (t) => t,
    comment: c.gray, doc: c.gray, meta: c.gray, attr: c.yellow, attribute: c.yellow, name: c.blue, tag: c.gray,
    variable: c.red, 'template-variable': c.red, subst: (t) => t, addition: c.green, deletion: c.red,
    section: c.bold, emphasis: c.italic, strong: c.bold, property: c.blue, operator: (t) => t, punctuation: (t) => t,
  };
}

const ENTITIES: Record<string, string> = { amp: '&', lt: '<', gt: '>', quot: '"', '#x27': "'", '#39': "'" };
const unescape = (text: string) => text.replace(/&(amp|lt|gt|quot|#x27|#39);/g, (_, e: string) => ENTITIES[e]!);

/** The code coloured for `lang`; unchanged when the language is unknown. */
export function highlightCode(code: string, lang: string, c: ChalkInstance): string {
  const name = lang ? grammar(lang.toLowerCase()) : null;
  if (!name || !hljs) return code;
  const html = hljs.highlight(code, { language: name, ignoreIllegals: true }).value;
  const table = styles(c);
  const stack: Style[] = [];
  let out = '';
  // highlight.js emits only <span class="hljs-x"> (possibly nested) and escaped text.
  for (const part of html.split(/(<span class="[^"]*">|<\/span>)/)) {
    if (part.startsWith('<span')) {
      const cls = /class="([^"]*)"/.exec(part)![1]!.split(' ')[0]!.replace(/^hljs-/, '').replace(/_+$/, '');
      stack.push(table[cls] ?? table[cls.split('.')[0]!] ?? stack.at(-1) ?? ((t) => t));
    } else if (part === '</span>') stack.pop();
    else if (part) {
      const style = stack.at(-1);
      // Styled per line, so a line cut or scrolled alone keeps its colour and resets at its end.
      out += unescape(part).split('\n').map((l) => (style && l ? style(l) : l)).join('\n');
    }
  }
  return out;
}
