// OpenTelemetry export from the real CLI: OTEL_EXPORTER_OTLP_ENDPOINT pointed at an OTLP/HTTP
// receiver on 127.0.0.1 written for the test. A run is one trace (a root span, a chat span per
// model call, an execute_tool span per tool call) whose attributes say how it went and never what
// it was about: the task, arguments, paths and output are left out, whatever --trace-content says.
import { afterEach, beforeEach, describe, expect, test } from 'bun:test';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { anthropicEnv, runConch, useHarness } from '../support/cli.ts';
import { closedPort, startOtlpReceiver, type OtlpReceiver, type ReceivedSpan } from '../support/otlp-receiver.ts';

const harness = useHarness();
let receiver: OtlpReceiver;
beforeEach(async () => {
  receiver = await startOtlpReceiver();
});
afterEach(() => receiver.close());

/** Letters no hex id (trace, span) can contain, so finding it anywhere means content leaked. */
function marker(): string {
  const letters = 'ghijklmnopqrstuvwxyz';
  return Array.from({ length: 12 }, () => letters[Math.floor(Math.random() * letters.length)]).join('');
}

const run = (args: string[], env: Record<string, string> = {}) =>
  runConch({ dirs: harness.dirs, args: ['--model', 'anthropic/test-model', ...args], env: { ...anthropicEnv(harness.server.anthropicBaseUrl), ...env } });

