// conch puts each request's JSON together from texts kept per converted message
// (providers/request-json.ts) instead of letting the SDK serialise the whole body. Over a long
// conversation of every shape (tool calls, several results, images, signed and redacted thinking,
// cache marks, elisions, text that is not ASCII, emoji and lone surrogates), every request must be
// what the SDK itself sends for the same params: the same bytes, the same headers.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import OpenAI from 'openai';
import { createProvider } from '../../src/providers/index.ts';
import { sdkClientOptions } from '../../src/providers/common.ts';
import { toAnthropicParams } from '../../src/providers/anthropic.ts';
import { toOpenAIParams } from '../../src/providers/openai.ts';
import { requestJson, withStandInMessages } from '../../src/providers/request-json.ts';
import type { Message, ModelRequest, Provider } from '../../src/providers/types.ts';
import type { ProviderConfig } from '../../src/config/provider-config.ts';
import { startModelServer, type ModelServer, type RecordedRequest } from '../support/model-server.ts';

let server: ModelServer;
beforeAll(async () => {
  server = await startModelServer();
});
afterAll(() => server.close());

type Protocol = 'anthropic' | 'openai';
const TURNS = 80;
const PNG = 'iVBORw0KGgo=';
const ODD = 'Ünïcödé 日本語 🐚🦀 "quoted" \\ back\u0000nul \ud800 lone \udfff high\u2028sep';
const SCHEMA = { type: 'object', properties: { answer: { type: 'string' } }, required: ['answer'] };
const TOOLS = [
  { name: 'echo', description: 'echo ✓', parameters: { type: 'object', properties: { text: { type: 'string' } } } },
  { name: 'picture', description: 'an image', parameters: { type: 'object', properties: {} } },
];

function config(protocol: Protocol, extra: Partial<ProviderConfig> = {}): ProviderConfig {
  return {
    type: protocol,
    name: protocol,
    model: 'test-model',
    apiKey: 'k',
    baseUrl: protocol === 'anthropic' ? server.anthropicBaseUrl : server.openaiBaseUrl,
    retry: { maxRetries: 0, initialDelayMs: 1, maxDelayMs: 1 },
    ...extra,
  };
}

/** Turn i's assistant message and the tool message answering it (none for every fifth turn, a plain answer). */
function turn(i: number): Message[] {
  const text = i % 3 === 0 ? '' : `turn ${i}: ${ODD}`;
  const thinking = i % 4 === 1 ? [{ type: 'thinking' as const, text: `thought ${i} ${ODD}`, signature: `sig${i}` }, { type: 'redacted_thinking' as const, data: `redacted${i}` }] : undefined;
  if (i % 5 === 4) return [{ role: 'assistant', text: `answer ${i} ${ODD}`, toolCalls: [] }, { role: 'user', content: [{ type: 'text', text: `go on ${ODD}` }] }];
  const calls = Array.from({ length: 1 + (i % 3) }, (_, n) => ({ id: `call_${i}_${n}`, name: n === 2 ? 'picture' : 'echo', arguments: n === 1 ? '{"text": ' : JSON.stringify({ text: `${i}.${n} ${ODD}` }) }));
  return [
    { role: 'assistant', text, toolCalls: calls, ...(thinking ? { thinking } : {}) },
    {
      role: 'tool',
      results: calls.map((c, n) => ({
        callId: c.id,
        name: c.name,
        isError: n === 1,
        content: c.name === 'picture' ? [{ type: 'text', text: 'a picture' }, { type: 'image', mediaType: 'image/png', data: PNG }] : [{ type: 'text', text: `result ${c.id} ${ODD}`.repeat(1 + (i % 4)) }],
      })),
    },
  ];
}

/** An elision as the context code makes one: the tool message replaced by a new object. */
function elide(conversation: Message[], at: number): void {
  const m = conversation[at];
  if (m?.role !== 'tool') return;
  conversation[at] = { role: 'tool', results: m.results.map((r) => ({ ...r, content: [{ type: 'text', text: `[elided ${ODD}]` }] })) };
}

/** The SDK's own client, as conch makes it but without conch's kept JSON, sending `params` itself. */
async function sdkRequest(protocol: Protocol, cfg: ProviderConfig, request: ModelRequest): Promise<{ recorded: RecordedRequest; params: object }> {
  const options = sdkClientOptions(cfg, 'reference');
  const before = server.requests.length;
  if (protocol === 'anthropic') {
    const { MessagesClient, transformJSONSchema } = await import('../../src/providers/anthropic-sdk.ts');
    const format = request.outputSchema ? { type: 'json_schema' as const, schema: transformJSONSchema(request.outputSchema) as Record<string, unknown> } : undefined;
    const params = toAnthropicParams(cfg, request, format);
    for await (const _ of await new MessagesClient(options).messages.create(params));
    return { recorded: server.requests[before]!, params };
  }
  const params = toOpenAIParams(cfg, request);
  for await (const _ of await new OpenAI(options).chat.completions.create(params));
  return { recorded: server.requests[before]!, params };
}

