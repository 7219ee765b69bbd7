// A long run through both SDKs: each provider converts only the messages added since its last
// request (providers/converted-history.ts), so every request body must still be byte for byte what
// a conversion of the whole conversation from scratch gives, before and after elisions rewrote
// earlier messages; and the context_bytes check, which measures only what was added, must trip at
// exactly the request a whole measurement says is over.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { Type } from 'typebox';
import { runTask, type RunSpec } from '../../src/agent/loop.ts';
import { DEFAULT_LIMITS, type Limits } from '../../src/core/limits.ts';
import type { RunEvent } from '../../src/agent/events.ts';
import { Catalog, checkToolDefinition } from '../../src/tools/catalog.ts';
import { defineTool, type ToolDefinition } from '../../src/tools/define.ts';
import { createProvider } from '../../src/providers/index.ts';
import { toAnthropicMessages } from '../../src/providers/anthropic.ts';
import { addCacheBreakpoints } from '../../src/providers/anthropic-cache.ts';
import { toOpenAIMessages } from '../../src/providers/openai.ts';
import type { Message } from '../../src/providers/types.ts';
import { startModelServer, type ModelServer, type ScriptedTurn } from '../support/model-server.ts';

let server: ModelServer;
beforeAll(async () => {
  server = await startModelServer();
});
afterAll(() => server.close());

type Protocol = 'anthropic' | 'openai';
const TURNS = 90;
const SYSTEM = 'Be brief. Système.';
const PNG = 'iVBORw0KGgo=';

const echo = defineTool({
  name: 'echo',
  description: 'echo',
  parameters: Type.Object({ text: Type.String() }),
  // Large results (worth eliding) for texts that ask for them; small arguments either way.
  execute: async ({ text }) => `echo:${text}${text.startsWith('big') ? ` ${'ü'.repeat(300)} "quoted"\n` : ''}`,
});
const picture = defineTool({
  name: 'picture',
  description: 'returns an image',
  parameters: Type.Object({}),
  execute: async () => ({ content: [{ type: 'text' as const, text: 'a picture' }, { type: 'image' as const, mediaType: 'image/png', data: PNG }] }),
});

function catalogOf(...defs: ToolDefinition<any>[]): Catalog {
  const catalog = new Catalog();
  for (const def of defs) {
    const checked = checkToolDefinition(def, 'test');
    if (!checked.ok) throw new Error(checked.reason);
    catalog.register(checked.tool);
  }
  return catalog;
}

/**
 * Turn i of the script: tool calls of several shapes (two in a turn, an image result, arguments that
 * are not JSON, text and signed thinking beside calls), then an answer. Ids are fixed so that two
 * runs of the script send the same bytes.
 */
function scriptedTurn(i: number, bigResults: boolean): ScriptedTurn {
  if (i >= TURNS) return { text: 'done' };
  const text = bigResults ? `big ${i}` : `t${i}`;
  const call = (n: number, name = 'echo', args: object | string = { text }) => ({ id: `call_${i}_${n}`, name, arguments: args });
  if (i % 7 === 3) return { toolCalls: [call(0), call(1, 'picture', {})] };
  if (i % 11 === 5) return { text: `Looking at ${i}…`, thinking: { text: `thought ${i}`, signature: `sig${i}` }, toolCalls: [call(0)] };
  if (i % 13 === 6) return { toolCalls: [call(0, 'echo', '{"text": ')] };
  return { toolCalls: [call(0)] };
}

function providerConfig(protocol: Protocol) {
  return {
    type: protocol,
    name: protocol,
    model: 'test-model',
    baseUrl: protocol === 'anthropic' ? server.anthropicBaseUrl : server.openaiBaseUrl,
    apiKey: 'k',
    retry: { maxRetries: 0, initialDelayMs: 1, maxDelayMs: 1 },
  };
}

/** The messages of a request converted from scratch: a fresh copy of the conversation, converted whole. */
function fromScratch(protocol: Protocol, conversation: Message[]): unknown[] {
  if (protocol === 'openai') return toOpenAIMessages(SYSTEM, [...conversation]);
  const params = { messages: toAnthropicMessages([...conversation]) } as Parameters<typeof addCacheBreakpoints>[0];
  addCacheBreakpoints(params);
  return params.messages;
}

/** What fitContext measures: the whole request as JSON, in UTF-8 bytes (key order changes no byte count). */
function requestBytes(spec: RunSpec): number {
  const tools = spec.catalog.specs();
  return Buffer.byteLength(JSON.stringify({ system: spec.system, messages: spec.conversation, tools, cacheKey: spec.runId }), 'utf8');
}

interface RunOptions {
  limits?: Partial<Limits>;
  bigResults?: boolean;
  /** A conversation to continue (as ACP sessions and `conch -c` do); a new one otherwise. */
  conversation?: Message[];
  task?: string;
  /** Turn i of this run; scriptedTurn by default. */
  script?: (i: number) => ScriptedTurn;
}

