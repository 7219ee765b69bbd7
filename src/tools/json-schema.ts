// JSON Schema checking, shared by tool arguments (catalog.ts) and a run's validated output
// (agent/output.ts): TypeBox's schema compiler (typebox/schema; typebox/compile's Validator also
// loads the whole Value module, Clean to Encode, which conch never calls) with its format registry, which TypeBox fills with the
// standard formats itself (date-time, date, time, duration, email, hostname, ipv4, ipv6, uri,
// uri-reference, url, uuid, regex, json-pointer, …), and one reading of what failed.
import { Compile, Settings } from '../core/typebox.ts';

// TypeBox stops collecting at 8 errors by default, which can cut a union off before its own error
// (one per branch comes first), so the message could not be said once; 32 still bounds the work.
if (Settings.Get().maxErrors < 32) Settings.Set({ maxErrors: 32 });

export type Validator = ReturnType<typeof Compile>;

/** One failed check, at a JSON Pointer into the value ('' is the value itself). */
export interface SchemaIssue {
  path: string;
  keyword: string;
  message: string;
  /** For 'required': the properties missing at `path`. */
  missing?: string[];
  /** The property at `path` is not allowed (additionalProperties: false). */
  unknown?: boolean;
}

export function compileSchema(schema: unknown): Validator {
  return Compile(schema as never);
}

type SchemaError = ReturnType<Validator['Errors']>[1][number];

/** What is wrong with `value`, first `max` issues, each said once. */
export function schemaIssues(validator: Validator, value: unknown, max: number): SchemaIssue[] {
  const out: SchemaIssue[] = [];
  const seen = new Set<string>();
  for (const error of simplifyUnions(withoutCutUnions(validator.Errors(value)[1]), validator.Schema(), value)) {
    // additionalProperties: false is reported per key by the 'boolean' error below; a schema there reports its own errors.
    if (error.keyword === 'additionalProperties') continue;
    const issue: SchemaIssue = { path: error.instancePath, keyword: error.keyword, message: error.message };
    const params = (error.params ?? {}) as Record<string, unknown>;
    if (error.keyword === 'boolean' && error.schemaPath.endsWith('additionalProperties')) {
      issue.unknown = true;
      issue.message = 'is not allowed here (not a property the schema lists)';
    } else if (error.keyword === 'required' && Array.isArray(params.requiredProperties)) {
      issue.missing = params.requiredProperties as string[];
    } else if (error.keyword === 'enum' && Array.isArray(params.allowedValues)) {
      issue.message = `must be one of ${(params.allowedValues as unknown[]).map((v) => JSON.stringify(v)).join(', ')}`;
    } else if (error.keyword === 'const' && 'allowedValue' in params) {
      issue.message = `must be ${JSON.stringify(params.allowedValue)}`;
    }
    const key = `${issue.path}\0${issue.message}`;
    if (seen.has(key)) continue;
    seen.add(key);
    out.push(issue);
    if (out.length >= max) break;
  }
  return out;
}

/**
 * A failed anyOf/oneOf is reported by the validator once per branch and once more for itself
 * ('must be string; must be number; must match a schema in anyOf'). Said once instead: the one
 * branch the value's type fits, with its own errors (an object with a wrong field says which), or
 * else what was expected ('must be "create" or "comment"', 'must be a string or a number'). A
 * union whose branches cannot be told apart or described keeps the validator's errors.
 */
function simplifyUnions(errors: SchemaError[], root: unknown, value: unknown): SchemaError[] {
  const unions = errors.filter(isUnion);
  const outermost = unions.filter((u) => !unions.some((o) => o !== u && within(u, o)));
  let out = errors;
  for (const union of outermost) {
    const inside = out.filter((e) => within(e, union));
    const replacement = unionErrors(union, inside, root, value);
    out = out.flatMap((e) => (e === union ? replacement : within(e, union) ? [] : [e]));
  }
  return out;
}

/** Without the branch errors of a union whose own error the cap cut off (half a union only misleads), unless nothing else is left. */
function withoutCutUnions(errors: SchemaError[]): SchemaError[] {
  const unions = errors.filter(isUnion);
  const whole = errors.filter((e) => !/\/(anyOf|oneOf)\/\d+(\/|$)/.test(e.schemaPath) || unions.some((u) => within(e, u)));
  return whole.length ? whole : errors;
}

