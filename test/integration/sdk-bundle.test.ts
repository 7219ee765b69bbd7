// The model SDKs in the bundle bin/conch runs (src/build.ts): each in a file of its own beside
// main.js, loaded by the first request to its provider; Anthropic's as the base client with the
// Messages resource only (providers/anthropic-sdk.ts), without the rest of the API's resources.
// Through that bundle, against the local model server: a tool turn and its answer, an output
// schema sent as structured output, and an API error classified by the SDK's own error classes.
import { afterAll, beforeAll, expect, test } from 'bun:test';
import { readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { bundle } from '../../src/build.ts';
import { anthropicEnv, BUN, conchEnv, openaiEnv, REPO, useHarness, writeConfig } from '../support/cli.ts';

const harness = useHarness();
// Beside the real bundle, so conch finds its package root the same way.
const outdir = join(REPO, 'node_modules', '.cache', 'conch', `test-sdk-${process.pid}`);

beforeAll(async () => {
  await bundle(outdir);
}, 60_000);
afterAll(async () => {
  await rm(outdir, { recursive: true, force: true });
});

async function conch(args: string[]) {
  const env = conchEnv(harness.dirs, { ...anthropicEnv(harness.server.anthropicBaseUrl), ...openaiEnv(harness.server.openaiBaseUrl) });
  const child = Bun.spawn([BUN, '--no-install', join(outdir, 'main.js'), ...args], { cwd: harness.dirs.workspace, env, stdin: 'ignore', stdout: 'pipe', stderr: 'pipe' });
  const [stdout, stderr, code] = await Promise.all([new Response(child.stdout).text(), new Response(child.stderr).text(), child.exited]);
  return { code, stdout, stderr };
}

test('each SDK is a file of its own; the Anthropic one sends Messages and holds none of the other resources', async () => {
  const main = await readFile(join(outdir, 'main.js'), 'utf8');
  const anthropic = await readFile(join(outdir, 'vendor-anthropic.js'), 'utf8');
  const openai = await readFile(join(outdir, 'vendor-openai.js'), 'utf8');
  // The paths each resource requests are string literals in its code.
  expect(anthropic).toContain('/v1/messages');
  for (const resource of ['/v1/files', '/v1/models', '/v1/skills', '/v1/user_profiles']) expect(anthropic).not.toContain(resource);
  expect(openai).toContain('/chat/completions');
  for (const path of ['/v1/messages', '/chat/completions']) expect(main).not.toContain(path);
});

test('TypeBox is a file of its own, and the schema checks conch makes with it work through the bundle', async () => {
  const main = await readFile(join(outdir, 'main.js'), 'utf8');
  const typebox = await readFile(join(outdir, 'vendor-typebox.js'), 'utf8');
  // '~kind' is the key TypeBox marks each of its schemas with; 'date-time' one of the formats it registers.
  for (const mark of ["'~kind'", '"~kind"', '"date-time"']) expect(main).not.toContain(mark);
  expect(typebox).toContain('~kind');
  // Arguments that fail the tool's schema: the error names the field (Compile and Errors from the vendor file).
  harness.server.script([{ toolCalls: [{ name: 'read', arguments: { path: 42 } }] }, { text: 'done' }]);
  const run = await conch(['--model', 'anthropic/test-model', '--json', 'go']);
  expect({ code: run.code, stderr: run.stderr }).toEqual({ code: 0, stderr: '' });
  expect(JSON.parse(run.stdout)).toMatchObject({ status: 'completed', counts: { toolCalls: 1, toolErrors: 1 } });
  const toolResult = JSON.stringify(harness.server.requests.at(-1)!.body);
  expect(toolResult).toContain('path');
  expect(toolResult).toContain('must be string');
});

test('a run on each provider through the bundle: tool turn, structured output, API error', async () => {
  const schema = join(harness.dirs.home, 'answer.schema.json');
  await writeFile(schema, JSON.stringify({ type: 'object', properties: { answer: { type: 'string' } }, required: ['answer'] }));
  // A base URL turns structured output off unless the config turns it on.
  await writeConfig(harness.dirs, { providers: { anthropic: { type: 'anthropic', structuredOutput: true }, openai: { type: 'openai', structuredOutput: true } } });
  for (const model of ['anthropic/test-model', 'openai/test-model']) {
    harness.server.script([{ toolCalls: [{ name: 'bash', arguments: { command: 'echo hi' } }] }, { text: 'done' }]);
    const plain = await conch(['--model', model, '--json', 'go']);
    expect({ code: plain.code, stderr: plain.stderr }).toEqual({ code: 0, stderr: '' });
    expect(JSON.parse(plain.stdout)).toMatchObject({ status: 'completed', output: 'done', counts: { modelCalls: 2, toolCalls: 1, toolErrors: 0 } });

    harness.server.script([{ text: '{"answer":"yes"}' }]);
    const structured = await conch(['--model', model, '--json', '--output-schema', schema, 'go']);
    expect({ code: structured.code, stderr: structured.stderr }).toEqual({ code: 0, stderr: '' });
    expect(JSON.parse(structured.stdout)).toMatchObject({ status: 'completed', output: { answer: 'yes' } });
    // Sent as structured output: Anthropic's through the SDK's own schema transform, which closes objects.
    const body = harness.server.requests.at(-1)!.body as Record<string, any>;
    if (model.startsWith('anthropic')) expect(body.output_config.format.schema).toMatchObject({ required: ['answer'], additionalProperties: false });
    else expect(body.response_format.json_schema.schema).toMatchObject({ required: ['answer'] });

    harness.server.script([{ error: { status: 401, message: 'bad key' } }]);
    const refused = await conch(['--model', model, '--json', 'go']);
    // provider_auth: the SDK's APIError with its status, not a connection failure or an internal error.
    expect(JSON.parse(refused.stdout)).toMatchObject({ status: 'failed', code: 'provider_auth', exitCode: refused.code });
    expect(JSON.parse(refused.stdout).message).toContain(model.startsWith('anthropic') ? 'Set ANTHROPIC_API_KEY' : 'Set OPENAI_API_KEY');
  }
}, 60_000);
