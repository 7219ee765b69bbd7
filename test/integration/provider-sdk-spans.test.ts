// The Anthropic SDK's own tracing, for an application that registered an OpenTelemetry tracer
// provider: conch hands create() the params with a stand-in for the messages and sends the body's
// JSON itself (providers/request-json.ts), and the SDK's span must still be the one its unchanged
// client makes for the same params: the request's attributes, and in content mode the messages.
// In a process of its own: the tracer provider is registered globally.
import { afterAll, beforeAll, expect, test } from 'bun:test';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BUN, REPO } from '../support/cli.ts';
import { startModelServer, type ModelServer } from '../support/model-server.ts';

let server: ModelServer;
let dir: string;
beforeAll(async () => {
  server = await startModelServer();
  dir = await mkdtemp(join(tmpdir(), 'conch-sdk-spans-'));
});
afterAll(async () => {
  await server.close();
  await rm(dir, { recursive: true, force: true });
});

const APP = `
import { trace } from '@opentelemetry/api';
import { InMemorySpanExporter, SimpleSpanProcessor, TracerProvider } from '@opentelemetry/sdk-trace';
import { createProvider } from '${REPO}/src/providers/index.ts';
import { toAnthropicParams } from '${REPO}/src/providers/anthropic.ts';
import { sdkClientOptions } from '${REPO}/src/providers/common.ts';
import { MessagesClient } from '${REPO}/src/providers/anthropic-sdk.ts';

const exporter = new InMemorySpanExporter();
trace.setGlobalTracerProvider(new TracerProvider({ spanProcessors: [new SimpleSpanProcessor({ exporter })] }));
const config = { type: 'anthropic', name: 'anthropic', model: 'test-model', apiKey: 'k', baseUrl: process.env.MODEL_URL, maxOutputTokens: 900, temperature: 0.5, retry: { maxRetries: 0, initialDelayMs: 1, maxDelayMs: 1 } };
const request = { system: 'Be brief.', tools: [], messages: [
  { role: 'user', content: [{ type: 'text', text: 'the task SPANTASK' }] },
  { role: 'assistant', text: 'looking', toolCalls: [{ id: 'c1', name: 'read', arguments: '{"path":"a"}' }] },
  { role: 'tool', results: [{ callId: 'c1', name: 'read', content: [{ type: 'text', text: 'the result' }], isError: false }] },
] };
// Less what differs from one response to the next: its id and timing.
const VARYING = ['gen_ai.response.id', 'gen_ai.response.time_to_first_chunk'];
const take = () => {
  const s = exporter.getFinishedSpans().filter((s) => s.name === 'anthropic.messages.create');
  exporter.reset();
  return s.map((s) => Object.fromEntries(Object.entries(s.attributes).filter(([k]) => !VARYING.includes(k))));
};
const provider = await createProvider(config);
await provider.stream(request, { onText() {} }, new AbortController().signal);
const conch = take();
for await (const _ of await new MessagesClient(sdkClientOptions(config, 'reference')).messages.create(toAnthropicParams(config, request)));
const reference = take();
console.log(JSON.stringify({ conch, reference }));
`;

async function spans(contentMode: boolean) {
  const app = join(dir, 'app.ts');
  await writeFile(app, APP);
  server.script(() => ({ text: 'ok' }));
  const child = Bun.spawn([BUN, app], {
    cwd: REPO,
    env: {
      PATH: process.env.PATH ?? '/usr/bin:/bin',
      MODEL_URL: server.anthropicBaseUrl,
      ...(contentMode ? { ANTHROPIC_OPEN_TELEMETRY_TRACES_CONTENT_MODE: 'content' } : {}),
    },
    stdout: 'pipe',
    stderr: 'pipe',
  });
  const [stdout, stderr, code] = await Promise.all([new Response(child.stdout).text(), new Response(child.stderr).text(), child.exited]);
  expect({ code, stderr }).toEqual({ code: 0, stderr: '' });
  return JSON.parse(stdout) as { conch: Record<string, unknown>[]; reference: Record<string, unknown>[] };
}

test("the SDK's span of a conch request is the one its own client makes: the request's attributes", async () => {
  const { conch, reference } = await spans(false);
  expect(conch).toHaveLength(1);
  expect(conch[0]).toMatchObject({ 'gen_ai.request.model': 'test-model', 'gen_ai.request.max_tokens': 900, 'gen_ai.request.stream': true });
  expect(conch[0]!['gen_ai.input.messages']).toBeUndefined();
  expect(conch).toEqual(reference);
}, 30_000);

test('in content mode the span records the messages, as for the SDK itself', async () => {
  const { conch, reference } = await spans(true);
  expect(conch).toHaveLength(1);
  expect(String(conch[0]!['gen_ai.input.messages'])).toContain('SPANTASK');
  expect(String(conch[0]!['gen_ai.input.messages'])).toContain('the result');
  expect(conch).toEqual(reference);
}, 30_000);
