// OpenTelemetry from `conch acp`: each prompt of a session is a trace of its own, and the spans
// reach the collector by the time the agent has exited.
import { afterAll, afterEach, beforeAll, beforeEach, expect, test } from 'bun:test';
import { startModelServer, type ModelServer } from '../support/model-server.ts';
import { anthropicEnv, makeDirs, type Sandbox } from '../support/cli.ts';
import { startAgent } from '../support/acp-client.ts';
import { startOtlpReceiver, type OtlpReceiver } from '../support/otlp-receiver.ts';

let server: ModelServer;
let receiver: OtlpReceiver;
let dirs: Sandbox;
beforeAll(async () => {
  server = await startModelServer();
});
afterAll(() => server.close());
beforeEach(async () => {
  dirs = await makeDirs();
  receiver = await startOtlpReceiver();
});
afterEach(async () => {
  await receiver.close();
  await dirs.cleanup();
});

test('each prompt of an ACP session is its own trace, with the session as gen_ai.conversation.id and no prompt text', async () => {
  server.script([{ toolCalls: [{ name: 'bash', arguments: { command: 'echo acp-out-1' } }] }, { text: 'first done' }, { text: 'second done' }]);
  const agent = startAgent({
    dirs,
    args: ['--model', 'anthropic/test-model'],
    env: { ...anthropicEnv(server.anthropicBaseUrl), OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json' },
  });
  try {
    await agent.conn.agent.request('initialize', { protocolVersion: 1, clientCapabilities: {} });
    const { sessionId } = await agent.conn.agent.request('session/new', { cwd: dirs.workspace, mcpServers: [] });
    for (const text of ['first prompt-text-alpha', 'second prompt-text-beta']) {
      const answer = await agent.conn.agent.request('session/prompt', { sessionId, prompt: [{ type: 'text', text }] });
      expect(answer.stopReason).toBe('end_turn');
    }
    await agent.close();
    // It exited on its own (close() kills only an agent that does not).
    expect(agent.child.signalCode).toBeNull();

    const roots = receiver.spans().filter((s) => s.name === 'invoke_agent conch');
    expect(roots).toHaveLength(2);
    expect(new Set(roots.map((r) => r.traceId)).size).toBe(2);
    for (const root of roots) expect(root.attributes).toMatchObject({ 'gen_ai.conversation.id': sessionId, 'conch.outcome': 'completed' });
    expect(roots.map((r) => r.attributes['conch.session.resumed'])).toEqual([false, false]);
    const byTrace = (root: (typeof roots)[number]) => receiver.spans().filter((s) => s.traceId === root.traceId).map((s) => s.name).sort();
    expect(roots.map(byTrace).sort()).toEqual([
      ['chat test-model', 'chat test-model', 'execute_tool bash', 'invoke_agent conch'],
      ['chat test-model', 'invoke_agent conch'],
    ]);
    const everything = receiver.everything();
    for (const text of ['prompt-text', 'acp-out', 'first done', dirs.workspace]) expect(everything).not.toContain(text);
  } finally {
    await agent.close();
  }
});
