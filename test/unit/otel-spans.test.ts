// runSpans on the SDK's in-memory exporter: what becomes a span and an attribute, and what never does.
import { expect, test } from 'bun:test';
import { ROOT_CONTEXT } from '@opentelemetry/api';
import { InMemorySpanExporter, SimpleSpanProcessor, TracerProvider } from '@opentelemetry/sdk-trace';
import type { EventBody, RunEvent } from '../../src/agent/events.ts';
import { runSpans } from '../../src/telemetry/spans.ts';

function setup() {
  const exporter = new InMemorySpanExporter();
  const provider = new TracerProvider({ spanProcessors: [new SimpleSpanProcessor({ exporter })] });
  const spans = runSpans(provider.getTracer('test'), ROOT_CONTEXT);
  let seq = 0;
  const emit = (body: EventBody) => spans.emit({ ...body, runId: 'r1', seq: seq++, time: new Date().toISOString() } as RunEvent);
  emit({ type: 'run.started', provider: 'openai', model: 'm1', mode: 'restricted', sandbox: 'bwrap', tools: ['bash', 'lookup'] });
  const finished = async () => {
    await provider.forceFlush();
    return exporter.getFinishedSpans();
  };
  return { finished, spans, emit };
}

test("a plugin's details give only numbers and flags under the known keys", async () => {
  const { finished, emit } = setup();
  emit({ type: 'tool.started', callId: 'c1', name: 'lookup', args: { q: 'secret query' } });
  emit({
    type: 'tool.finished', callId: 'c1', name: 'lookup', isError: false, truncated: false, durationMs: 3, output: 'héllo',
    details: { exitCode: 'not a number', totalBytes: 12, timedOut: false, path: '/home/me/secret', note: 'words' },
  });
  const [tool] = await finished();
  expect(tool!.name).toBe('execute_tool lookup');
  expect(tool!.attributes).toEqual({
    'gen_ai.operation.name': 'execute_tool',
    'gen_ai.tool.name': 'lookup',
    'gen_ai.tool.call.id': 'c1',
    'gen_ai.tool.type': 'function',
    'conch.tool.is_error': false,
    'conch.truncated': false,
    'conch.tool.result_bytes': 6,
    'conch.tool.output_bytes': 12,
    'conch.tool.timed_out': false,
  });
});

test('retries and fallbacks are span events without their reasons; the answering model is the response model', async () => {
  const { finished, emit } = setup();
  emit({ type: 'model.started', turn: 1 });
  emit({ type: 'model.retry', turn: 1, attempt: 1, delayMs: 20, reason: '529 overloaded: the request said SECRET' });
  emit({ type: 'model.fallback', turn: 1, from: 'openai/m1', to: 'anthropic/m2', reason: 'SECRET' });
  emit({ type: 'model.finished', turn: 1, stopReason: 'end_turn', usage: { inputTokens: 7, outputTokens: null, cacheReadTokens: 2, cacheWriteTokens: null }, model: 'anthropic/m2' });
  const [chat] = await finished();
  expect(chat!.events.map((e) => [e.name, e.attributes])).toEqual([
    ['conch.model.retry', { 'conch.retry.attempt': 1, 'conch.retry.delay_ms': 20 }],
    ['conch.model.fallback', { 'conch.fallback.from': 'openai/m1', 'conch.fallback.to': 'anthropic/m2' }],
  ]);
  // An unknown figure (output tokens here) is left out, never sent as 0.
  expect(chat!.attributes).toMatchObject({ 'gen_ai.provider.name': 'anthropic', 'gen_ai.response.model': 'm2', 'gen_ai.usage.input_tokens': 7, 'gen_ai.usage.cache_read.input_tokens': 2 });
  expect(chat!.attributes['gen_ai.usage.output_tokens']).toBeUndefined();
  expect(JSON.stringify(chat!.events)).not.toContain('SECRET');
});

test('a run that ends without run.finished (a bug) still ends its open spans, marked interrupted', async () => {
  const { finished, spans, emit } = setup();
  emit({ type: 'model.started', turn: 1 });
  spans.end();
  const [chat, root] = await finished();
  expect([chat, root].map((s) => [s!.name, s!.attributes['conch.interrupted']])).toEqual([['chat m1', true], ['invoke_agent conch', true]]);
  expect(chat!.parentSpanContext?.spanId).toBe(root!.spanContext().spanId);
});

test('a cancelled run is not an error', async () => {
  const { finished, emit } = setup();
  emit({
    type: 'run.finished',
    outcome: { status: 'cancelled', output: 'partial', stopReason: null, usage: { inputTokens: null, outputTokens: null, cacheReadTokens: null, cacheWriteTokens: null }, counts: { modelCalls: 1, toolCalls: 0, toolErrors: 0 }, durationMs: 5, message: 'cancelled by the user' },
  });
  const [root] = await finished();
  expect(root!.attributes['conch.outcome']).toBe('cancelled');
  expect(root!.status.code).toBe(0);
  expect(JSON.stringify(root!.attributes)).not.toContain('partial');
});

test('an output-schema repair and the errors left are counts: the issues quote the answer', async () => {
  const { finished, emit } = setup();
  emit({ type: 'output.repair', turn: 1, errors: [{ path: '/name', message: 'must be string, got ANSWERTEXT' }, { path: '', message: 'x' }] });
  emit({
    type: 'run.finished',
    outcome: {
      status: 'failed', code: 'output_invalid', output: 'ANSWERTEXT', stopReason: 'end_turn', durationMs: 5, message: 'the answer did not match: ANSWERTEXT',
      usage: { inputTokens: 1, outputTokens: 1, cacheReadTokens: null, cacheWriteTokens: null }, counts: { modelCalls: 2, toolCalls: 0, toolErrors: 0 },
      outputErrors: [{ path: '/name', message: 'must be string, got ANSWERTEXT' }],
    },
  });
  const [root] = await finished();
  expect(root!.events.map((e) => [e.name, e.attributes])).toEqual([['conch.output.repair', { 'conch.turn': 1, 'conch.output.errors': 2 }]]);
  expect(root!.attributes).toMatchObject({ 'conch.outcome': 'failed', 'conch.failure_code': 'output_invalid', 'conch.output.errors': 1 });
  expect(root!.status.code).toBe(2);
  expect(JSON.stringify([root!.attributes, root!.events, root!.status])).not.toContain('ANSWERTEXT');
});
