// The model SDKs in the bundle bin/conch runs (src/build.ts): each in a file of its own beside
// main.js, loaded by the first request to its provider; Anthropic's as the base client with the
// Messages resource only (providers/anthropic-sdk.ts), without the rest of the API's resources.
// Through that bundle, against the local model server: a tool turn and its answer, an output
// schema sent as structured output, and an API error classified by the SDK's own error classes.
import { afterAll, beforeAll, expect, test } from 'bun:test';
import { mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { bundle } from '../../src/build.ts';
import { validPolicyDigests } from '../../src/sandbox/profiles.ts';
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

test('TypeBox: what conch uses of it is a file of its own, all of it another for plugins; a run without plugins needs only the first', async () => {
  const main = await readFile(join(outdir, 'main.js'), 'utf8');
  const core = await readFile(join(outdir, 'vendor-typebox-core.js'), 'utf8');
  const full = await readFile(join(outdir, 'vendor-typebox.js'), 'utf8');
  // '~kind' is the key TypeBox marks each of its schemas with; 'date-time' one of the formats it registers.
  for (const mark of ["'~kind'", '"~kind"', '"date-time"']) expect(main).not.toContain(mark);
  for (const file of [core, full]) expect(file).toContain('~kind');
  // Built alone, the core file holds only the part conch imports (built with the full one, it held it all).
  expect(core.length).toBeLessThan(full.length * 0.6);
  // The shipped sandbox policy files the build checked, so that a run does not check them again.
  const digests = validPolicyDigests();
  expect(Object.keys(digests)).toContain('workspace-write.json');
  for (const [name, digest] of Object.entries(digests)) expect(main).toContain(`"${name}":"${digest}"`);
  // Without the full file, a run still checks tool arguments: the error names the field (Compile
  // and Errors from the core file).
  const aside = join(outdir, 'vendor-typebox.js.aside');
  await rename(join(outdir, 'vendor-typebox.js'), aside);
  try {
    harness.server.script([{ toolCalls: [{ name: 'read', arguments: { path: 42 } }] }, { text: 'done' }]);
    const run = await conch(['--model', 'anthropic/test-model', '--json', 'go']);
    expect({ code: run.code, stderr: run.stderr }).toEqual({ code: 0, stderr: '' });
    expect(JSON.parse(run.stdout)).toMatchObject({ status: 'completed', counts: { toolCalls: 1, toolErrors: 1 } });
  } finally {
    await rename(aside, join(outdir, 'vendor-typebox.js'));
  }
  const toolResult = JSON.stringify(harness.server.requests.at(-1)!.body);
  expect(toolResult).toContain('path');
  expect(toolResult).toContain('must be string');
});

test('a plugin gets all of TypeBox through the bundle, from conch and from typebox, and conch checks its arguments', async () => {
  const tools = join(harness.dirs.configHome, 'conch', 'tools');
  await mkdir(tools, { recursive: true });
  // Tuple, Enum and KeyOf are builders conch's own schemas never use (not in core/typebox-builders.ts).
  await writeFile(
    join(tools, 'pick.ts'),
    `import { defineTool, Type } from 'conch';
import { Type as T } from 'typebox';
export default defineTool({
  name: 'pick',
  description: 'pick one',
  parameters: Type.Object({ pair: Type.Tuple([Type.String(), Type.Number()]), color: Type.Enum(['red', 'blue']), key: T.KeyOf(T.Object({ a: T.String(), b: T.String() })) }),
  async execute(args) { return args.pair[0] + ':' + args.color + ':' + args.key; },
});
`,
  );
  try {
    harness.server.script([
      { toolCalls: [{ name: 'pick', arguments: { pair: ['x', 1], color: 'green', key: 'a' } }] },
      { toolCalls: [{ name: 'pick', arguments: { pair: ['x', 1], color: 'red', key: 'b' } }] },
      { text: 'done' },
    ]);
    const run = await conch(['--model', 'anthropic/test-model', '--json', 'go']);
    expect({ code: run.code, stderr: run.stderr }).toEqual({ code: 0, stderr: '' });
    expect(JSON.parse(run.stdout)).toMatchObject({ status: 'completed', counts: { toolCalls: 2, toolErrors: 1 } });
    const [, second, third] = harness.server.requests.map((r) => JSON.stringify(r.body));
    expect(second).toContain('color');
    expect(third).toContain('x:red:b');
  } finally {
    await rm(join(tools, 'pick.ts'));
  }
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