const hooks = { onText() {} };

async function conchRequest(provider: Provider, request: ModelRequest): Promise<RecordedRequest> {
  const before = server.requests.length;
  await provider.stream(request, hooks, new AbortController().signal);
  return server.requests[before]!;
}

for (const protocol of ['anthropic', 'openai'] as const) {
  describe(protocol, () => {
    test(`${TURNS} turns: every request is the bytes and headers the SDK sends for the same params`, async () => {
      // Thinking and a temperature put more top-level fields in the params; structured output is on from turn 30.
      const cfg = config(protocol, protocol === 'anthropic' ? { thinking: 'low', structuredOutput: true } : { temperature: 0.5, structuredOutput: true });
      const provider = await createProvider(cfg);
      server.script(() => ({ text: 'ok' }));
      const conversation: Message[] = [{ role: 'user', content: [{ type: 'text', text: `the task ${ODD}` }, { type: 'image', mediaType: 'image/png', data: PNG }] }];
      let compared = 0;
      for (let i = 0; i < TURNS; i++) {
        conversation.push(...turn(i));
        // Elisions replace earlier messages, older ones first, part way through.
        if (i >= 20 && i % 2 === 0) elide(conversation, 2 + (i - 20) * 2);
        const request: ModelRequest = {
          system: i % 10 === 7 ? '' : `Be brief. ${ODD}`,
          messages: conversation,
          tools: TOOLS,
          cacheKey: 'session-1',
          ...(i >= 30 ? { outputSchema: SCHEMA } : {}),
        };
        const sent = await conchRequest(provider, request);
        const { recorded: reference, params } = await sdkRequest(protocol, cfg, request);
        expect(sent.raw).toBe(reference.raw);
        expect(JSON.parse(sent.raw)).toEqual(JSON.parse(JSON.stringify(params)));
        expect(sent.headers).toEqual(reference.headers);
        expect(sent.headers['content-type']).toBe('application/json');
        compared++;
      }
      expect(compared).toBe(TURNS);
      // What the comparison covered: cache marks, elisions, thinking, several tool messages for one turn.
      const last = JSON.parse(server.requests.at(-1)!.raw);
      const wire = JSON.stringify(last);
      expect(wire).toContain('[elided');
      expect(wire).toContain('\\ud800');
      if (protocol === 'anthropic') {
        expect(wire).toContain('"cache_control"');
        expect(wire).toContain('"redacted_thinking"');
        expect(last.output_config).toBeDefined();
      } else {
        expect(last.messages.filter((m: { role: string }) => m.role === 'tool').length).toBeGreaterThan(conversation.filter((m) => m.role === 'tool').length);
        expect(last.response_format).toBeDefined();
      }
    }, 60_000);

    test('what is sent for a message is the text kept when it was converted (the contract: a sent message is never changed in place)', async () => {
      const cfg = config(protocol);
      const provider = await createProvider(cfg);
      server.script(() => ({ text: 'ok' }));
      const conversation: Message[] = [{ role: 'user', content: [{ type: 'text', text: 'as converted' }] }, ...turn(0), ...turn(1)];
      const request: ModelRequest = { system: 'Be brief.', messages: conversation, tools: TOOLS };
      await conchRequest(provider, request);
      // The kept conversion of the first message, changed in place behind conch's back.
      const params = protocol === 'anthropic' ? toAnthropicParams(cfg, request) : toOpenAIParams(cfg, request);
      const first = params.messages[protocol === 'anthropic' ? 0 : 1] as { content: { text: string }[] | string };
      if (typeof first.content === 'string') first.content = 'changed in place';
      else first.content[0]!.text = 'changed in place';
      const sent = await conchRequest(provider, request);
      expect(sent.raw).toContain('as converted');
      expect(sent.raw).not.toContain('changed in place');
      // Replaced, as the contract asks, it is sent anew.
      conversation[0] = { role: 'user', content: [{ type: 'text', text: 'replaced' }] };
      expect((await conchRequest(provider, request)).raw).toContain('replaced');
    });
  });
}

test("the stand-in Anthropic's create() gets for the messages: the JSON has the real ones, whoever serialises it", () => {
  const params = { model: 'm', messages: [{ role: 'user', content: [{ type: 'text', text: ODD }] }], stream: true };
  const handed = withStandInMessages(params);
  expect(handed.messages).toEqual([]);
  expect(params.messages).toHaveLength(1);
  // No kept texts for these messages: conch leaves the body to the SDK, whose JSON.stringify still writes them.
  expect(requestJson({ ...handed })).toBeUndefined();
  expect(JSON.stringify({ ...handed })).toBe(JSON.stringify(params));
});
