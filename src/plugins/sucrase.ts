// The fast path for transpiling a plugin file: sucrase instead of Babel where the two give the same
// module. Babel (jiti's) costs ≈ 76 ms to load and 6–8 ms a file; sucrase a fraction of both, so
// a first start with many plugins is mostly spent elsewhere. Sucrase is a token-level rewrite that
// keeps every line where it was; what it would make differently from jiti's Babel (no interop,
// imports hoisted and awaited) is sent to Babel instead, and so is anything this file is not sure
// of: when in doubt, Babel.
import { createRequire } from 'node:module';
import type { Token } from 'sucrase/dist/types/parser/tokenizer/index';
import type { TransformRequest } from './babel.ts';
import { sucraseFile } from './bundled-copies.ts';
import { transpiling } from './transpiling.ts';

interface SucraseLib {
  transform: (code: string, options: Record<string, unknown>) => { code: string; sourceMap?: { mappings: string } };
  getVersion: () => string;
  parse: (input: string, jsx: boolean, typescript: boolean, flow: boolean) => { tokens: Token[] };
  TokenType: Record<string, number>;
}

/**
 * A column moved after sucrase wrote the code: on `line` (0-based), everything after `column` is
 * `delta` further right. Shifts apply in order, each to the code as the ones before it left it.
 */
export interface Shift {
  line: number;
  column: number;
  delta: number;
}

export type FastResult = { ok: true; code: string; shifts: Shift[]; mappings?: string } | { ok: false; reason: string };

let lib: SucraseLib | null | undefined;

/** sucrase, loaded on first use (its load counts as transpiling); null when it is not installed. */
function sucrase(): SucraseLib | null {
  if (lib === undefined) {
    const file = sucraseFile();
    lib = file ? (createRequire(import.meta.url)(file) as SucraseLib) : null;
  }
  return lib;
}

/** The version whose output the cache holds (plugins/transform.ts names its folder for it). */
export function sucraseVersion(): string | null {
  return sucrase()?.getVersion() ?? null;
}

/**
 * Words that send a file to Babel wherever they appear, even in a string or comment (a plain
 * search, before any parsing): `require`, because the fast path turns every `require(` sucrase
 * writes into an awaited import and must know each one is sucrase's; the names of sucrase's own
 * helpers, which the fast path finds and rewrites by name.
 */
const BABEL_WORDS = /require|interopRequire|createNamedExportFrom|createStarExport|nullishCoalesce|optionalChain|createRequire/;

/**
 * Names that send a file to Babel when they are code: CommonJS in an ES module (`module`,
 * `exports`), and TypeScript that sucrase compiles its own way (enums, namespaces, `module X {}`).
 * A property or type member of that name is sent too: only speed is lost.
 */
const BABEL_NAMES = new Set(['module', 'exports', 'enum', 'namespace', '__esModule']);

/** Why `req` must go to Babel, or null when the fast path may take it (sucrase's parse decides the rest). */
export function babelReason(req: TransformRequest): string | null {
  if (!req.ts || !/\.m?ts$/.test(req.filename)) return 'not a .ts or .mts file';
  if (req.jsx && typeof req.jsx === 'object') return 'JSX options';
  if (req.interopDefault) return 'interop asked for';
  if (req.babel && Object.keys(req.babel).length > 0) return 'Babel options asked for';
  if (req.source.startsWith('#!')) return 'a #! line';
  const word = BABEL_WORDS.exec(req.source);
  if (word) return `mentions ${word[0]}`;
  return null;
}

/** An exported function declaration: `exports[exported] = local` holds before any of the module runs. */
interface HoistedExport {
  exported: string;
  local: string;
}

/**
 * Why the file's tokens must go to Babel, or null; `hoisted` gets its exported function
 * declarations. The imports must all come first: Babel hoists every import above the module's code
 * (as ES modules evaluate), sucrase leaves each where it is.
 */
