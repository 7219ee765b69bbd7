// Validated output (--output-schema, RunSpec.outputSchema): the final answer must be one JSON value
// the schema accepts. The schema is described to the model with the task; an answer that does not
// parse or validate gets one repair turn quoting what failed (loop.ts), then the run fails as
// output_invalid. Loaded only by runs that have a schema.
import { Meta, type TSchema } from '../core/typebox.ts';
import { compileSchema, schemaIssues, type Validator } from '../tools/json-schema.ts';
import type { ContentBlock } from '../core/content.ts';
import type { OutputIssue } from './outcome.ts';
import { referenceCycle } from './schema-cycles.ts';
import { OUTPUT_NOTE_OPENING, REPAIR_OPENING } from './output-note.ts';

/** A JSON Schema document (an object, or true/false), or a TypeBox schema. */
export type OutputSchema = Record<string, unknown> | boolean | TSchema;

/** Issues quoted to the model and put in the envelope; more are counted, not listed. */
const MAX_ISSUES = 20;

const DEFAULT_DIALECT = 'https://json-schema.org/draft/2020-12/schema';
const metaValidators = new Map<string, Validator>();

export interface OutputContract {
  /** What the task gets appended: the schema and the rules of the answer. */
  note: string;
  /** The task with the note as its last paragraph (one text block where it was one: what every server reads). */
  task(task: ContentBlock[]): ContentBlock[];
  /** The schema for the provider's structured-output parameter; absent when the root is not an object schema. */
  providerSchema?: Record<string, unknown>;
  check(answer: string): { ok: true; value: unknown } | { ok: false; issues: OutputIssue[] };
  /** The repair turn's text. */
  repair(issues: OutputIssue[]): string;
  /** The outcome's message when the answer after the repair is still wrong. */
  failure(issues: OutputIssue[]): string;
}

/** The contract for a schema, or what is wrong with the schema itself. */
export function outputContract(given: OutputSchema): OutputContract | { problems: string[] } {
  // A JSON copy: TypeBox's symbols go, and a caller changing its object later changes nothing here.
  let schema: Record<string, unknown> | boolean;
  try {
    schema = typeof given === 'boolean' ? given : (JSON.parse(JSON.stringify(given)) as Record<string, unknown>);
  } catch (error) {
    return { problems: [`it cannot be written as JSON (${(error as Error).message})`] };
  }
  const problems = schemaProblems(schema);
  if (problems.length) return { problems };
  const validator = compileSchema(schema);
  const text = JSON.stringify(schema, null, 2);
  const objectRoot = typeof schema === 'object' && schema.type === 'object' ? schema : undefined;
  const note = [
    OUTPUT_NOTE_OPENING,
    '```json',
    text,
    '```',
    'Use the tools as the task needs first; only the final answer is checked against the schema.',
  ].join('\n');
  return {
    note,
    task(task) {
      const last = task[task.length - 1];
      if (last?.type === 'text') return [...task.slice(0, -1), { type: 'text', text: `${last.text}\n\n${note}` }];
      return [...task, { type: 'text', text: note }];
    },
    ...(objectRoot ? { providerSchema: objectRoot } : {}),
    check(answer) {
      const parsed = parseAnswer(answer);
      if (!parsed.ok) return { ok: false, issues: [{ path: '', message: parsed.message }] };
      const issues = validationIssues(validator, parsed.value);
      return issues.length ? { ok: false, issues } : { ok: true, value: parsed.value };
    },
    repair(issues) {
      return [
        REPAIR_OPENING,
        ...issues.map((i) => `- ${i.path || '(root)'}: ${i.message}`),
        'Reply with the corrected final answer: exactly one JSON value that validates, and nothing else. You may use tools first if you need to.',
      ].join('\n');
    },
    failure(issues) {
      const first = issues.slice(0, 3).map((i) => `${i.path || '(root)'}: ${i.message}`).join('; ');
      return `the final answer does not match the output schema, also after the repair turn: ${first}${issues.length > 3 ? ` (and ${issues.length - 3} more)` : ''}`;
    },
  };
}

/**
 * The answer as JSON: the whole text, or the content of one fenced code block (```json or ```)
 * that is the whole text, as models often wrap JSON. Prose around it is not taken apart.
 */