function unionErrors(union: SchemaError, inside: SchemaError[], root: unknown, value: unknown): SchemaError[] {
  const unchanged = [...inside, union];
  const schema = pointer(root, union.schemaPath.replace(/^#/, ''));
  const branches = schema && typeof schema === 'object' ? (schema as Record<string, unknown>)[union.keyword] : undefined;
  const instance = pointer(value, union.instancePath);
  if (!Array.isArray(branches) || instance === MISSING) return unchanged;
  // A oneOf the value matches twice fails with no branch failing: 'must be X or Y' would be wrong.
  const failed = new Set(inside.map((e) => e.schemaPath.slice(branchPrefix(union).length).split('/')[0]));
  if (failed.size < branches.length) return unchanged;
  const fitting = branches.flatMap((b, i) => (fitsType(b, instance) ? [i] : []));
  if (fitting.length === 1 && !isConstant(branches[fitting[0]!])) {
    const at = `${branchPrefix(union)}${fitting[0]}`;
    return simplifyUnions(inside.filter((e) => e.schemaPath === at || e.schemaPath.startsWith(`${at}/`)), root, value);
  }
  const expected = branches.map(describe);
  if (expected.some((e) => e === null)) return unchanged;
  const alternatives = [...new Set(expected.flat() as string[])];
  const text = alternatives.length > 1 ? `${alternatives.slice(0, -1).join(', ')} or ${alternatives.at(-1)}` : alternatives[0];
  return [{ ...union, message: `must be ${text}` }];
}

function isUnion(error: SchemaError): boolean {
  return error.keyword === 'anyOf' || error.keyword === 'oneOf';
}

function branchPrefix(union: SchemaError): string {
  return `${union.schemaPath}/${union.keyword}/`;
}

/** An error from one of the union's branches, for the same value (array items share their schema path). */
function within(error: SchemaError, union: SchemaError): boolean {
  const at = union.instancePath;
  return error.schemaPath.startsWith(branchPrefix(union)) && (error.instancePath === at || error.instancePath.startsWith(`${at}/`));
}

const MISSING = Symbol('missing');

/** The value at a JSON Pointer ('' is the value itself), or MISSING. */
function pointer(value: unknown, path: string): unknown {
  let node = value;
  for (const raw of path.split('/').slice(1)) {
    const key = raw.replace(/~1/g, '/').replace(/~0/g, '~');
    if (!node || typeof node !== 'object' || !(key in node)) return MISSING;
    node = (node as Record<string, unknown>)[key];
  }
  return node;
}

function jsonType(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  return typeof value;
}

/** Whether the branch takes values of this JSON type (true when it does not say). */
function fitsType(branch: unknown, value: unknown): boolean {
  if (!branch || typeof branch !== 'object') return true;
  const b = branch as Record<string, unknown>;
  const type = jsonType(value);
  if ('const' in b) return jsonType(b.const) === type;
  if (Array.isArray(b.enum)) return b.enum.some((v) => jsonType(v) === type);
  for (const keyword of ['anyOf', 'oneOf']) if (Array.isArray(b[keyword])) return (b[keyword] as unknown[]).some((x) => fitsType(x, value));
  if (b.type === undefined) return true;
  const types = Array.isArray(b.type) ? b.type : [b.type];
  return types.includes(type) || (type === 'number' && types.includes('integer'));
}

function isConstant(branch: unknown): boolean {
  return !!branch && typeof branch === 'object' && ('const' in branch || 'enum' in branch);
}

const TYPE_NAMES: Record<string, string> = { string: 'a string', number: 'a number', integer: 'an integer', boolean: 'a boolean', object: 'an object', array: 'an array', null: 'null' };

/** What a branch accepts, for people: its constant values or its types; null when it says more than that can. */
function describe(branch: unknown): string[] | null {
  if (!branch || typeof branch !== 'object') return null;
  const b = branch as Record<string, unknown>;
  if ('const' in b) return [JSON.stringify(b.const)];
  if (Array.isArray(b.enum)) return b.enum.map((v) => JSON.stringify(v));
  for (const keyword of ['anyOf', 'oneOf']) {
    if (Array.isArray(b[keyword])) {
      const inner = (b[keyword] as unknown[]).map(describe);
      return inner.some((i) => i === null) ? null : (inner.flat() as string[]);
    }
  }
  const types = typeof b.type === 'string' ? [b.type] : Array.isArray(b.type) ? b.type : null;
  if (!types || !types.every((t) => typeof t === 'string' && t in TYPE_NAMES)) return null;
  return types.map((t) => TYPE_NAMES[t as string]!);
}

const JSON_TYPES = ['string', 'number', 'integer', 'boolean', 'object', 'array', 'null'];
/** Keywords whose values are data, not schemas: a { type: 'bug' } there is an example value. */
const DATA_KEYWORDS = new Set(['enum', 'const', 'default', 'examples']);

/**
 * The first `type` in a schema that names no JSON type ('strin', 'str'), as "at.path has "strin"",
 * or null. The compiler ignores such a type, so the field went unchecked, and providers refuse a
 * request whose tool schema has one.
 */
export function unknownTypeAt(schema: unknown, at: string): string | null {
  if (!schema || typeof schema !== 'object') return null;
  if (Array.isArray(schema)) {
    for (const [i, item] of schema.entries()) {
      const found = unknownTypeAt(item, `${at}[${i}]`);
      if (found) return found;
    }
    return null;
  }
  for (const [key, value] of Object.entries(schema as Record<string, unknown>)) {
    if (DATA_KEYWORDS.has(key)) continue;
    const names = typeof value === 'string' ? [value] : Array.isArray(value) && value.every((v) => typeof v === 'string') ? value : null;
    const bad = key === 'type' && names ? names.find((n) => !JSON_TYPES.includes(n)) : undefined;
    if (bad !== undefined) return `${at}.type has ${JSON.stringify(bad)}, which is not a JSON Schema type (${JSON_TYPES.join(', ')})`;
    const found = unknownTypeAt(value, `${at}.${key}`);
    if (found) return found;
  }
  return null;
}