async function longRun(protocol: Protocol, opts: RunOptions) {
  const provider = await createProvider(providerConfig(protocol));
  const events: RunEvent[] = [];
  const spec: RunSpec = {
    runId: `history-${protocol}`,
    task: [{ type: 'text', text: opts.task ?? 'a long task' }],
    conversation: opts.conversation ?? [],
    system: SYSTEM,
    catalog: catalogOf(echo, picture),
    limits: { ...DEFAULT_LIMITS, ...opts.limits },
    makeContext: (callId, signal, runSignal) => ({
      cwd: '/', signal, runSignal, callId, update() {},
      workspace: { root: '/', resolve: async (p) => p, display: (p) => p },
      exec: async () => { throw new Error('no exec in this test'); },
    }),
    stopOnDeny: false,
    header: { mode: 'restricted', sandbox: 'test' },
  };
  server.requests.length = 0;
  /** Per request: whether its body was the from-scratch one, and what fitContext should have measured. */
  const checked: { same: boolean; bytes: number; elidedSoFar: number }[] = [];
  server.script((req) => {
    // The loop is waiting on this response: the conversation is as it was when the body was built.
    const expected = JSON.stringify({ ...JSON.parse(req.raw), messages: fromScratch(protocol, spec.conversation) });
    checked.push({
      same: req.raw === expected,
      bytes: requestBytes(spec),
      elidedSoFar: events.filter((e) => e.type === 'context.elided').length,
    });
    const i = server.requests.length - 1;
    return opts.script ? opts.script(i) : scriptedTurn(i, opts.bigResults ?? false);
  });
  const outcome = await runTask(spec, provider, { emit: (e) => events.push(e) }, new AbortController().signal);
  return { outcome, events, checked, spec };
}

for (const protocol of ['anthropic', 'openai'] as const) {
  describe(`${protocol}: ${TURNS} turns`, () => {
    test('every request body equals a conversion of the whole conversation from scratch, before and after elisions', async () => {
      const { outcome, events, checked } = await longRun(protocol, { limits: { context_bytes: 60_000 }, bigResults: true });
      expect(outcome.status).toBe('completed');
      expect(checked).toHaveLength(TURNS + 1);
      expect(checked.map((c, i) => (c.same ? -1 : i)).filter((i) => i >= 0)).toEqual([]);
      // Elisions began part way and went on turn after turn, each one rewriting an earlier message.
      const elisions = events.filter((e) => e.type === 'context.elided');
      const firstElided = checked.findIndex((c) => c.elidedSoFar > 0);
      expect(firstElided).toBeGreaterThan(20);
      expect(firstElided).toBeLessThan(TURNS - 20);
      expect(elisions.length).toBeGreaterThan(20);
      // Every request fitted once elided.
      for (const c of checked) expect(c.bytes).toBeLessThanOrEqual(60_000);
    }, 60_000);

    test('context_bytes trips at exactly the first request a whole measurement puts over the limit', async () => {
      // Results shorter than the elision note: nothing can be elided, so the request only grows.
      const reference = await longRun(protocol, { bigResults: false });
      expect(reference.outcome.status).toBe('completed');
      expect(reference.checked.every((c) => c.same)).toBe(true);
      const sizes = reference.checked.map((c) => c.bytes);
      for (const at of [40, 71]) {
        const limit = sizes[at]! - 1;
        const { outcome, checked } = await longRun(protocol, { limits: { context_bytes: limit }, bigResults: false });
        expect(outcome.status).toBe('limit_exceeded');
        expect(outcome.limit).toBe('context_bytes');
        // Requests 0 … at-1 were sent; request `at` was measured at its whole size and refused.
        expect(checked).toHaveLength(at);
        expect(checked.map((c) => c.bytes)).toEqual(sizes.slice(0, at));
        expect(outcome.message).toContain(`grew to ${sizes[at]} bytes, over the limit of ${limit}`);
      }
      // At the limit itself the request goes.
      const { checked } = await longRun(protocol, { limits: { context_bytes: sizes[40]! }, bigResults: false });
      expect(checked.length).toBeGreaterThan(40);
    }, 60_000);

    test('a conversation continued after a run stopped between its calls, and after one cut back (an ACP prompt that failed)', async () => {
      // Two calls a turn; the tool-call limit stops the run at the second call of turn 20, and the
      // sealed tool message (a "not run" result added) is what the next run sends first.
      const twoCalls = (run: string, turns: number) => (i: number): ScriptedTurn =>
        i < turns ? { toolCalls: [0, 1].map((n) => ({ id: `${run}_${i}_${n}`, name: 'echo', arguments: { text: `${run} ${i} ${n}` } })) } : { text: `${run} done` };
      const conversation: Message[] = [];
      const first = await longRun(protocol, { conversation, limits: { tool_calls: 41 }, script: twoCalls('a', 30) });
      expect(first.outcome.limit).toBe('tool_calls');
      expect(JSON.stringify(conversation.at(-1))).toContain('not run: the run stopped');
      const second = await longRun(protocol, { conversation, script: twoCalls('b', 10) });
      expect(second.outcome.status).toBe('completed');
      expect(second.checked[0]!.same).toBe(true);
      expect(JSON.stringify(server.requests[0]!.body)).toContain('not run: the run stopped');
      // A prompt whose first request fails is cut back (ACP drops a failed prompt's messages), and the
      // next prompt's first request is as long as the failed one, with another message at its end.
      const beforeFailed = conversation.length;
      const failed = await longRun(protocol, { conversation, task: 'the failed prompt', script: () => ({ error: { status: 400, message: 'refused' } }) });
      expect(failed.outcome.status).toBe('failed');
      conversation.length = beforeFailed;
      const third = await longRun(protocol, { conversation, script: twoCalls('c', 10) });
      expect(third.outcome.status).toBe('completed');
      expect(JSON.stringify(server.requests[0]!.body)).not.toContain('the failed prompt');
      for (const run of [first, second, failed, third]) expect(run.checked.filter((c) => !c.same)).toEqual([]);
    }, 60_000);
  });
}
