// JSON Schema checking, shared by tool arguments (catalog.ts) and a run's validated output
// (agent/output.ts): TypeBox's schema compiler (typebox/schema; typebox/compile's Validator also
// loads the whole Value module, Clean to Encode, which conch never calls) with its format registry, which TypeBox fills with the
// standard formats itself (date-time, date, time, duration, email, hostname, ipv4, ipv6, uri,
// uri-reference, url, uuid, regex, json-pointer, …), and one reading of what failed.
import { Compile } from 'typebox/schema';

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

/** What is wrong with `value`, first `max` issues, each said once. */
export function schemaIssues(validator: Validator, value: unknown, max: number): SchemaIssue[] {
  const out: SchemaIssue[] = [];
  const seen = new Set<string>();
  for (const error of validator.Errors(value)[1]) {
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