function tokenReason(source: string, tokens: Token[], tt: Record<string, number>, hoisted: HoistedExport[]): string | null {
  const text = (t: Token | undefined) => (t ? source.slice(t.start, t.end) : '');
  let i = 0;
  // The header: `import … from 'x';` declarations, each ended by its module name.
  while (tokens[i]?.type === tt._import) {
    i++;
    while (tokens[i] && tokens[i]!.type !== tt.string) {
      const type = tokens[i]!.type;
      if (type !== tt.name && type !== tt.braceL && type !== tt.braceR && type !== tt.comma && type !== tt.star && type !== tt._default) return 'an import of an unusual form';
      i++;
    }
    if (!tokens[i]) return 'an import of an unusual form';
    i++;
    const after = tokens[i];
    if (after && (after.type === tt._with || (after.type === tt.name && text(after) === 'assert'))) return 'import attributes';
    if (after?.type === tt.semi) i++;
  }
  for (; i < tokens.length; i++) {
    const token = tokens[i]!;
    const next = tokens[i + 1];
    switch (token.type) {
      case tt.at:
        return 'a decorator';
      case tt._import:
        // `typeof import('./x')` is a type, gone from both outputs. (Only here: sucrase also counts
        // a whole `namespace N {}` as a type, and drops it, where Babel compiles it.)
        if (token.isType) break;
        if (next?.type === tt.parenL) return 'a dynamic import()';
        if (next?.type === tt.dot) return 'import.meta';
        return 'an import after other code';
      case tt._enum:
        return 'an enum';
      case tt._export:
        if (next?.type === tt.star) return 'export *';
        if (next?.type === tt.eq) return 'export =';
        if (next?.type === tt._import) return 'export import';
        // Export lists and mutable exported bindings: sucrase assigns them where it meets them,
        // Babel keeps exports in step with every assignment.
        if (next?.type === tt.braceL) return 'an export list';
        if (next?.type === tt._let || next?.type === tt._var) return 'an exported let or var';
        // sucrase 3.35 drops the declaration of every name after the first
        // (`export const a = 1, b = 2` → `const a = 1; exports.a = a, b = 2;`) and of a pattern's.
        if (next?.type === tt._const) {
          const first = tokens[i + 2]?.type;
          if (first === tt.braceL || first === tt.bracketL) return 'an exported destructuring';
          if (commaBeforeEnd(tokens, i + 2, tt)) return 'an export of several declarations';
        }
        {
          let j = i + 1;
          const isDefault = tokens[j]?.type === tt._default;
          if (isDefault) j++;
          if (tokens[j]?.type === tt._class && isDefault && tokens[j + 1]?.type !== tt.name) return 'an anonymous default class';
          if (tokens[j]?.type === tt.name && text(tokens[j]) === 'async') j++;
          if (tokens[j]?.type !== tt._function) break;
          j++;
          if (tokens[j]?.type === tt.star) j++;
          if (tokens[j]?.type !== tt.name) return 'an anonymous default function';
          hoisted.push({ exported: isDefault ? 'default' : text(tokens[j]), local: text(tokens[j]) });
        }
        break;
      case tt.name:
        // sucrase reads the `import` of `import.meta` as a name.
        if (text(token) === 'import') return 'import.meta';
        if (BABEL_NAMES.has(text(token))) return `the name ${text(token)}`;
        break;
      default:
        if (token.type === tt.jsxTagStart) return 'JSX';
    }
  }
  return null;
}

/**
 * Whether a comma outside brackets and types comes before the `;` that ends the statement at
 * `from`. Without that `;` the search runs on: a later statement's comma only sends the file to Babel.
 */
function commaBeforeEnd(tokens: Token[], from: number, tt: Record<string, number>): boolean {
  let depth = 0;
  for (let i = from; i < tokens.length; i++) {
    const { type, isType } = tokens[i]!;
    if (isType) continue;
    if (type === tt.braceL || type === tt.parenL || type === tt.bracketL || type === tt.dollarBraceL) depth++;
    else if (type === tt.braceR || type === tt.parenR || type === tt.bracketR) depth--;
    else if (depth === 0 && type === tt.comma) return true;
    else if (depth === 0 && type === tt.semi) return false;
  }
  return false;
}

const ASYNC_FUNCTION = Object.getPrototypeOf(async () => {}).constructor as FunctionConstructor;
const WRAPPER_PARAMS = ['exports', 'require', 'module', '__filename', '__dirname', 'jitiImport', 'jitiESMResolve'];

/**
 * Sucrase's two interop helpers as it writes them (HelperManager.js, whitespace folded), and the
 * identity each becomes: jiti imports plugins with interop off, so `import x from` reads the
 * module's `default` as it is, as Babel's noInterop output does. A sucrase whose helpers read
 * otherwise leaves them unmatched, and the file goes to Babel.
 */
