// Symbols from real parsers: tree-sitter's WebAssembly runtime (web-tree-sitter) with the prebuilt
// grammars VS Code ships (@vscode/tree-sitter-wasm). Both are imported on the first parse, never at
// plugin load, so a conch start with the plugin enabled pays nothing for them.
import type { Language, Node, Parser } from 'web-tree-sitter';

export interface MapSymbol {
  name: string;
  /** Qualified by its containers: `Store.get`, `impl Cache.insert`. */
  qualified: string;
  kind: string;
  /** The declaration up to its body, whitespace collapsed. */
  signature: string;
  doc: string;
  /** 1-based, inclusive; the span includes doc comments and decorators above the declaration. */
  start: number;
  end: number;
  depth: number;
}

export interface ParsedFile {
  /** Module doc: the comment or docstring the file opens with. */
  head: string;
  symbols: MapSymbol[];
}

const GRAMMARS: Record<string, string> = {
  ts: 'typescript', mts: 'typescript', cts: 'typescript', tsx: 'tsx',
  js: 'javascript', mjs: 'javascript', cjs: 'javascript', jsx: 'javascript',
  py: 'python', pyi: 'python', go: 'go', rs: 'rust',
};

/** The grammar for a file name, or null for files that are listed unparsed. */
export function grammarFor(path: string): string | null {
  const dot = path.lastIndexOf('.');
  return dot < 0 ? null : (GRAMMARS[path.slice(dot + 1).toLowerCase()] ?? null);
}

/** Node type → symbol kind, per grammar family. Containers' children are walked for members. */
const KINDS: Record<string, Record<string, string>> = {
  js: {
    function_declaration: 'function', generator_function_declaration: 'function', class_declaration: 'class',
    abstract_class_declaration: 'class', interface_declaration: 'interface', type_alias_declaration: 'type',
    enum_declaration: 'enum', method_definition: 'method', abstract_method_signature: 'method',
    internal_module: 'namespace', variable_declarator: 'const', public_field_definition: 'field',
  },
  python: { function_definition: 'function', class_definition: 'class' },
  go: { function_declaration: 'func', method_declaration: 'method', type_spec: 'type', method_elem: 'method' },
  rust: {
    function_item: 'fn', function_signature_item: 'fn', struct_item: 'struct', enum_item: 'enum', trait_item: 'trait',
    impl_item: 'impl', mod_item: 'mod', type_item: 'type', macro_definition: 'macro', const_item: 'const', static_item: 'static',
  },
};
const FAMILY: Record<string, string> = { typescript: 'js', tsx: 'js', javascript: 'js', python: 'python', go: 'go', rust: 'rust' };
/** Wrappers whose span (and doc position) belongs to the symbol they wrap. */
const WRAPPERS = new Set(['export_statement', 'decorated_definition', 'lexical_declaration', 'variable_declaration', 'type_declaration', 'ambient_declaration']);
const COMMENTS = new Set(['comment', 'line_comment', 'block_comment']);
const MAX_SIGNATURE = 240;

let runtime: Promise<{ Parser: typeof Parser; Language: typeof Language }> | null = null;
const languages = new Map<string, Promise<Language>>();

async function loadRuntime() {
  const { Parser: P, Language: L } = await import('web-tree-sitter');
  await P.init();
  return { Parser: P, Language: L };
}

async function parserFor(grammar: string): Promise<Parser> {
  const { Parser: P, Language: L } = await (runtime ??= loadRuntime());
  let language = languages.get(grammar);
  if (!language) {
    const url = import.meta.resolve(`@vscode/tree-sitter-wasm/wasm/tree-sitter-${grammar}.wasm`);
    language = L.load(new URL(url).pathname);
    languages.set(grammar, language);
  }
  const parser = new P();
  parser.setLanguage(await language);
  return parser;
}

/** Parse one file's text into its head and symbols; null when the grammar is unknown. */
export async function parseSource(grammar: string, source: string): Promise<ParsedFile | null> {
  const family = FAMILY[grammar];
  if (!family) return null;
  const parser = await parserFor(grammar);
  const tree = parser.parse(source);
  parser.delete();
  if (!tree) return null;
  try {
    const symbols: MapSymbol[] = [];
    collect(tree.rootNode, family, KINDS[family]!, [], symbols);
    return { head: moduleDoc(tree.rootNode, family, symbols[0]?.start ?? Infinity), symbols };
  } finally {
    tree.delete();
  }
}

