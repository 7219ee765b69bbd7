// What the model is told about bad tool arguments: one line per problem, a union's said once.
import { describe, expect, test } from 'bun:test';
import { Type } from 'typebox';
import { Catalog } from '../../src/tools/catalog.ts';
import type { Tool } from '../../src/tools/define.ts';

const catalog = new Catalog();
const tool: Tool = {
  name: 'jira',
  description: 'tickets',
  source: 'test',
  parameters: Type.Object({
    action: Type.Union([Type.Literal('create'), Type.Literal('comment')]),
    id: Type.Optional(Type.Union([Type.String(), Type.Number()])),
    mode: Type.Optional(Type.Union([Type.Literal('quick'), Type.Object({ depth: Type.Integer() })])),
    name: Type.Optional(Type.Union([Type.String({ minLength: 3 }), Type.Null()])),
    tags: Type.Optional(Type.Array(Type.Union([Type.Literal('bug'), Type.Literal('task')]))),
    plain: Type.Optional({ anyOf: [{ type: 'string', enum: ['x', 'y'] }, { type: 'boolean' }] }),
    steps: Type.Optional(Type.Array(Type.Union([Type.Literal('skip'), Type.Object({ n: Type.Number() })]))),
  }),
  execute: () => 'ok',
};
catalog.register(tool);

const message = (args: unknown): string => {
  const v = catalog.validate('jira', JSON.stringify(args));
  if (v.ok) throw new Error('expected invalid arguments');
  return v.message.replace("invalid arguments for 'jira': ", '');
};

describe('union arguments', () => {
  test('literals and types are said once, as what was expected', () => {
    expect(message({ action: 'delete' })).toBe(`field 'action' must be "create" or "comment"`);
    expect(message({ action: 'create', id: true })).toBe(`field 'id' must be a string or a number`);
    expect(message({ action: 'create', tags: ['bug', 'epic'] })).toBe(`field 'tags.1' must be "bug" or "task"`);
    expect(message({ action: 'create', mode: 'slow' })).toBe(`field 'mode' must be "quick" or an object`);
    expect(message({ action: 'create', plain: 3 })).toBe(`field 'plain' must be "x", "y" or a boolean`);
  });

  test('the one branch the value fits reports its own error', () => {
    expect(message({ action: 'create', mode: { depth: 'deep' } })).toBe(`field 'mode.depth' must be integer`);
    // Array items share one schema path: each item's union is said about that item.
    expect(message({ action: 'create', steps: [{ n: 'one' }, 'jump'] })).toBe(`field 'steps.0.n' must be number; field 'steps.1' must be "skip" or an object`);
    expect(message({ action: 'create', name: 'ab' })).toBe(`field 'name' must not have fewer than 3 characters`);
  });

  test('several bad fields, more than the validator buffers by default, each said once', () => {
    expect(message({ action: 7, id: null, mode: 3, tags: [1, 2] })).toBe(
      [`field 'action' must be "create" or "comment"`, `field 'id' must be a string or a number`, `field 'mode' must be "quick" or an object`, `field 'tags.0' must be "bug" or "task"`, `field 'tags.1' must be "bug" or "task"`].join('; '),
    );
  });
});

test('a oneOf the value matches twice keeps saying so', () => {
  const twice = new Catalog();
  twice.register({ name: 'one', description: 'd', source: 'test', parameters: { type: 'object', properties: { n: { oneOf: [{ type: 'number' }, { type: 'integer' }] } } }, execute: () => 'ok' });
  const v = twice.validate('one', '{"n": 3}');
  expect(v.ok).toBe(false);
  if (!v.ok) expect(v.message).not.toContain('must be a number or an integer');
});
