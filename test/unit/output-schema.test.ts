// The output contract: how an answer is read as JSON, checked (formats included), and how a schema
// that is not usable is refused.
import { describe, expect, test } from 'bun:test';
import { Type } from 'typebox';
import { outputContract, parseAnswer, schemaProblems, type OutputContract } from '../../src/agent/output.ts';

function contract(schema: Parameters<typeof outputContract>[0]): OutputContract {
  const made = outputContract(schema);
  if ('problems' in made) throw new Error(made.problems.join('; '));
  return made;
}

describe('reading the answer', () => {
  test('the whole text, or one fenced block that is the whole text', () => {
    expect(parseAnswer(' {"a": 1}\n')).toEqual({ ok: true, value: { a: 1 } });
    expect(parseAnswer('```json\n{"a": 1}\n```')).toEqual({ ok: true, value: { a: 1 } });
    expect(parseAnswer('```\n[1, 2]\n```\n')).toEqual({ ok: true, value: [1, 2] });
    expect(parseAnswer('~~~JSON\n"x"\n~~~')).toEqual({ ok: true, value: 'x' });
    expect(parseAnswer('42')).toEqual({ ok: true, value: 42 });
  });

  test('prose around the JSON, two values, or nothing are not one JSON value', () => {
    for (const text of ['Here it is:\n```json\n{"a": 1}\n```', '{"a": 1} {"b": 2}', 'The answer is {"a": 1}', '```python\n{"a": 1}\n```']) {
      const read = parseAnswer(text);
      expect(read.ok).toBe(false);
      if (!read.ok) expect(read.message).toContain('not one JSON value');
    }
    expect(parseAnswer('  \n')).toEqual({ ok: false, message: 'the answer is empty; expected one JSON value' });
  });
});

describe('checking the answer', () => {
  const formats = contract({
    type: 'object',
    properties: {
      email: { type: 'string', format: 'email' },
      when: { type: 'string', format: 'date-time' },
      id: { type: 'string', format: 'uuid' },
      link: { type: 'string', format: 'uri' },
    },
  });

  test('the standard formats are checked', () => {
    const good = { email: 'ada@example.org', when: '2026-12-01T18:00:00Z', id: '123e4567-e89b-12d3-a456-426614174000', link: 'https://example.org/x' };
    expect(formats.check(JSON.stringify(good))).toEqual({ ok: true, value: good });
    const bad = formats.check(JSON.stringify({ email: 'ada at example', when: 'yesterday', id: '1234', link: 'not a uri' }));
    expect(bad).toEqual({
      ok: false,
      issues: [
        { path: '/email', message: 'must match format "email"' },
        { path: '/when', message: 'must match format "date-time"' },
        { path: '/id', message: 'must match format "uuid"' },
        { path: '/link', message: 'must match format "uri"' },
      ],
    });
  });

  test('missing properties are named by their own path; enum and unknown keys say what is allowed', () => {
    const c = contract({
      type: 'object',
      properties: { 'a/b': { type: 'string' }, level: { enum: ['low', 'high'] } },
      required: ['a/b', 'level'],
      additionalProperties: false,
    });
    expect(c.check('{"level": "mid", "x": 1}')).toEqual({
      ok: false,
      issues: [
        { path: '/a~1b', message: 'is required but missing' },
        { path: '/x', message: 'is not allowed here (not a property the schema lists)' },
        { path: '/level', message: 'must be one of "low", "high"' },
      ],
    });
  });

  test('the repair text quotes each problem by path', () => {
    const c = contract({ type: 'array', items: { type: 'integer' } });
    const checked = c.check('[1, "two"]');
    expect(checked.ok).toBe(false);
    if (checked.ok) return;
    expect(c.repair(checked.issues)).toContain('- /1: must be integer');
    expect(c.repair([{ path: '', message: 'must be array' }])).toContain('- (root): must be array');
  });

  test('a TypeBox schema works as well as a JSON one; only an object root is offered to the provider', () => {
    const c = contract(Type.Object({ n: Type.Integer({ minimum: 1 }) }));
    expect(c.check('{"n": 2}')).toEqual({ ok: true, value: { n: 2 } });
    expect(c.check('{"n": 0}').ok).toBe(false);
    expect(c.providerSchema).toMatchObject({ type: 'object', properties: { n: { type: 'integer', minimum: 1 } } });
    expect(contract({ type: 'array' }).providerSchema).toBeUndefined();
    expect(contract({ type: 'object' }).note).toContain('```json\n{\n  "type": "object"\n}\n```');
  });
});

describe('the task', () => {
  test('the schema note is the last paragraph of a text task, its own block after an image', () => {
    const c = contract({ type: 'object' });
    expect(c.task([{ type: 'text', text: 'go' }])).toEqual([{ type: 'text', text: `go\n\n${c.note}` }]);
    const image = { type: 'image' as const, mediaType: 'image/png', data: 'AA==' };
    expect(c.task([{ type: 'text', text: 'look' }, image])).toEqual([{ type: 'text', text: 'look' }, image, { type: 'text', text: c.note }]);
  });

  test('the failure message lists the first three problems and counts the rest', () => {
    const issues = ['/a', '/b', '/c', '/d', '/e'].map((path) => ({ path, message: 'must be string' }));
    expect(contract(true).failure(issues)).toBe('the final answer does not match the output schema, also after the repair turn: /a: must be string; /b: must be string; /c: must be string (and 2 more)');
  });
});

describe('a schema that is not usable', () => {
  test('not a schema of its dialect', () => {
    expect(schemaProblems(5)).toEqual(['a JSON Schema is an object (or true/false)']);
    expect(schemaProblems([])).toEqual(['a JSON Schema is an object (or true/false)']);
    expect(schemaProblems({ type: 'strnig' })[0]).toStartWith('/type: must be one of');
    expect(schemaProblems({ properties: { a: { minimum: 'one' } } })).toEqual(['/properties/a/minimum: must be number']);
    // draft-07 named by $schema is checked against draft-07.
    expect(schemaProblems({ $schema: 'http://json-schema.org/draft-07/schema#', required: 'a' })).toEqual(['/required: must be array']);
  });

  test('a $ref must resolve inside the file', () => {
    expect(schemaProblems({ $ref: 'https://example.org/s.json' })[0]).toContain('points outside this file');
    expect(schemaProblems({ properties: { a: { $ref: '#/$defs/missing' } } })).toEqual(['/properties/a: "$ref": "#/$defs/missing" points to nothing in this file']);
    expect(schemaProblems({ $ref: '#thing' })[0]).toContain('names no "$anchor"');
    expect(schemaProblems({ $defs: { item: { $anchor: 'thing', type: 'string' } }, properties: { a: { $ref: '#/$defs/item' }, b: { $ref: '#thing' } } })).toEqual([]);
    expect(schemaProblems({ $id: 'https://example.org/root.json', $defs: { a: { type: 'string' } }, $ref: 'root.json#/$defs/a' })).toEqual([]);
    // A "$ref" inside data (enum, const, default, examples) is not a reference.
    expect(schemaProblems({ enum: [{ $ref: 'nowhere' }] })).toEqual([]);
  });

  test('true and false are schemas', () => {
    expect(schemaProblems(true)).toEqual([]);
    expect(contract(true).check('"anything"')).toEqual({ ok: true, value: 'anything' });
  });
});