function collect(node: Node, family: string, kinds: Record<string, string>, parents: string[], out: MapSymbol[]): void {
  for (const child of node.namedChildren) {
    if (!child) continue;
    let kind = kinds[child.type];
    // A const is a symbol only when it holds a function or a class: `const f = () => …`.
    if (kind === 'const' && !/^(arrow_function|function_expression|function|class|generator_function)$/.test(child.childForFieldName('value')?.type ?? '')) kind = undefined;
    if (kind === 'const') kind = 'function';
    if (kind === 'field' && !/^(arrow_function|function_expression)$/.test(child.childForFieldName('value')?.type ?? '')) kind = undefined;
    if (kind === 'field') kind = 'method';
    if (!kind) {
      // Descend through wrappers and bodies, but never into function bodies (locals are not symbols).
      if (!/function|method|arrow|lambda|closure/.test(child.type)) collect(child, family, kinds, parents, out);
      continue;
    }
    const name = symbolName(child, family);
    const outer = outermost(child);
    const start = firstLineOf(outer, family);
    const receiver = family === 'go' ? /(\w+)(\[[^\]]*\])?\)\s*$/.exec(child.childForFieldName('receiver')?.text ?? '')?.[1] : undefined;
    const qualified = [...parents, ...(receiver ? [receiver] : []), name].join('.');
    out.push({
      name,
      qualified,
      kind,
      signature: signatureOf(child, family),
      doc: docOf(outer, child, family),
      start,
      end: outer.endPosition.row + 1,
      depth: parents.length,
    });
    const body = child.childForFieldName('body') ?? child.childForFieldName('value') ?? (family === 'go' ? child.childForFieldName('type') : null);
    if (body && /class|interface|impl|trait|mod|namespace|type|struct/.test(kind)) collect(body, family, kinds, [...parents, name], out);
  }
}

function symbolName(node: Node, family: string): string {
  if (family === 'rust' && node.type === 'impl_item') {
    const trait = node.childForFieldName('trait')?.text;
    const type = node.childForFieldName('type')?.text ?? '?';
    return trait ? `${trait} for ${type}` : type;
  }
  return node.childForFieldName('name')?.text ?? node.namedChildren[0]?.text ?? '?';
}

/** The export/decorator/declaration wrappers around a symbol: they are part of its span. */
function outermost(node: Node): Node {
  let outer = node;
  while (outer.parent && WRAPPERS.has(outer.parent.type) && outer.parent.namedChildren.filter((c) => c && !COMMENTS.has(c.type) && c.type !== 'decorator').length <= 1) {
    outer = outer.parent;
  }
  return outer;
}

/** The first line of a symbol including the doc comments directly above it. */
function firstLineOf(outer: Node, family: string): number {
  let line = outer.startPosition.row;
  for (const comment of leadingComments(outer)) line = Math.min(line, comment.startPosition.row);
  return (family === 'python' ? outer.startPosition.row : line) + 1;
}

/** Comments directly above a node, no blank line between: nearest first. */
function leadingComments(node: Node): Node[] {
  const found: Node[] = [];
  let row = node.startPosition.row;
  for (let prev = node.previousNamedSibling; prev && COMMENTS.has(prev.type) && endRow(prev) >= row - 1 && !prev.text.startsWith('//!'); prev = prev.previousNamedSibling) {
    found.push(prev);
    row = prev.startPosition.row;
  }
  return found;
}

/** A line comment's node ends at column 0 of the next line; that line is not the comment's. */
function endRow(node: Node): number {
  return node.endPosition.column === 0 && node.endPosition.row > node.startPosition.row ? node.endPosition.row - 1 : node.endPosition.row;
}

function signatureOf(node: Node, family: string): string {
  // `const f = (…) => body` and Go's `type T struct`: the declaration keyword lives on the wrapper.
  const value = node.type === 'variable_declarator' ? node.childForFieldName('value') : null;
  const body = value ? value.childForFieldName('body') : node.childForFieldName('body');
  const base = (value || node.type === 'type_spec') && node.parent ? node.parent : node;
  let text = body && body.startIndex > base.startIndex ? base.text.slice(0, body.startIndex - base.startIndex) : base.text.split('\n')[0]!;
  if (family === 'python') text = text.replace(/:\s*$/, '');
  text = text.replace(/\s+/g, ' ').replace(/[\s{=]+$/, '').trim();
  return text.length > MAX_SIGNATURE ? `${text.slice(0, MAX_SIGNATURE - 1)}…` : text;
}

function docOf(outer: Node, node: Node, family: string): string {
  if (family === 'python') {
    const first = node.childForFieldName('body')?.namedChildren[0];
    return first?.type === 'expression_statement' && first.namedChildren[0]?.type === 'string' ? cleanDoc(first.namedChildren[0].text) : '';
  }
  return leadingComments(outer).reverse().map((c) => cleanDoc(c.text)).join('\n').trim();
}

function moduleDoc(root: Node, family: string, firstSymbolLine: number): string {
  const first = root.namedChildren[0];
  if (!first) return '';
  if (family === 'python') return first.type === 'expression_statement' && first.namedChildren[0]?.type === 'string' ? cleanDoc(first.namedChildren[0].text) : '';
  const lines: string[] = [];
  for (const child of root.namedChildren) {
    // A comment that is the first symbol's doc belongs to that symbol, not to the module.
    if (!child || !COMMENTS.has(child.type) || child.startPosition.row + 1 >= firstSymbolLine) break;
    lines.push(cleanDoc(child.text));
  }
  return lines.join('\n').trim();
}

/** Comment or docstring text without its markers. */
function cleanDoc(text: string): string {
  return text
    .replace(/^("""|'''|"|')|("""|'''|"|')$/g, '')
    .replace(/^\/\*\*?|\*\/$/g, '')
    .split('\n')
    .map((l) => l.replace(/^\s*(\/\/\/?!?|\*|#)\s?/, '').trimEnd())
    .join('\n')
    .trim();
}