export function parseAnswer(answer: string): { ok: true; value: unknown } | { ok: false; message: string } {
  const text = answer.trim();
  if (text === '') return { ok: false, message: 'the answer is empty; expected one JSON value' };
  const fence = /^(`{3,}|~{3,})[ \t]*(?:json)?[ \t]*\n([\s\S]*?)\n[ \t]*\1[ \t]*$/i.exec(text);
  const body = fence ? fence[2]! : text;
  try {
    return { ok: true, value: JSON.parse(body) };
  } catch (error) {
    const why = (error as Error).message.replace(/^JSON Parse error: /, '');
    return { ok: false, message: `the answer is not one JSON value (${why}); send only the JSON, without prose around it` };
  }
}

function validationIssues(validator: Validator, value: unknown): OutputIssue[] {
  const out: OutputIssue[] = [];
  for (const issue of schemaIssues(validator, value, MAX_ISSUES)) {
    if (issue.missing?.length) {
      for (const name of issue.missing) out.push({ path: `${issue.path}/${name.replace(/~/g, '~0').replace(/\//g, '~1')}`, message: 'is required but missing' });
    } else out.push({ path: issue.path, message: issue.message });
  }
  return out.slice(0, MAX_ISSUES);
}

/** What makes `schema` unusable: not a schema of its dialect, or a $ref that leads nowhere. */
export function schemaProblems(schema: unknown): string[] {
  if (typeof schema === 'boolean') return [];
  if (!schema || typeof schema !== 'object' || Array.isArray(schema)) return ['a JSON Schema is an object (or true/false)'];
  const declared = (schema as Record<string, unknown>).$schema;
  const dialect = typeof declared === 'string' && declared in Meta ? declared : DEFAULT_DIALECT;
  let meta = metaValidators.get(dialect);
  if (!meta) metaValidators.set(dialect, (meta = compileSchema(Meta[dialect as keyof typeof Meta])));
  // One problem per place: a bad "type" fails three ways (enum, array, anyOf), the first says it best.
  const byPath = new Map<string, string>();
  for (const i of schemaIssues(meta, schema, 20)) if (!byPath.has(i.path)) byPath.set(i.path, `${i.path || '(root)'}: ${i.message}`);
  if (byPath.size) return [...byPath.values()].slice(0, 5);
  return referenceProblems(schema as Record<string, unknown>);
}

/** Keys whose values are data, not schemas: a "$ref" inside them is not a reference. */
const DATA_KEYS = new Set(['const', 'enum', 'default', 'examples']);

/** conch fetches nothing: every $ref must resolve inside the document. */
function referenceProblems(root: Record<string, unknown>): string[] {
  const ids: string[] = [];
  const anchors = new Set<string>();
  const refs: { ref: string; at: string }[] = [];
  const walk = (node: unknown, at: string): void => {
    if (!node || typeof node !== 'object') return;
    if (Array.isArray(node)) return node.forEach((n, i) => walk(n, `${at}/${i}`));
    for (const [key, value] of Object.entries(node)) {
      if (key === '$ref' && typeof value === 'string') refs.push({ ref: value, at: at || '(root)' });
      else if (key === '$id' && typeof value === 'string') ids.push(value.replace(/#$/, ''));
      else if ((key === '$anchor' || key === '$dynamicAnchor') && typeof value === 'string') anchors.add(value);
      else if (!DATA_KEYS.has(key)) walk(value, `${at}/${key}`);
    }
  };
  walk(root, '');
  const problems: string[] = [];
  for (const { ref, at } of refs) {
    const hash = ref.indexOf('#');
    const base = hash < 0 ? ref : ref.slice(0, hash);
    const fragment = hash < 0 ? '' : ref.slice(hash + 1);
    if (base !== '' && !ids.some((id) => id === base || id.endsWith(`/${base}`))) {
      problems.push(`${at}: "$ref": "${ref}" points outside this file; conch does not fetch schemas (put it under "$defs")`);
    } else if (base === '' && fragment.startsWith('/') && resolvePointer(root, fragment) === undefined) {
      problems.push(`${at}: "$ref": "${ref}" points to nothing in this file`);
    } else if (base === '' && fragment !== '' && !fragment.startsWith('/') && !anchors.has(fragment)) {
      problems.push(`${at}: "$ref": "${ref}" names no "$anchor" in this file`);
    }
  }
  if (problems.length === 0) {
    const cycle = referenceCycle(root);
    if (cycle) problems.push(`${cycle} leads back to itself without checking anything on the way (a cycle of references); end it with a schema that checks the value`);
  }
  return problems;
}

function resolvePointer(root: unknown, pointer: string): unknown {
  let node = root;
  for (const raw of pointer.slice(1).split('/')) {
    const key = decodeURIComponent(raw).replace(/~1/g, '/').replace(/~0/g, '~');
    if (!node || typeof node !== 'object' || !(key in node)) return undefined;
    node = (node as Record<string, unknown>)[key];
  }
  return node;
}
