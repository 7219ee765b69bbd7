// runTask driven through the real provider SDKs against the local model server, with test tools
// whose behaviour the assertions depend on (order, hangs, policy refusals, huge results).
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { Type } from 'typebox';
import { runTask, STUCK_REPEATS, type RunSpec } from '../../src/agent/loop.ts';
import { DEFAULT_LIMITS, type Limits } from '../../src/core/limits.ts';
import type { RunEvent } from '../../src/agent/events.ts';
import { Catalog, checkToolDefinition } from '../../src/tools/catalog.ts';
import { defineTool, type ToolContext, type ToolDefinition } from '../../src/tools/define.ts';
import { PolicyError } from '../../src/core/errors.ts';
import { createProvider } from '../../src/providers/index.ts';
import type { Message, Provider } from '../../src/providers/types.ts';
import { startModelServer, type ModelServer } from '../support/model-server.ts';

let server: ModelServer;
let provider: Provider;
beforeAll(async () => {
  server = await startModelServer();
  provider = await createProvider({
    type: 'anthropic',
    name: 'anthropic',
    model: 'test-model',
    baseUrl: server.anthropicBaseUrl,
    apiKey: 'k',
    retry: { maxRetries: 0, initialDelayMs: 1, maxDelayMs: 1 },
  });
});
afterAll(() => server.close());

