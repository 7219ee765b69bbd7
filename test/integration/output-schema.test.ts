// --output-schema: the final answer must be one JSON value the schema accepts; one repair turn,
// then failed/output_invalid (exit 5). Through the real CLI process and the local model server.
import { describe, expect, test } from 'bun:test';
import { readFileSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { anthropicEnv, openaiEnv, runConch, useHarness } from '../support/cli.ts';
import type { RecordedRequest } from '../support/model-server.ts';

const harness = useHarness(async (dirs) => {
  await writeFile(join(dirs.workspace, 'schema.json'), JSON.stringify(SCHEMA));
  await writeFile(join(dirs.workspace, 'notes.txt'), 'owner: ada@example.org\n');
});

const SCHEMA = {
  type: 'object',
  properties: { owner: { type: 'string', format: 'email' }, count: { type: 'integer', minimum: 0 } },
  required: ['owner', 'count'],
  additionalProperties: false,
};

const providers = [
  { name: 'anthropic', model: 'anthropic/test-model', env: () => anthropicEnv(harness.server.anthropicBaseUrl) },
  { name: 'openai', model: 'openai/test-model', env: () => openaiEnv(harness.server.openaiBaseUrl) },
] as const;

/** The text of the last user message of a request, in either protocol. */
function lastUserText(req: RecordedRequest): string {
  const users = (req.body.messages as { role: string; content: unknown }[]).filter((m) => m.role === 'user');
  const content = users.at(-1)!.content;
  if (typeof content === 'string') return content;
  return (content as { type: string; text?: string }[]).filter((b) => b.type === 'text').map((b) => b.text).join('\n');
}

for (const p of providers) {
  describe(`--output-schema (${p.name})`, () => {
    const conch = (...args: string[]) => runConch({ dirs: harness.dirs, args: ['--model', p.model, ...args], env: p.env() });

    test('a valid first answer is the parsed value in --json, and the schema went with the task', async () => {
      harness.server.script([{ text: '{"owner": "ada@example.org", "count": 3}' }]);
      const r = await conch('--json', '--output-schema', 'schema.json', 'who owns this?');
      expect(r.code).toBe(0);
      const doc = JSON.parse(r.stdout);
      expect(doc.status).toBe('completed');
      expect(doc.output).toEqual({ owner: 'ada@example.org', count: 3 });
      expect(doc.partial).toBe(false);
      expect(harness.server.requests).toHaveLength(1);
      const task = lastUserText(harness.server.requests[0]!);
      expect(task).toStartWith('who owns this?');
      expect(task).toContain('"format": "email"');
    });

    test('piped stdout gets the value as one line of JSON; a ```json fence around it is accepted', async () => {
      harness.server.script([{ text: 'Sure.\n' }, { text: '```json\n{\n  "owner": "ada@example.org",\n  "count": 0\n}\n```' }]);
      // The first turn is prose: repaired. The second is the fenced JSON.
      const r = await conch('--output-schema', 'schema.json', 'go');
      expect(r.code).toBe(0);
      expect(r.stdout).toBe('{"owner":"ada@example.org","count":0}\n');
      expect(r.stderr).toContain('does not match the output schema');
    });

    test('tools stay available with the schema on; the answer after a tool call is checked', async () => {
      harness.server.script([
        { toolCalls: [{ name: 'read', arguments: { path: 'notes.txt' } }] },
        { text: '{"owner": "ada@example.org", "count": 1}' },
      ]);
      const r = await conch('--json', '--output-schema', 'schema.json', 'read notes.txt');
      expect(r.code).toBe(0);
      const doc = JSON.parse(r.stdout);
      expect(doc.counts.toolCalls).toBe(1);
      expect(doc.counts.toolErrors).toBe(0);
      expect(doc.output).toEqual({ owner: 'ada@example.org', count: 1 });
      const tools = p.name === 'anthropic' ? harness.server.requests[0]!.body.tools : harness.server.requests[0]!.body.tools.map((t: any) => t.function);
      expect(tools.map((t: { name: string }) => t.name)).toContain('read');
    });

    test('an invalid answer gets one repair turn quoting the path and message; the corrected one completes', async () => {
      harness.server.script([{ text: '{"owner": "not an address", "count": 2}' }, { text: '{"owner": "ada@example.org", "count": 2}' }]);
      const trace = join(harness.dirs.home, 'trace.jsonl');
      const r = await conch('--json', '--trace', trace, '--output-schema', 'schema.json', 'go');
      expect(r.code).toBe(0);
      const doc = JSON.parse(r.stdout);
      expect(doc.output).toEqual({ owner: 'ada@example.org', count: 2 });
      expect(doc.counts.modelCalls).toBe(2);
      expect(doc.outputErrors).toBeUndefined();
      expect(harness.server.requests).toHaveLength(2);
      const repair = lastUserText(harness.server.requests[1]!);
      expect(repair).toContain('- /owner: must match format "email"');
      // The repair is a user turn of the same conversation: the first answer is in the history.
      expect(JSON.stringify(harness.server.requests[1]!.body.messages)).toContain('not an address');
      const events = readFileSync(trace, 'utf8').trim().split('\n').map((l) => JSON.parse(l));
      const repairEvent = events.find((e) => e.type === 'output.repair');
      expect(repairEvent).toMatchObject({ turn: 1, errors: 1 });
      // Without --trace-content the trace holds no answer.
      expect(readFileSync(trace, 'utf8')).not.toContain('ada@example.org');
    });

    test('invalid twice: failed/output_invalid, exit 5, the envelope carries the errors and the last answer', async () => {
      harness.server.script([{ text: '{"owner": "ada@example.org"}' }, { text: '{"owner": "ada@example.org", "count": -1, "extra": true}' }, { text: 'unreachable' }]);
      const r = await conch('--json', '--output-schema', 'schema.json', 'go');
      expect(r.code).toBe(5);
      const doc = JSON.parse(r.stdout);
      expect(doc).toMatchObject({ status: 'failed', code: 'output_invalid', exitCode: 5, partial: true });
      expect(doc.output).toBe('{"owner": "ada@example.org", "count": -1, "extra": true}');
      expect(doc.outputErrors).toEqual(expect.arrayContaining([
        { path: '/count', message: 'must be >= 0' },
        { path: '/extra', message: 'is not allowed here (not a property the schema lists)' },
      ]));
      expect(doc.message).toContain('/count: must be >= 0');
      // At most one repair turn.
      expect(harness.server.requests).toHaveLength(2);
      expect(lastUserText(harness.server.requests[1]!)).toContain('- /count: is required but missing');
    });

    test('without --json, output_invalid prints no answer and says why on stderr', async () => {
      harness.server.script([{ text: 'no json here' }, { text: 'still none' }]);
      const r = await conch('--output-schema', 'schema.json', 'go');
      expect(r.code).toBe(5);
      expect(r.stdout).toBe('');
      expect(r.stderr).toContain('failed (output_invalid)');
      expect(r.stderr).toContain('not one JSON value');
    });
  });
}

describe('--output-schema setup errors', () => {
  const conch = (...args: string[]) =>
    runConch({ dirs: harness.dirs, args: ['--model', 'anthropic/test-model', ...args], env: anthropicEnv(harness.server.anthropicBaseUrl) });

  test('a missing file, bad JSON or a schema that is not one: exit 2 naming the file, no model call', async () => {
    await writeFile(join(harness.dirs.workspace, 'bad.json'), '{"type": "object",');
    await writeFile(join(harness.dirs.workspace, 'wrong.json'), '{"type": "strnig"}');
    await writeFile(join(harness.dirs.workspace, 'far.json'), '{"$ref": "https://example.org/s.json"}');
    harness.server.script([{ text: 'unreachable' }]);
    const cases: [string, string][] = [
      ['absent.json', '--output-schema absent.json: cannot read the schema (no such file)'],
      ['bad.json', '--output-schema bad.json: not valid JSON at line 1'],
      ['wrong.json', '--output-schema wrong.json: not a valid JSON Schema: /type:'],
      ['far.json', 'points outside this file'],
    ];
    for (const [file, message] of cases) {
      const r = await conch('--output-schema', file, 'go');
      expect(r.code).toBe(2);
      expect(r.stderr).toContain(message);
      expect(r.stderr).not.toContain('    at ');
    }
    const json = await conch('--json', '--output-schema', 'wrong.json', 'go');
    expect(json.code).toBe(2);
    expect(JSON.parse(json.stdout)).toMatchObject({ status: 'failed', code: 'config_invalid', exitCode: 2 });
    expect(harness.server.requests).toHaveLength(0);
  });
});

describe('--output-schema references that never reach a schema', () => {
  // {"$ref": "#"} and a.$ref → b.$ref → a are valid JSON Schema documents, but checking any answer
  // against them recursed until the stack ran out, after the whole run had been paid for.
  test('a $ref to itself or a cycle of $refs: exit 2 naming the file and the reference, no model call', async () => {
    await writeFile(join(harness.dirs.workspace, 'self.json'), '{"$ref": "#"}');
    await writeFile(join(harness.dirs.workspace, 'cycle.json'), JSON.stringify({ $defs: { a: { $ref: '#/$defs/b' }, b: { $ref: '#/$defs/a' } }, $ref: '#/$defs/a' }));
    harness.server.script([{ text: '1' }, { text: '1' }]);
    const cases = [['self.json', '(root): "$ref": "#"'], ['cycle.json', '/$defs/a: "$ref": "#/$defs/b"']] as const;
    for (const [file, ref] of cases) {
      const r = await runConch({ dirs: harness.dirs, args: ['--model', 'anthropic/test-model', '--output-schema', file, 'go'], env: anthropicEnv(harness.server.anthropicBaseUrl) });
      expect(r.code).toBe(2);
      expect(r.stderr).toContain(`--output-schema ${file}: not a valid JSON Schema: ${ref} leads back to itself without checking anything on the way`);
      expect(r.stderr).not.toContain('    at ');
    }
    expect(harness.server.requests).toHaveLength(0);
  });

  test('a recursive schema whose references reach a schema still checks nested answers', async () => {
    const tree = { type: 'object', properties: { name: { type: 'string' }, children: { type: 'array', items: { $ref: '#' } } }, required: ['name'] };
    await writeFile(join(harness.dirs.workspace, 'tree.json'), JSON.stringify(tree));
    harness.server.script([{ text: '{"name": "a", "children": [{"name": "b", "children": [{"children": []}]}]}' }, { text: '{"name": "a", "children": [{"name": "b"}]}' }]);
    const r = await runConch({ dirs: harness.dirs, args: ['--model', 'anthropic/test-model', '--output-schema', 'tree.json', 'go'], env: anthropicEnv(harness.server.anthropicBaseUrl) });
    expect(r.code).toBe(0);
    expect(r.stdout).toBe('{"name":"a","children":[{"name":"b"}]}\n');
    expect(lastUserText(harness.server.requests[1]!)).toContain('/children/0/children/0');
  });
});

describe('--output-schema with sessions, limits and the terminal modes', () => {
  const env = () => anthropicEnv(harness.server.anthropicBaseUrl);
  const conch = (...args: string[]) => runConch({ dirs: harness.dirs, args: ['--model', 'anthropic/test-model', ...args], env: env() });

  test('a run that ended output_invalid stays in the conversation that -c continues', async () => {
    harness.server.script([{ text: '{"owner": "x"}' }, { text: '{"owner": "y"}' }, { text: 'plain answer' }]);
    expect((await conch('--output-schema', 'schema.json', 'first')).code).toBe(5);
    const r = await conch('-c', 'second');
    expect(r.code).toBe(0);
    expect(r.stdout).toBe('plain answer\n');
    const sent = JSON.stringify(harness.server.requests[2]!.body.messages);
    expect(sent).toContain('first');
    expect(sent).toContain('{\\"owner\\": \\"y\\"}');
  });

  test('conch sessions lists the task as it was typed, without the schema note (the model still got it)', async () => {
    harness.server.script([{ text: '{"owner": "ada@example.org", "count": 1}' }]);
    expect((await conch('--output-schema', 'schema.json', 'list the owner')).code).toBe(0);
    expect(JSON.stringify(harness.server.requests[0]!.body.messages)).toContain('Your final answer must be exactly one JSON value');
    const listed = await runConch({ dirs: harness.dirs, args: ['sessions'], env: env() });
    expect(listed.code).toBe(0);
    expect(listed.stdout).toContain('list the owner');
    expect(listed.stdout).not.toContain('final answer');
  });

  test('conch sessions show gives the task as typed, says a schema went with it, and shows the repair turn as conch\'s', async () => {
    harness.server.script([{ text: '{"owner": "nobody", "count": 1}' }, { text: '{"owner": "ada@example.org", "count": 1}' }]);
    expect((await conch('--output-schema', 'schema.json', 'list the owner')).code).toBe(0);
    const id = JSON.parse((await runConch({ dirs: harness.dirs, args: ['sessions', '--json'], env: env() })).stdout).sessions[0].id;
    const show = await runConch({ dirs: harness.dirs, args: ['sessions', 'show', id], env: env() });
    expect(show.stdout).toContain('> list the owner\n  (the answer had to match --output-schema)\n');
    expect(show.stdout).toContain('(the answer did not match --output-schema; conch asked for a corrected one: /owner: must match format "email")');
    expect(show.stdout).not.toContain('final answer');
    const items = JSON.parse((await runConch({ dirs: harness.dirs, args: ['sessions', 'show', id, '--json'], env: env() })).stdout).runs[0].items;
    expect(items.map((i: any) => i.type)).toEqual(['task', 'answer', 'repair', 'answer']);
    expect(items[0]).toEqual({ type: 'task', text: 'list the owner', outputSchema: true });
  });

  test('the repair turn counts against --max-turns: a limit reached first is limit_exceeded, with the errors', async () => {
    harness.server.script([{ text: '{"owner": "x"}' }, { text: 'unreachable' }]);
    const r = await conch('--json', '--max-turns', '1', '--output-schema', 'schema.json', 'go');
    expect(r.code).toBe(4);
    const doc = JSON.parse(r.stdout);
    expect(doc).toMatchObject({ status: 'limit_exceeded', limit: 'model_calls' });
    expect(doc.outputErrors).toContainEqual({ path: '/owner', message: 'must match format "email"' });
    expect(harness.server.requests).toHaveLength(1);
  });

  test('--interactive does not take --output-schema', async () => {
    const r = await conch('-i', '--output-schema', 'schema.json');
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('--output-schema checks the answer of one run');
  });
});

describe('the embedding API: outputSchema', () => {
  test('a task that ends in an image lists without the schema note, which followed the image as a block of its own', async () => {
    const { startRun } = await import('../../src/index.ts');
    const host = await startRun({ model: 'anthropic/test-model' }, harness.dirs.workspace, {
      env: { ...anthropicEnv(harness.server.anthropicBaseUrl), HOME: harness.dirs.home, XDG_CONFIG_HOME: harness.dirs.configHome },
    });
    try {
      harness.server.script([{ text: '{"owner": "ada@example.org", "count": 1}' }]);
      const png = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==';
      const task = [{ type: 'text' as const, text: 'whose is this?' }, { type: 'image' as const, mediaType: 'image/png', data: png }];
      expect((await host.run(task, { outputSchema: SCHEMA })).status).toBe('completed');
    } finally {
      await host.dispose();
    }
    expect(JSON.stringify(harness.server.requests[0]!.body.messages)).toContain('Your final answer must be exactly one JSON value');
    const listed = await runConch({ dirs: harness.dirs, args: ['sessions', '--json'], env: {} });
    expect(JSON.parse(listed.stdout).sessions[0].task).toBe('whose is this? [image/png]');
  });

  test('run(task, { outputSchema }) gives the parsed value; an unusable schema fails before any model call', async () => {
    const { startRun, Type } = await import('../../src/index.ts');
    const host = await startRun({ model: 'anthropic/test-model' }, harness.dirs.workspace, {
      session: { ephemeral: true },
      env: { ...anthropicEnv(harness.server.anthropicBaseUrl), HOME: harness.dirs.home, XDG_CONFIG_HOME: harness.dirs.configHome },
    });
    try {
      harness.server.script([{ text: '{"owner": "nobody"}' }, { text: '{"owner": "ada@example.org"}' }]);
      const events: string[] = [];
      const outcome = await host.run('who?', {
        outputSchema: Type.Object({ owner: Type.String({ format: 'email' }) }),
        sink: { emit: (e) => events.push(e.type) },
      });
      expect(outcome.status).toBe('completed');
      expect(outcome.outputValue).toEqual({ owner: 'ada@example.org' });
      expect(events).toContain('output.repair');
      expect(harness.server.requests).toHaveLength(2);

      const bad = await host.run('again', { outputSchema: { type: 'nonsense' } });
      expect(bad).toMatchObject({ status: 'failed', code: 'config_invalid' });
      expect(bad.message).toContain('the output schema is not usable: /type:');
      expect(harness.server.requests).toHaveLength(2);
    } finally {
      await host.dispose();
    }
  });
});
