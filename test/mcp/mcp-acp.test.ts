// `conch acp`: the MCP servers an editor passes in session/new become the session's tools, and a
// tool's progress notifications reach the editor as tool_call_update.
import { afterEach, describe, expect, test } from 'bun:test';
import { randomUUID } from 'node:crypto';
import { anthropicEnv, BUN, useHarness } from '../support/cli.ts';
import { startAgent, type AgentProcess } from '../support/acp-client.ts';
import { EVERYTHING, processesWith } from './harness.ts';

const harness = useHarness();
let agents: AgentProcess[] = [];
afterEach(async () => {
  await Promise.all(agents.map((a) => a.close()));
  agents = [];
});

describe('MCP servers under conch acp', () => {
  test('session/new mcpServers give the model those tools; progress arrives as tool_call_update', async () => {
    const marker = `mcp-acp-${randomUUID()}`;
    const agent = startAgent({ dirs: harness.dirs, args: ['--model', 'anthropic/test-model'], env: anthropicEnv(harness.server.anthropicBaseUrl) });
    agents.push(agent);
    const init = await agent.conn.agent.request('initialize', { protocolVersion: 1, clientCapabilities: {} });
    expect(init.agentCapabilities?.mcpCapabilities?.http).toBe(true);
    const { sessionId } = await agent.conn.agent.request('session/new', {
      cwd: harness.dirs.workspace,
      mcpServers: [{ name: 'Everything Server', command: BUN, args: [EVERYTHING, 'stdio', marker], env: [{ name: 'GREETING', value: 'from-the-editor' }] }],
    });
    harness.server.script([
      { toolCalls: [
        { name: 'mcp__Everything_Server__get-env', arguments: {} },
        { name: 'mcp__Everything_Server__trigger-long-running-operation', arguments: { duration: 0.6, steps: 3 } },
      ] },
      { text: 'done' },
    ]);
    const answer = await agent.conn.agent.request('session/prompt', { sessionId, prompt: [{ type: 'text', text: 'go' }] });
    expect(answer.stopReason).toBe('end_turn');
    const tools = (harness.server.requests[0]!.body.tools as { name: string }[]).map((t) => t.name);
    expect(tools).toContain('mcp__Everything_Server__echo');
    const results = harness.server.requests[1]!.body.messages.at(-1).content as any[];
    expect(JSON.stringify(results[0].content)).toContain('from-the-editor');
    const progress = agent.updates
      .map((u) => u.update as any)
      .filter((u) => u.sessionUpdate === 'tool_call_update' && JSON.stringify(u.content ?? '').includes('/3)'));
    expect(progress.length).toBeGreaterThan(0);
    await agent.close();
    agents = [];
    expect(await processesWith(marker)).toEqual([]);
  });

  test('two editor servers whose names read the same as tool names are both started, the second renamed, saying so', async () => {
    const marker = `mcp-acp-twin-${randomUUID()}`;
    const agent = startAgent({ dirs: harness.dirs, args: ['--model', 'anthropic/test-model'], env: anthropicEnv(harness.server.anthropicBaseUrl) });
    agents.push(agent);
    await agent.conn.agent.request('initialize', { protocolVersion: 1, clientCapabilities: {} });
    const { sessionId } = await agent.conn.agent.request('session/new', {
      cwd: harness.dirs.workspace,
      mcpServers: [
        { name: 'Docs Server', command: BUN, args: [EVERYTHING, 'stdio', marker], env: [{ name: 'WHICH', value: 'first-server' }] },
        { name: 'Docs.Server', command: BUN, args: [EVERYTHING, 'stdio', marker], env: [{ name: 'WHICH', value: 'second-server' }] },
      ],
    });
    harness.server.script([
      { toolCalls: [{ name: 'mcp__Docs_Server__get-env', arguments: {} }, { name: 'mcp__Docs_Server_2__get-env', arguments: {} }] },
      { text: 'done' },
    ]);
    const answer = await agent.conn.agent.request('session/prompt', { sessionId, prompt: [{ type: 'text', text: 'go' }] });
    expect(answer.stopReason).toBe('end_turn');
    const results = JSON.stringify(harness.server.requests[1]!.body.messages.at(-1).content);
    expect(results).toContain('first-server');
    expect(results).toContain('second-server');
    expect(agent.stderr()).toContain("MCP server 'Docs.Server' is named Docs_Server_2");
  });

  test('a call cancelled mid-way is reported to the model as cancelled, not as the server timing out', async () => {
    const agent = startAgent({ dirs: harness.dirs, args: ['--model', 'anthropic/test-model'], env: anthropicEnv(harness.server.anthropicBaseUrl) });
    agents.push(agent);
    await agent.conn.agent.request('initialize', { protocolVersion: 1, clientCapabilities: {} });
    const { sessionId } = await agent.conn.agent.request('session/new', {
      cwd: harness.dirs.workspace,
      mcpServers: [{ name: 'ev', command: BUN, args: [EVERYTHING, 'stdio'], env: [] }],
    });
    harness.server.script([
      { toolCalls: [{ id: 'call_long', name: 'mcp__ev__trigger-long-running-operation', arguments: { duration: 30, steps: 30 } }] },
      { text: 'next turn' },
    ]);
    const running = agent.conn.agent.request('session/prompt', { sessionId, prompt: [{ type: 'text', text: 'go' }] });
    // Cancel once the server has reported progress: the call is under way on its side.
    while (!agent.updates.some((u) => JSON.stringify(u.update).includes('/30)'))) await Bun.sleep(20);
    await agent.conn.agent.notify('session/cancel', { sessionId });
    expect((await running).stopReason).toBe('cancelled');
    expect((await agent.conn.agent.request('session/prompt', { sessionId, prompt: [{ type: 'text', text: 'again' }] })).stopReason).toBe('end_turn');
    const told = JSON.stringify(harness.server.requests.at(-1)!.body.messages);
    expect(told).toContain('call_long');
    expect(told).not.toContain('toolTimeoutMs');
    expect(told).toContain('cancelled');
  });
});