const order: string[] = [];
const echo = defineTool({
  name: 'echo',
  description: 'echo',
  parameters: Type.Object({ text: Type.String() }),
  async execute({ text }) {
    order.push(text);
    await Bun.sleep(5);
    return `echo:${text}`;
  },
});
const hang = defineTool({
  name: 'hang',
  description: 'never finishes and ignores its signal',
  parameters: Type.Object({}),
  timeoutMs: 200,
  execute: () => new Promise<string>(() => {}),
});
const polite = defineTool({
  name: 'polite',
  description: 'waits for its signal',
  parameters: Type.Object({}),
  execute: (_args, ctx: ToolContext) =>
    new Promise<string>((resolve) => ctx.signal.addEventListener('abort', () => resolve('stopped'), { once: true })),
});
const denied = defineTool({
  name: 'denied',
  description: 'always refused by policy',
  parameters: Type.Object({}),
  execute() {
    throw new PolicyError('test.rule', 'not allowed here');
  },
});
const huge = defineTool({
  name: 'huge',
  description: 'returns text that doubles in size when JSON-escaped',
  parameters: Type.Object({}),
  execute: () => '"'.repeat(10_000),
});
const leaky = defineTool({
  name: 'leaky',
  description: 'reports a cleanup failure',
  parameters: Type.Object({}),
  execute: () => ({ content: [{ type: 'text' as const, text: 'x' }], isError: true, details: { cleanupError: 'pgid 4242 still alive' } }),
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

async function run(catalog: Catalog, opts: { limits?: Partial<Limits>; stopOnDeny?: boolean; signal?: AbortSignal; conversation?: Message[] } = {}) {
  const events: RunEvent[] = [];
  const spec: RunSpec = {
    runId: 'r1',
    task: [{ type: 'text', text: 'task' }],
    conversation: opts.conversation ?? [],
    system: 'sys',
    catalog,
    limits: { ...DEFAULT_LIMITS, ...opts.limits },
    makeContext: (callId, signal, runSignal) => ({
      cwd: '/', signal, runSignal, callId, update() {},
      workspace: { root: '/', resolve: async (p) => p, display: (p) => p },
      exec: async () => { throw new Error('no exec in this test'); },
    }),
    stopOnDeny: opts.stopOnDeny ?? false,
    header: { mode: 'restricted', sandbox: 'test' },
  };
  const outcome = await runTask(spec, provider, { emit: (e) => events.push(e) }, opts.signal ?? new AbortController().signal);
  return { outcome, events, conversation: spec.conversation };
}

// A JSON Schema pattern that backtracks on a near-match: each refused call costs a second or more.
const redos = defineTool({
  name: 'redos',
  description: 'a schema pattern that backtracks',
  parameters: { type: 'object', properties: { s: { type: 'string', pattern: '^(a+)+$' } }, required: ['s'] },
  execute: () => 'matched',
});

describe('runTask', () => {
  test('the deadline ends a turn of slowly refused calls between two of them, not after all of them', async () => {
    server.requests.length = 0;
    const calls = Array.from({ length: 40 }, () => ({ name: 'redos', arguments: { s: `${'a'.repeat(40)}!` } }));
    server.script([{ toolCalls: calls }, { text: 'done' }]);
    const { outcome } = await run(catalogOf(redos), { limits: { deadline_ms: 500 } });
    expect(outcome.status).toBe('timed_out');
    expect(outcome.counts.toolCalls).toBeLessThan(40);
  }, 60_000);


  test('tool calls run sequentially in the order given, results return in that order', async () => {
    order.length = 0;
    server.requests.length = 0;
    server.script([
      { toolCalls: [{ name: 'echo', arguments: { text: 'a' } }, { name: 'echo', arguments: { text: 'b' } }, { name: 'echo', arguments: { text: 'c' } }] },
      { text: 'fin' },
    ]);
    const { outcome, events } = await run(catalogOf(echo));
    expect(outcome.status).toBe('completed');
    expect(order).toEqual(['a', 'b', 'c']);
    const results = server.requests[1]!.body.messages.at(-1).content.map((b: any) => JSON.stringify(b.content));
    expect(results[0]).toContain('echo:a');
    expect(results[2]).toContain('echo:c');
    const types = events.map((e) => e.type);
    expect(types[0]).toBe('run.started');
    expect(types.at(-1)).toBe('run.finished');
    expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i));
    expect(outcome.counts).toEqual({ modelCalls: 2, toolCalls: 3, toolErrors: 0 });
  });

  test('usage sums over model calls; a call that reports no usage makes the total unknown, not smaller', async () => {
    server.script([{ toolCalls: [{ name: 'echo', arguments: { text: 'a' } }], usage: { input: 10, output: 5 } }, { text: 'x', usage: { input: 7, output: 2 } }]);
    const known = await run(catalogOf(echo));
    expect(known.outcome.usage.inputTokens).toBe(17);
    expect(known.outcome.usage.outputTokens).toBe(7);
    server.script([{ toolCalls: [{ name: 'echo', arguments: { text: 'a' } }], usage: { input: 10, output: 5 } }, { text: 'x', usage: null }]);
    const partial = await run(catalogOf(echo));
    expect(partial.outcome.usage.inputTokens).toBeNull();
    expect(partial.outcome.usage.outputTokens).toBeNull();
  });

  test('results are bounded after JSON serialization and marked truncated', async () => {
    server.requests.length = 0;
    server.script([{ toolCalls: [{ name: 'huge', arguments: {} }] }, { text: 'ok' }]);
    const { events } = await run(catalogOf(huge), { limits: { tool_result_bytes: 4_000 } });
    const finished = events.find((e) => e.type === 'tool.finished') as Extract<RunEvent, { type: 'tool.finished' }>;
    expect(finished.truncated).toBe(true);
    const sent = server.requests[1]!.body.messages.at(-1).content[0].content;
    expect(new TextEncoder().encode(JSON.stringify(sent)).length).toBeLessThanOrEqual(4_200);
    expect(JSON.stringify(sent)).toContain('truncated');
  });

  test('a tool that ignores cancellation is abandoned at its deadline and the run says so', async () => {
    server.requests.length = 0;
    server.script([{ toolCalls: [{ name: 'hang', arguments: {} }] }, { text: 'moved on' }]);
    const { outcome } = await run(catalogOf(hang));
    expect(outcome.status).toBe('completed');
    expect(JSON.stringify(server.requests[1]!.body.messages.at(-1))).toContain('abandoned');
  });

  test('cancelling during a tool call stops the tool and ends cancelled with a sealed conversation', async () => {
    server.script([{ toolCalls: [{ name: 'polite', arguments: {} }, { name: 'echo', arguments: { text: 'never' } }] }]);
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 100);
    order.length = 0;
    const { outcome, conversation } = await run(catalogOf(polite, echo), { signal: controller.signal });
    expect(outcome.status).toBe('cancelled');
    expect(order).toEqual([]);
    const last = conversation.at(-1)!;
    expect(last.role).toBe('tool');
    if (last.role === 'tool') expect(last.results).toHaveLength(2);
  });

  test('a policy refusal is a tool error by default, and policy_denied naming the rule with stopOnDeny', async () => {
    server.script([{ toolCalls: [{ name: 'denied', arguments: {} }] }, { text: 'adapted' }]);
    const soft = await run(catalogOf(denied));
    expect(soft.outcome.status).toBe('completed');
    expect(soft.outcome.counts.toolErrors).toBe(1);
    server.script([{ toolCalls: [{ name: 'denied', arguments: {} }] }]);
    const hard = await run(catalogOf(denied), { stopOnDeny: true });
    expect(hard.outcome.status).toBe('policy_denied');
    expect(hard.outcome.rule).toBe('test.rule');
  });

  test('unproven cleanup ends the run as failed tool_cleanup', async () => {
    server.script([{ toolCalls: [{ name: 'leaky', arguments: {} }] }]);
    const { outcome } = await run(catalogOf(leaky));
    expect(outcome.status).toBe('failed');
    expect(outcome.code).toBe('tool_cleanup');
  });

  test('a model that keeps making the same call that cannot run is told so, then the run ends failed model_stuck', async () => {
    server.requests.length = 0;
    server.script(Array.from({ length: 20 }, () => ({ toolCalls: [{ name: 'nosuch', arguments: { x: 1 } }] })));
    const { outcome, events } = await run(catalogOf(echo));
    expect(outcome.status).toBe('failed');
    expect(outcome.code).toBe('model_stuck');
    expect(outcome.message).toContain("the model made the same call that cannot run 5 times (unknown tool 'nosuch'");
    expect(outcome.counts.modelCalls).toBe(STUCK_REPEATS);
    expect(events.filter((e) => e.type === 'tool.finished')).toHaveLength(STUCK_REPEATS);
    // From the second on, the result says the call fails every time.
    const second = JSON.stringify(server.requests[2]!.body.messages.at(-1));
    expect(second).toContain('This exact call has now failed 2 times with this error');
    expect(JSON.stringify(server.requests[1]!.body.messages.at(-1))).not.toContain('This exact call');
  });

  test('the same call that cannot run, with calls that ran between, is not a loop', async () => {
    const bad = { toolCalls: [{ name: 'nosuch', arguments: { x: 1 } }] };
    const good = { toolCalls: [{ name: 'echo', arguments: { text: 'ok' } }] };
    server.script([...Array.from({ length: STUCK_REPEATS + 1 }, () => [bad, bad, good]).flat(), { text: 'done' }]);
    const { outcome } = await run(catalogOf(echo));
    expect(outcome.status).toBe('completed');
  });

  test('calls that cannot run but differ (new arguments each time) are not a loop', async () => {
    server.script([...Array.from({ length: STUCK_REPEATS + 2 }, (_, i) => ({ toolCalls: [{ name: 'echo', arguments: { text: i } }] })), { text: 'gave up' }]);
    const { outcome } = await run(catalogOf(echo));
    expect(outcome.status).toBe('completed');
    expect(outcome.counts.toolErrors).toBe(STUCK_REPEATS + 2);
  });

  test('model output over its limit ends limit_exceeded model_output_bytes', async () => {
    server.script([{ text: Array.from({ length: 50 }, () => 'word ') }]);
    const { outcome } = await run(catalogOf(echo), { limits: { model_output_bytes: 40 } });
    expect(outcome.status).toBe('limit_exceeded');
    expect(outcome.limit).toBe('model_output_bytes');
  });

  test('a request context over its limit ends limit_exceeded context_bytes before calling the model', async () => {
    server.requests.length = 0;
    server.script([{ text: 'unused' }]);
    const { outcome } = await run(catalogOf(echo), { limits: { context_bytes: 10 } });
    expect(outcome.limit).toBe('context_bytes');
    expect(server.requests).toHaveLength(0);
    server.script([]);
  });

  test('a history over context_bytes: the oldest tool results are elided with a note the model sees, and the run goes on', async () => {
    server.requests.length = 0;
    server.script([{ text: 'done' }]);
    const earlier: Message[] = [];
    for (let i = 0; i < 3; i++) {
      earlier.push({ role: 'user', content: [{ type: 'text', text: `task ${i}` }] });
      earlier.push({ role: 'assistant', text: '', toolCalls: [{ id: `old${i}`, name: 'echo', arguments: '{"text":"a"}' }] });
      earlier.push({ role: 'tool', results: [{ callId: `old${i}`, name: 'echo', content: [{ type: 'text', text: `result ${i} ${'y'.repeat(4000)}` }], isError: false }] });
      earlier.push({ role: 'assistant', text: `answer ${i}`, toolCalls: [] });
    }
    const { outcome, events } = await run(catalogOf(echo), { conversation: earlier, limits: { context_bytes: 7000 } });
    expect(outcome.status).toBe('completed');
    const sent = JSON.stringify(server.requests[0]!.body.messages);
    expect(sent).not.toContain('result 0 ');
    expect(sent).not.toContain('result 1 ');
    expect(sent).toContain('result 2 ');
    expect(sent).toContain('elided by conch');
    expect(events.find((e) => e.type === 'context.elided')).toMatchObject({ results: 2 });
  });

  test('the journal is told each message as the conversation grows, including sealed calls', async () => {
    server.script([{ toolCalls: [{ id: 'j1', name: 'echo', arguments: { text: 'one' } }, { id: 'j2', name: 'polite', arguments: {} }] }]);
    const seen: string[] = [];
    const controller = new AbortController();
    const catalog = catalogOf(echo, polite);
    const spec: RunSpec = {
      runId: 'r1', task: [{ type: 'text', text: 'task' }], conversation: [], system: 'sys', catalog, limits: DEFAULT_LIMITS,
      makeContext: (callId, signal, runSignal) => ({
        cwd: '/', signal, runSignal, callId, update() {},
        workspace: { root: '/', resolve: async (p) => p, display: (p) => p },
        exec: async () => { throw new Error('no exec'); },
      }),
      stopOnDeny: false, header: { mode: 'restricted', sandbox: 'test' },
      journal: {
        message: (m) => seen.push(m.role),
        result: (r) => {
          seen.push(`result ${r.callId} ${r.isError}`);
          if (r.callId === 'j1') setTimeout(() => controller.abort(new Error('stop')), 20);
        },
      },
    };
    const outcome = await runTask(spec, provider, { emit() {} }, controller.signal);
    expect(outcome.status).toBe('cancelled');
    expect(seen).toEqual(['user', 'assistant', 'result j1 false', 'result j2 true']);
  });

  test('oversized tool arguments end limit_exceeded tool_argument_bytes without running the tool', async () => {
    order.length = 0;
    server.script([{ toolCalls: [{ name: 'echo', arguments: { text: 'x'.repeat(500) } }] }]);
    const { outcome } = await run(catalogOf(echo), { limits: { tool_argument_bytes: 100 } });
    expect(outcome.limit).toBe('tool_argument_bytes');
    expect(order).toEqual([]);
  });

  test('a prior conversation continues: the second run sends the first exchange', async () => {
    const conversation: Message[] = [];
    server.requests.length = 0;
    server.script([{ text: 'first answer' }, { text: 'second answer' }]);
    await run(catalogOf(echo), { conversation });
    await run(catalogOf(echo), { conversation });
    expect(JSON.stringify(server.requests[1]!.body.messages)).toContain('first answer');
  });
});