const otlp = (extra: Record<string, string> = {}) => ({ OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json', ...extra });

const named = (spans: ReceivedSpan[], name: string) => spans.filter((s) => s.name === name);

/** A task with a marker in every place content can be: task, arguments, path, file, output, answer. */
async function contentRun(id: string) {
  await mkdir(join(harness.dirs.workspace, `dir-PATH${id}`));
  await writeFile(join(harness.dirs.workspace, `dir-PATH${id}`, 'notes.txt'), `FILE${id}\n`);
  harness.server.script([
    // The output OUT<id> is printed from two words, so it is not in the arguments as one string.
    { text: `Looking TEXT${id}. `, toolCalls: [{ name: 'bash', arguments: { command: `: ARG${id}; printf '%s%s\\n' OUT ${id}` } }] },
    { thinking: { text: `THINK${id}`, signature: 'sig' }, toolCalls: [{ name: 'read', arguments: { path: `dir-PATH${id}/notes.txt` } }] },
    { text: `ANSWER${id}` },
  ]);
}

describe('OpenTelemetry export', () => {
  test('a run is one trace: a root span, a chat span per model call, an execute_tool span per tool call, with usage and outcome', async () => {
    const id = marker();
    await contentRun(id);
    const r = await run(['--json', `TASK${id} look around`], otlp({ OTEL_SERVICE_NAME: 'svc-under-test', OTEL_EXPORTER_OTLP_HEADERS: 'x-conch-test=yes' }));
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    const envelope = JSON.parse(r.stdout);
    expect(envelope.status).toBe('completed');

    // The exporter read the standard variables itself: endpoint (+ /v1/traces), headers, service name.
    expect(receiver.received.length).toBeGreaterThan(0);
    for (const request of receiver.received) {
      expect(request.path).toBe('/v1/traces');
      expect(request.contentType).toContain('application/json');
      expect(request.headers['x-conch-test']).toBe('yes');
    }
    const spans = receiver.spans();
    expect(spans.map((s) => s.name).sort()).toEqual(['chat test-model', 'chat test-model', 'chat test-model', 'execute_tool bash', 'execute_tool read', 'invoke_agent conch']);
    expect(new Set(spans.map((s) => s.traceId)).size).toBe(1);
    expect(spans[0]!.resource['service.name']).toBe('svc-under-test');

    const [root] = named(spans, 'invoke_agent conch');
    expect(root!.parentSpanId).toBe('');
    expect(root!.attributes).toMatchObject({
      'gen_ai.operation.name': 'invoke_agent',
      'gen_ai.agent.name': 'conch',
      'gen_ai.provider.name': 'anthropic',
      'gen_ai.request.model': 'test-model',
      'gen_ai.conversation.id': envelope.sessionId,
      'gen_ai.usage.input_tokens': 30,
      'gen_ai.usage.output_tokens': 15,
      'conch.run.id': envelope.runId,
      'conch.outcome': 'completed',
      'conch.model_calls': 3,
      'conch.tool_calls': 2,
      'conch.tool_errors': 0,
      'conch.stop_reason': 'end_turn',
    });
    expect([...(root!.attributes['conch.tools'] as string[])].sort()).toEqual(['bash', 'edit', 'read', 'write']);
    expect(root!.status.code).toBe(0);

    const chats = named(spans, 'chat test-model');
    expect(chats.map((s) => s.attributes['conch.turn'])).toEqual([1, 2, 3]);
    for (const chat of chats) {
      expect(chat.parentSpanId).toBe(root!.spanId);
      expect(chat.kind).toBe(3); // CLIENT: a call to the model's server
      expect(chat.attributes).toMatchObject({ 'gen_ai.operation.name': 'chat', 'gen_ai.request.model': 'test-model', 'gen_ai.response.model': 'test-model', 'gen_ai.usage.input_tokens': 10, 'gen_ai.usage.output_tokens': 5 });
    }
    expect(chats.map((s) => s.attributes['gen_ai.response.finish_reasons'])).toEqual([['tool_use'], ['tool_use'], ['end_turn']]);

    const [bash] = named(spans, 'execute_tool bash');
    expect(bash!.parentSpanId).toBe(root!.spanId);
    expect(bash!.attributes).toMatchObject({ 'gen_ai.operation.name': 'execute_tool', 'gen_ai.tool.name': 'bash', 'conch.tool.is_error': false, 'conch.truncated': false, 'conch.tool.exit_code': 0 });
    expect(named(spans, 'execute_tool read')[0]!.attributes).toMatchObject({ 'gen_ai.tool.name': 'read', 'conch.tool.is_error': false });
  });

  test('nothing the task, the model or a tool wrote is exported, even with --trace-content', async () => {
    const id = marker();
    await contentRun(id);
    const traceFile = join(harness.dirs.home, 'trace.jsonl');
    const r = await run(['--trace', traceFile, '--trace-content', `TASK${id} look around`], otlp());
    expect(r.code).toBe(0);
    expect(r.stdout).toBe(`ANSWER${id}\n`);
    // The content was in the run's events (the file trace has it), so leaving it out is a choice.
    const events = await readFile(traceFile, 'utf8');
    for (const m of [`ARG${id}`, `OUT${id}`, `PATH${id}`, `FILE${id}`, `TEXT${id}`, `THINK${id}`, `ANSWER${id}`]) expect(events).toContain(m);

    expect(receiver.spans().length).toBe(6);
    const everything = receiver.everything();
    expect(everything).toContain('execute_tool read');
    // Not the marker, nor any piece of it; no path of this machine either.
    expect(everything).not.toContain(id);
    expect(everything).not.toContain(harness.dirs.workspace);
    expect(everything).not.toContain(harness.dirs.home);
  });

  test('the default protocol is http/protobuf (the spec default); its raw bytes hold no content either', async () => {
    const id = marker();
    await contentRun(id);
    const r = await run([`TASK${id} look around`], { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url });
    expect(r.code).toBe(0);
    expect(receiver.received.length).toBeGreaterThan(0);
    for (const request of receiver.received) expect(request.contentType).toBe('application/x-protobuf');
    // Protobuf keeps strings as they are: names and attribute keys are there to find, the marker is not.
    const everything = receiver.everything();
    for (const name of ['invoke_agent conch', 'execute_tool bash', 'chat test-model', 'gen_ai.usage.input_tokens', 'conch.outcome']) expect(everything).toContain(name);
    expect(everything).not.toContain(id);
    expect(everything).not.toContain(harness.dirs.workspace);
  });

  test('truncation and a policy denial are attributes of the tool span; the outcome stays completed', async () => {
    harness.server.script([
      { toolCalls: [{ name: 'bash', arguments: { command: "head -c 5000 /dev/zero | tr '\\0' x" } }] },
      { toolCalls: [{ name: 'write', arguments: { path: '../outside.txt', content: 'no' } }] },
      { text: 'ok' },
    ]);
    const r = await run(['--limit', 'tool_result_bytes=1024', 'go'], otlp());
    expect(r.code).toBe(0);
    const spans = receiver.spans();
    expect(named(spans, 'execute_tool bash')[0]!.attributes).toMatchObject({ 'conch.truncated': true, 'conch.tool.output_bytes': 5000, 'conch.tool.exit_code': 0 });
    const write = named(spans, 'execute_tool write')[0]!;
    expect(write.attributes).toMatchObject({ 'conch.policy.decision': 'deny', 'conch.policy.rule': 'workspace.outside', 'conch.tool.is_error': true, 'error.type': 'policy_denied' });
    expect(write.status.code).toBe(2);
    expect(named(spans, 'invoke_agent conch')[0]!.attributes).toMatchObject({ 'conch.outcome': 'completed', 'conch.tool_errors': 1 });
    expect(receiver.everything()).not.toContain('outside.txt');
  });

  test('a failed run: the root span has error status and the failure code, the interrupted model call too', async () => {
    harness.server.script([{ error: { status: 401, message: 'bad key SECRETISH' } }]);
    const r = await run(['--json', 'go'], otlp());
    expect(r.code).toBe(1);
    expect(JSON.parse(r.stdout)).toMatchObject({ status: 'failed', code: 'provider_auth' });
    const spans = receiver.spans();
    const [root] = named(spans, 'invoke_agent conch');
    expect(root!.attributes).toMatchObject({ 'conch.outcome': 'failed', 'conch.failure_code': 'provider_auth', 'error.type': 'provider_auth' });
    expect(root!.status).toMatchObject({ code: 2, message: 'provider_auth' });
    const [chat] = named(spans, 'chat test-model');
    expect(chat!.attributes).toMatchObject({ 'conch.interrupted': true, 'error.type': 'provider_auth' });
    expect(chat!.status.code).toBe(2);
    // The server's error text is the outcome's message, not the span's.
    expect(receiver.everything()).not.toContain('SECRETISH');
  });

  test('a limit ends the run as limit_exceeded: error status, the limit named', async () => {
    harness.server.script([{ toolCalls: [{ name: 'bash', arguments: { command: 'true' } }] }]);
    const r = await run(['--max-turns', '1', 'go'], otlp());
    expect(r.code).toBe(4);
    const [root] = named(receiver.spans(), 'invoke_agent conch');
    expect(root!.attributes).toMatchObject({ 'conch.outcome': 'limit_exceeded', 'conch.limit': 'model_calls', 'error.type': 'limit_exceeded' });
    expect(root!.status.code).toBe(2);
  });

  test('several tasks at once (conch run A B): each task is a trace of its own', async () => {
    harness.server.script(() => ({ text: 'done' }));
    const r = await run(['run', '--json', 'first task-text-one', 'second task-text-two'], otlp());
    expect(r.code).toBe(0);
    const roots = named(receiver.spans(), 'invoke_agent conch');
    expect(roots).toHaveLength(2);
    expect(new Set(roots.map((s) => s.traceId)).size).toBe(2);
    expect(new Set(roots.map((s) => s.attributes['conch.run.id'])).size).toBe(2);
    for (const root of roots) {
      expect(root.attributes['conch.outcome']).toBe('completed');
      expect(receiver.spans().filter((s) => s.traceId === root.traceId).map((s) => s.name).sort()).toEqual(['chat test-model', 'invoke_agent conch']);
    }
    expect(receiver.everything()).not.toContain('task-text');
  });

  test('a collector that is not there does not fail the run: exit 0, the envelope, one warning, the process ends', async () => {
    harness.server.script([{ text: 'fine' }]);
    const port = await closedPort();
    const r = await run(['--json', 'go'], { OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${port}` });
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({ status: 'completed', output: 'fine' });
    expect(r.stderr).toStartWith('conch: OpenTelemetry: ');
    // Where it tried, so that the user can tell a wrong address from a collector that is down.
    expect(r.stderr).toContain(`http://127.0.0.1:${port}/v1/traces (OTEL_EXPORTER_OTLP_ENDPOINT)`);
    expect(r.stderr.trim().split('\n')).toHaveLength(1);
  });

  test('without the variables, or with OTEL_SDK_DISABLED=true, nothing is exported and nothing is said', async () => {
    harness.server.script([{ text: 'one' }, { text: 'two' }, { text: 'three' }]);
    const plain = await run(['--json', 'go']);
    const disabled = await run(['--json', 'go'], { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, OTEL_SDK_DISABLED: 'true' });
    const none = await run(['--json', '--otel', 'go'], { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, OTEL_TRACES_EXPORTER: 'none' });
    for (const r of [plain, disabled, none]) expect({ code: r.code, stderr: r.stderr }).toEqual({ code: 0, stderr: '' });
    expect(receiver.received).toEqual([]);
  });

  test('--otel turns tracing on without an endpoint variable (an unsupported protocol then says so; the run goes on)', async () => {
    harness.server.script([{ text: 'fine' }]);
    const r = await run(['--otel', 'go'], { OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' });
    expect(r.code).toBe(0);
    expect(r.stdout).toBe('fine\n');
    expect(r.stderr).toContain('conch: OpenTelemetry: no trace is exported: OTEL_EXPORTER_OTLP_PROTOCOL=grpc');
    expect(r.stderr).toContain('http/protobuf or http/json');
  });
});