const INTEROP_HELPERS = [
  / function (_interopRequireDefault\d*)\(obj\) \{ return obj && obj\.__esModule \? obj : \{ default: obj \}; \}/g,
  / function (_interopRequireWildcard\d*)\(obj\) \{ if \(obj && obj\.__esModule\) \{ return obj; \} else \{ var newObj = \{\}; if \(obj != null\) \{ for \(var key in obj\) \{ if \(Object\.prototype\.hasOwnProperty\.call\(obj, key\)\) \{ newObj\[key\] = obj\[key\]; \} \} \} newObj\.default = obj; return newObj; \} \}/g,
];

/**
 * Transpile with sucrase, or say why not (then the caller uses Babel). The result is the code jiti
 * evaluates; with `map`, also sucrase's source map (its generated columns before `shifts`).
 */
export function sucraseTransform(req: TransformRequest, map = false): FastResult {
  const early = babelReason(req);
  if (early) return { ok: false, reason: early };
  return transpiling(() => {
    const s = sucrase();
    if (!s) return { ok: false, reason: 'sucrase is not installed' };
    let out: { code: string; sourceMap?: { mappings: string } };
    const hoisted: HoistedExport[] = [];
    try {
      const reason = tokenReason(req.source, s.parse(req.source, false, true, false).tokens, s.TokenType, hoisted);
      if (reason) return { ok: false, reason };
      out = s.transform(req.source, {
        transforms: ['typescript', 'imports'],
        // Class fields, optional chaining and the like stay as written, as jiti's Babel leaves them.
        disableESTransforms: true,
        filePath: req.filename,
        ...(map ? { sourceMapOptions: { compiledFilename: req.filename } } : {}),
      });
    } catch {
      // Babel's message for the same mistake names line and column; sucrase's does not.
      return { ok: false, reason: 'sucrase could not parse it' };
    }
    let code = out.code;
    const firstLine = code.indexOf('\n') < 0 ? code.length : code.indexOf('\n');
    let replaced = 0;
    for (const helper of INTEROP_HELPERS) {
      code = code.replace(helper, (text: string, name: string, at: number) => {
        if (at > firstLine) return text;
        replaced++;
        // The same length, so sucrase's source map still fits.
        const identity = ` function ${name}(obj) { return obj; }`;
        return identity + ' '.repeat(text.length - identity.length);
      });
    }
    if ((code.match(/function _interopRequire/g)?.length ?? 0) !== replaced) return { ok: false, reason: "sucrase's interop helpers read differently" };
    const shifts: Shift[] = [];
    if (hoisted.length > 0) {
      // Babel assigns an exported function before the imports run, as an ES module's function
      // exists before any of it runs: a helper that imports this file back (a cycle) can call it
      // at once. Sucrase assigns it after the declaration; the line above its code says so again.
      if (!code.startsWith(PREFIX)) return { ok: false, reason: "sucrase's prefix reads differently" };
      const assign = hoisted.map((h) => `exports.${h.exported} = ${h.local};`).join('');
      code = PREFIX + assign + code.slice(PREFIX.length);
      shifts.push({ line: 0, column: PREFIX.length - 1, delta: assign.length });
    }
    if (req.async) code = awaitImports(code, shifts);
    try {
      // As jiti wraps it (eval_evalModule): a mistake in sucrase's output is Babel's to report.
      new (req.async ? ASYNC_FUNCTION : Function)(...WRAPPER_PARAMS, code);
    } catch {
      return { ok: false, reason: 'the output does not compile' };
    }
    return { ok: true, code, shifts, ...(out.sourceMap ? { mappings: out.sourceMap.mappings } : {}) };
  });
}

/** What sucrase starts a module with exports with (RootTransformer, CJSImportTransformer). */
const PREFIX = '"use strict";Object.defineProperty(exports, "__esModule", {value: true});';

const AWAITED = 'await jitiImport(';

/**
 * In an ES module jiti evaluates as an async function, an import is `await jitiImport(…)`, as
 * jiti's Babel writes it. The source never says `require` (babelReason), so each one is sucrase's.
 */
function awaitImports(code: string, shifts: Shift[]): string {
  let line = 0;
  let lineStart = 0;
  let added = 0;
  const delta = AWAITED.length - 'require('.length;
  return code.replace(/\brequire\(/g, (_text, at: number) => {
    for (let n = code.indexOf('\n', lineStart); n >= 0 && n < at; n = code.indexOf('\n', n + 1)) {
      line++;
      lineStart = n + 1;
      added = 0;
    }
    // In the code as the shifts before this one left it.
    shifts.push({ line, column: at - lineStart + added, delta });
    added += delta;
    return AWAITED;
  });
}
