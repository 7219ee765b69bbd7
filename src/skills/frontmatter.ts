// SKILL.md = YAML frontmatter between `---` lines, then a Markdown body. The frontmatter comes from
// whoever wrote the skill, so it is bounded like a config file: in bytes before parsing, in nesting
// after, and the `yaml` package's own alias limit stops billion-laughs expansion.
import { depthOf, MAX_DEPTH } from '../config/file.ts';

/** Far above any real frontmatter (the spec's fields are a few short strings). */
export const FRONTMATTER_MAX_BYTES = 16 * 1024;

export interface SplitSkill {
  /** The YAML between the fences. */
  yaml: string;
  /** 1-based line of the file on which the YAML starts, to report YAML errors by file line. */
  yamlLine: number;
  body: string;
}

export type SplitResult = { ok: true; value: SplitSkill } | { ok: false; message: string };

/** Separate the frontmatter from the body; a file without a closing fence has no frontmatter. */
export function splitFrontmatter(text: string): SplitResult {
  const source = text.startsWith('\uFEFF') ? text.slice(1) : text;
  const first = /^---[ \t]*\r?\n/.exec(source);
  if (!first) return { ok: false, message: 'SKILL.md does not start with YAML frontmatter (a `---` line, `name:` and `description:`, then `---`)' };
  const rest = source.slice(first[0].length);
  const close = /^---[ \t]*$/m.exec(rest);
  if (!close) return { ok: false, message: 'the frontmatter has no closing `---` line' };
  const yaml = rest.slice(0, close.index);
  if (Buffer.byteLength(yaml) > FRONTMATTER_MAX_BYTES) {
    return { ok: false, message: `the frontmatter is larger than ${FRONTMATTER_MAX_BYTES / 1024} KiB; it holds a name, a description and a few short fields` };
  }
  const body = rest.slice(close.index + close[0].length).replace(/^\r?\n/, '');
  return { ok: true, value: { yaml, yamlLine: 2, body } };
}

export type ParsedFrontmatter = { ok: true; data: Record<string, unknown> } | { ok: false; message: string; line?: number };

/**
 * Parse the frontmatter YAML into a plain object. The `yaml` package is imported here, on first
 * use, so a start without any skill never loads it.
 */
export async function parseFrontmatter(split: SplitSkill): Promise<ParsedFrontmatter> {
  const { parseDocument } = await import('yaml');
  const doc = parseDocument(split.yaml, { uniqueKeys: true });
  const error = doc.errors[0];
  if (error) {
    const line = error.linePos?.[0]?.line;
    const where = line === undefined ? undefined : split.yamlLine + line - 1;
    const hint = /compact mappings|Nested mappings/.test(error.message) ? ' (a value containing ": " must be quoted)' : '';
    return { ok: false, message: `invalid YAML${where ? ` at line ${where}` : ''}: ${firstLine(error.message)}${hint}`, ...(where && { line: where }) };
  }
  let data: unknown;
  try {
    data = doc.toJS({ maxAliasCount: 100 });
  } catch (e) {
    return { ok: false, message: `invalid YAML: ${firstLine((e as Error).message)}` };
  }
  if (data === null || data === undefined) return { ok: true, data: {} };
  if (typeof data !== 'object' || Array.isArray(data)) return { ok: false, message: 'the frontmatter is not a mapping of keys (name: …, description: …)' };
  if (depthOf(data) > MAX_DEPTH) return { ok: false, message: `the frontmatter is nested more than ${MAX_DEPTH} levels deep` };
  return { ok: true, data: data as Record<string, unknown> };
}

function firstLine(message: string): string {
  // yaml's messages end with " at line N, column M" and a code excerpt; the line is reported apart.
  return (message.split('\n')[0] ?? message).replace(/ at line \d+, column \d+:?$/, '').trim();
}
