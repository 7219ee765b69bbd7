// --output-schema as the providers' structured-output parameter: sent beside the tools where it is
// on (the provider's own API, or "structuredOutput": true), never to a compatible server by
// default, and dropped for the rest of the run when the server rejects it. Real CLI, real SDKs.
import { describe, expect, test } from 'bun:test';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { anthropicEnv, openaiEnv, runConch, useHarness, writeConfig } from '../support/cli.ts';

const SCHEMA = {
  type: 'object',
  properties: { owner: { type: 'string', format: 'email' }, count: { type: 'integer', minimum: 0 } },
  required: ['owner', 'count'],
};
const ANSWER = '{"owner": "ada@example.org", "count": 1}';

const harness = useHarness(async (dirs) => {
  await writeFile(join(dirs.workspace, 'schema.json'), JSON.stringify(SCHEMA));
  await writeFile(join(dirs.workspace, 'list.json'), JSON.stringify({ type: 'array', items: { type: 'string' } }));
});

// Without --json: the human display says on stderr what was dropped; stdout is the answer's JSON.
const anthropic = (...args: string[]) =>
  runConch({ dirs: harness.dirs, args: ['--model', 'anthropic/test-model', ...args], env: anthropicEnv(harness.server.anthropicBaseUrl) });
const openai = (...args: string[]) =>
  runConch({ dirs: harness.dirs, args: ['--model', 'openai/test-model', ...args], env: openaiEnv(harness.server.openaiBaseUrl) });
const structured = (name: string, on: boolean) => writeConfig(harness.dirs, { providers: { [name]: { type: name, structuredOutput: on } } });

describe('OpenAI-compatible: response_format', () => {
  test('a server by base URL gets none by default: Ollama and vLLM would constrain the tool calls away', async () => {
    harness.server.script([{ text: ANSWER }]);
    const r = await openai('--output-schema', 'schema.json', 'go');
    expect(r.code).toBe(0);
    expect(harness.server.requests[0]!.body.response_format).toBeUndefined();
    expect(harness.server.requests[0]!.body.tools.length).toBeGreaterThan(0);
  });

  test('"structuredOutput": true sends json_schema (strict: false) beside the tools', async () => {
    await structured('openai', true);
    harness.server.script([{ text: ANSWER }]);
    const r = await openai('--output-schema', 'schema.json', 'go');
    expect(r.code).toBe(0);
    const body = harness.server.requests[0]!.body;
    expect(body.response_format).toEqual({ type: 'json_schema', json_schema: { name: 'final_answer', schema: SCHEMA, strict: false } });
    expect(body.tools.map((t: any) => t.function.name)).toContain('read');
    expect(body.tool_choice).toBeUndefined();
  });

  test('a server that rejects response_format gets the run without it, said once; the answer is still checked', async () => {
    await structured('openai', true);
    harness.server.script((req) =>
      req.body.response_format ? { error: { status: 400, message: "Unrecognized request argument supplied: response_format" } } : { text: '{"owner": "nobody", "count": 1}' },
    );
    const r = await openai('--output-schema', 'schema.json', 'go');
    expect(r.code).toBe(5);
    expect(r.stderr).toContain('rejected the request field "response_format"');
    const bodies = harness.server.requests.map((q) => q.body);
    expect(bodies.map((b) => 'response_format' in b)).toEqual([true, false, false]);
    expect(r.stderr).toContain('failed (output_invalid)');
  });

  test('a schema whose root is not an object goes in the task only', async () => {
    await structured('openai', true);
    harness.server.script([{ text: '["a"]' }]);
    const r = await openai('--output-schema', 'list.json', 'go');
    expect(r.code).toBe(0);
    expect(r.stdout).toBe('["a"]\n');
    expect(harness.server.requests[0]!.body.response_format).toBeUndefined();
  });
});

describe('Anthropic: output_config.format', () => {
  test('off by default with a base URL; on with "structuredOutput": true, beside the tools, as the SDK transforms it', async () => {
    harness.server.script([{ text: ANSWER }, { text: ANSWER }]);
    expect((await anthropic('--output-schema', 'schema.json', 'go')).code).toBe(0);
    expect(harness.server.requests[0]!.body.output_config).toBeUndefined();

    await structured('anthropic', true);
    expect((await anthropic('--output-schema', 'schema.json', 'go')).code).toBe(0);
    const body = harness.server.requests[1]!.body;
    expect(body.output_config.format.type).toBe('json_schema');
    const sent = body.output_config.format.schema;
    // Closed, the email format kept, the minimum moved into the description (conch checks it itself).
    expect(sent).toMatchObject({ type: 'object', additionalProperties: false, required: ['owner', 'count'], properties: { owner: { type: 'string', format: 'email' } } });
    expect(sent.properties.count.minimum).toBeUndefined();
    expect(body.tools.map((t: any) => t.name)).toContain('read');
    expect(body.tool_choice).toBeUndefined();
  });

  test('a 400 for a request with output_config: sent again without it, said once, for the rest of the run', async () => {
    await structured('anthropic', true);
    harness.server.script((req) => {
      if (req.body.output_config) return { error: { status: 400, message: 'output_config.format: structured outputs are not supported by this model' } };
      return harness.server.requests.length === 2 ? { toolCalls: [{ name: 'read', arguments: { path: 'schema.json' } }] } : { text: ANSWER };
    });
    const r = await anthropic('--output-schema', 'schema.json', 'go');
    expect(r.code).toBe(0);
    expect(r.stdout).toBe('{"owner":"ada@example.org","count":1}\n');
    expect(harness.server.requests.map((q) => 'output_config' in q.body)).toEqual([true, false, false]);
    expect(r.stderr.match(/rejected the output schema as structured output/g)).toHaveLength(1);
  });

  test('"structuredOutput": false keeps it out even of the provider\'s own API (no base URL)', async () => {
    await structured('anthropic', false);
    const { structuredOutputOn } = await import('../../src/providers/common.ts');
    const retry = { maxRetries: 0, initialDelayMs: 0, maxDelayMs: 0 };
    expect(structuredOutputOn({ type: 'anthropic', name: 'anthropic', model: 'm', retry })).toBe(true);
    expect(structuredOutputOn({ type: 'anthropic', name: 'anthropic', model: 'm', retry, structuredOutput: false })).toBe(false);
    expect(structuredOutputOn({ type: 'openai', name: 'local', model: 'm', retry, baseUrl: 'http://localhost:11434/v1' })).toBe(false);
    harness.server.script([{ text: ANSWER }]);
    expect((await anthropic('--output-schema', 'schema.json', 'go')).code).toBe(0);
    expect(harness.server.requests[0]!.body.output_config).toBeUndefined();
  });
});
