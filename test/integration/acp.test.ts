// `conch acp` end to end: the official ACP SDK's client side spawns the real binary and drives it
// over stdio, against the local model server speaking the Anthropic protocol.
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, test } from 'bun:test';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { RequestError } from '@agentclientprotocol/sdk';
import pkg from '../../package.json' with { type: 'json' };
import { startModelServer, type ModelServer } from '../support/model-server.ts';
import { anthropicEnv, CONCH, conchEnv, makeDirs, writeConfig, type Sandbox } from '../support/cli.ts';
import { hasTmux, openTerminal } from '../support/tty.ts';
import { optionOfKind, startAgent, startRaw, updatesOf, type AgentProcess, type StartOptions } from '../support/acp-client.ts';

let server: ModelServer;
let dirs: Sandbox;
let agents: AgentProcess[] = [];
beforeAll(async () => {
  server = await startModelServer();
});
afterAll(() => server.close());
beforeEach(async () => {
  dirs = await makeDirs();
  server.requests.length = 0;
  await writeConfig(dirs, { retry: { maxRetries: 0, initialDelayMs: 1, maxDelayMs: 5 } });
});
afterEach(async () => {
  await Promise.all(agents.map((a) => a.close()));
  agents = [];
  await dirs.cleanup();
});

function launch(args: string[] = [], extra: Partial<StartOptions> = {}): AgentProcess {
  const agent = startAgent({ dirs, args: ['--model', 'anthropic/test-model', ...args], env: anthropicEnv(server.anthropicBaseUrl), ...extra });
  agents.push(agent);
  return agent;
}

async function ready(agent: AgentProcess, cwd = dirs.workspace): Promise<string> {
  await agent.conn.agent.request('initialize', { protocolVersion: 1, clientCapabilities: {} });
  const { sessionId } = await agent.conn.agent.request('session/new', { cwd, mcpServers: [] });
  return sessionId;
}

const prompt = (agent: AgentProcess, sessionId: string, text: string) =>
  agent.conn.agent.request('session/prompt', { sessionId, prompt: [{ type: 'text', text }] });

const textOf = (updates: ReturnType<typeof updatesOf>) =>
  updates.flatMap((u) => (u.sessionUpdate === 'agent_message_chunk' && u.content.type === 'text' ? [u.content.text] : [])).join('');

const toolUpdates = (updates: ReturnType<typeof updatesOf>) =>
  updates.filter((u) => u.sessionUpdate === 'tool_call' || u.sessionUpdate === 'tool_call_update') as any[];

describe('conch acp', () => {
  test('initialize answers protocol 1, conch and its version, honest capabilities', async () => {
    const agent = launch();
    const init = await agent.conn.agent.request('initialize', { protocolVersion: 1, clientCapabilities: {} });
    expect(init.protocolVersion).toBe(1);
    expect(init.agentInfo).toMatchObject({ name: 'conch', version: pkg.version });
    expect(init.agentCapabilities?.loadSession).toBe(true);
    expect(init.agentCapabilities?.sessionCapabilities?.list).toEqual({});
    expect(init.agentCapabilities?.promptCapabilities?.image).toBe(true);
    expect(init.agentCapabilities?.promptCapabilities?.audio).toBe(false);
  });

  test('a bash tool call streams tool_call → in_progress → completed, then text, then end_turn', async () => {
    server.script([
      { text: 'Checking. ', toolCalls: [{ id: 'call_1', name: 'bash', arguments: { command: 'echo hi-from-bash' } }] },
      { text: ['All ', 'done.'] },
    ]);
    const agent = launch();
    const sessionId = await ready(agent);
    const response = await prompt(agent, sessionId, 'say hi');
    expect(response.stopReason).toBe('end_turn');
    // Everything of the turn arrived before the response.
    const updates = updatesOf(agent, sessionId);
    const tools = toolUpdates(updates);
    expect(tools.map((u) => [u.sessionUpdate, u.status])).toEqual([
      ['tool_call', 'pending'],
      ['tool_call_update', 'in_progress'],
      ['tool_call_update', 'completed'],
    ]);
    expect(tools[0]).toMatchObject({ toolCallId: 'call_1', kind: 'execute', title: 'echo hi-from-bash', rawInput: { command: 'echo hi-from-bash' } });
    expect(tools.every((u) => u.toolCallId === 'call_1')).toBe(true);
    expect(JSON.stringify(tools[2].content)).toContain('hi-from-bash');
    expect(textOf(updates)).toBe('Checking. All done.');
    // The text of the first model call precedes the tool call; the final answer follows its result.
    const order = updates.map((u) => u.sessionUpdate);
    expect(order.indexOf('tool_call')).toBeGreaterThan(order.indexOf('agent_message_chunk'));
    expect(order.lastIndexOf('agent_message_chunk')).toBeGreaterThan(order.lastIndexOf('tool_call_update'));
    expect(JSON.stringify(server.requests[1]!.body.messages)).toContain('hi-from-bash');
  });

  test('a bash command that exits non-zero is reported failed, its exit code in rawOutput', async () => {
    server.script([{ toolCalls: [{ id: 'call_bad', name: 'bash', arguments: { command: 'echo oops; exit 3' } }] }, { text: 'noted' }]);
    const agent = launch();
    const sessionId = await ready(agent);
    await prompt(agent, sessionId, 'fail');
    const last = toolUpdates(updatesOf(agent, sessionId)).at(-1);
    expect(last).toMatchObject({ toolCallId: 'call_bad', status: 'failed', rawOutput: { exitCode: 3 } });
    expect(JSON.stringify(last.content)).toContain('oops');
  });

  test('a long command shows its output live, before the call completes', async () => {
    server.script([
      { toolCalls: [{ id: 'call_live', name: 'bash', arguments: { command: 'echo step-one; sleep 0.8; echo step-two' } }] },
      { text: 'ok' },
    ]);
    const agent = launch();
    const sessionId = await ready(agent);
    expect((await prompt(agent, sessionId, 'build')).stopReason).toBe('end_turn');
    const tools = toolUpdates(updatesOf(agent, sessionId));
    const completed = tools.findIndex((u) => u.status === 'completed');
    const live = tools.findIndex((u) => !u.status && JSON.stringify(u.content ?? '').includes('step-one'));
    expect(live).toBeGreaterThan(0);
    expect(live).toBeLessThan(completed);
  });

  test('an edit carries a diff block (absolute path, old and new text) and its location', async () => {
    await writeFile(join(dirs.workspace, 'greet.txt'), 'one\ntwo\nthree\n');
    server.script([
      { toolCalls: [{ id: 'call_e', name: 'edit', arguments: { path: 'greet.txt', edits: [{ old_text: 'two', new_text: 'TWO' }] } }] },
      { text: 'Edited.' },
    ]);
    const agent = launch();
    const sessionId = await ready(agent);
    expect((await prompt(agent, sessionId, 'shout two')).stopReason).toBe('end_turn');
    const tools = toolUpdates(updatesOf(agent, sessionId));
    const path = join(dirs.workspace, 'greet.txt');
    expect(tools[0]).toMatchObject({ kind: 'edit', title: 'Edit greet.txt', status: 'pending', locations: [{ path }] });
    const done = tools.at(-1);
    expect(done.status).toBe('completed');
    expect(done.content).toContainEqual({ type: 'diff', path, oldText: 'one\ntwo\nthree\n', newText: 'one\nTWO\nthree\n' });
    expect(done.locations).toEqual([{ path, line: 2 }]);
    expect(readFileSync(path, 'utf8')).toBe('one\nTWO\nthree\n');
  });

  test('session/load through the official client replays the history and accepts a new prompt', async () => {
    server.script([
      { text: 'Running it.', toolCalls: [{ id: 'call_ls', name: 'bash', arguments: { command: 'echo listed' } }] },
      { text: 'The word is pelican.' },
      { text: 'You asked for a bird.' },
    ]);
    const first = launch();
    const sessionId = await ready(first);
    await prompt(first, sessionId, 'pick a bird word');
    await first.close();

    const second = launch();
    await second.conn.agent.request('initialize', { protocolVersion: 1, clientCapabilities: {} });
    const list = await second.conn.agent.request('session/list', { cwd: dirs.workspace });
    expect(list.sessions).toEqual([expect.objectContaining({ sessionId, cwd: dirs.workspace, title: 'pick a bird word' })]);
    await second.conn.agent.request('session/load', { sessionId, cwd: dirs.workspace, mcpServers: [] });
    const replayed = updatesOf(second, sessionId);
    expect(replayed[0]).toEqual({ sessionUpdate: 'user_message_chunk', content: { type: 'text', text: 'pick a bird word' } });
    expect(textOf(replayed)).toBe('Running it.The word is pelican.');
    expect(toolUpdates(replayed).map((u) => [u.toolCallId, u.status])).toEqual([['call_ls', 'pending'], ['call_ls', 'completed']]);
    expect((await prompt(second, sessionId, 'what did I ask?')).stopReason).toBe('end_turn');
    expect(JSON.stringify(server.requests[2]!.body.messages)).toContain('pick a bird word');
    expect(JSON.stringify(server.requests[2]!.body.messages)).toContain('The word is pelican.');
  });

  test('session/load opens a session started in the shell; an unknown id or another cwd is an error', async () => {
    server.script([{ text: 'shell answer' }, { text: 'editor answer' }]);
    const { runConch, anthropicEnv: env } = await import('../support/cli.ts');
    const cli = await runConch({ dirs, args: ['--model', 'anthropic/test-model', '--json', 'started in the shell'], env: env(server.anthropicBaseUrl) });
    const { sessionId } = JSON.parse(cli.stdout);
    const agent = launch();
    await agent.conn.agent.request('initialize', { protocolVersion: 1, clientCapabilities: {} });
    const wrongCwd: any = await agent.conn.agent.request('session/load', { sessionId, cwd: dirs.home, mcpServers: [] }).catch((e: any) => e);
    expect(wrongCwd).toBeInstanceOf(RequestError);
    expect(wrongCwd.message + JSON.stringify(wrongCwd.data)).toContain(`belongs to ${dirs.workspace}`);
    const unknown = await agent.conn.agent.request('session/load', { sessionId: 'ffffffffffffffff', cwd: dirs.workspace, mcpServers: [] }).catch((e) => e);
    expect(unknown).toBeInstanceOf(RequestError);
    // Resource not found, as for a prompt to a session that is not open; the id comes back in data.
    expect([unknown.code, unknown.data?.sessionId]).toEqual([-32002, 'ffffffffffffffff']);
    expect(unknown.message).toContain("no session 'ffffffffffffffff'");
    await agent.conn.agent.request('session/load', { sessionId, cwd: dirs.workspace, mcpServers: [] });
    expect(textOf(updatesOf(agent, sessionId))).toBe('shell answer');
    await prompt(agent, sessionId, 'and in the editor');
    expect(JSON.stringify(server.requests[1]!.body.messages)).toContain('started in the shell');
  });

  test('conch acp --ephemeral stores nothing, and a session it loads is continued in memory only', async () => {
    server.script([{ text: 'stored answer' }, { text: 'fleeting answer' }, { text: 'unstored' }]);
    const first = launch();
    const sessionId = await ready(first);
    await prompt(first, sessionId, 'kept');
    await first.close();
    const store = join(dirs.home, '.local', 'state', 'conch', 'sessions');
    const file = join(store, `${sessionId}.jsonl`);
    const before = readFileSync(file, 'utf8');
    const ephemeral = launch(['--ephemeral']);
    await ephemeral.conn.agent.request('initialize', { protocolVersion: 1, clientCapabilities: {} });
    await ephemeral.conn.agent.request('session/load', { sessionId, cwd: dirs.workspace, mcpServers: [] });
    await prompt(ephemeral, sessionId, 'not kept');
    expect(JSON.stringify(server.requests[1]!.body.messages)).toContain('stored answer');
    const { sessionId: other } = await ephemeral.conn.agent.request('session/new', { cwd: dirs.workspace, mcpServers: [] });
    await prompt(ephemeral, other, 'nor this');
    expect(readFileSync(file, 'utf8')).toBe(before);
    expect(readdirSync(store)).toEqual([`${sessionId}.jsonl`]);
  });

  test('a second prompt in the same session continues the conversation', async () => {
    server.script([{ text: 'The word is pelican.' }, { text: 'You asked about a bird.' }]);
    const agent = launch();
    const sessionId = await ready(agent);
    expect((await prompt(agent, sessionId, 'pick a bird word')).stopReason).toBe('end_turn');
    expect((await prompt(agent, sessionId, 'what did I ask?')).stopReason).toBe('end_turn');
    const second = JSON.stringify(server.requests[1]!.body.messages);
    expect(second).toContain('pick a bird word');
    expect(second).toContain('The word is pelican.');
    expect(second).toContain('what did I ask?');
    expect(server.requests[1]!.body.messages).toHaveLength(3);
  });

  test('two sessions in one process: each has its own workspace and conversation', async () => {
    const other = join(dirs.home, 'other-project');
    await mkdir(other);
    await writeFile(join(dirs.workspace, 'which.txt'), 'first workspace\n');
    await writeFile(join(other, 'which.txt'), 'second workspace\n');
    // Answers by what the request holds, so the order the sessions ask in does not matter.
    server.script((req) => {
      const last = req.body.messages.at(-1);
      const isResult = Array.isArray(last.content) && last.content.some((b: any) => b.type === 'tool_result');
      return isResult ? { text: 'ok' } : { toolCalls: [{ name: 'bash', arguments: { command: 'cat which.txt; pwd' } }] };
    });
    const agent = launch();
    const a = await ready(agent, dirs.workspace);
    const { sessionId: b } = await agent.conn.agent.request('session/new', { cwd: other, mcpServers: [] });
    expect(a).not.toBe(b);
    const [ra, rb] = await Promise.all([prompt(agent, a, 'task for A'), prompt(agent, b, 'task for B')]);
    expect([ra.stopReason, rb.stopReason]).toEqual(['end_turn', 'end_turn']);
    const outputOf = (id: string) => JSON.stringify(toolUpdates(updatesOf(agent, id)).at(-1).content);
    expect(outputOf(a)).toContain('first workspace');
    expect(outputOf(a)).toContain(dirs.workspace);
    expect(outputOf(b)).toContain('second workspace');
    expect(outputOf(b)).toContain(other);
    for (const req of server.requests) {
      const text = JSON.stringify(req.body.messages);
      expect(text.includes('task for A') && text.includes('task for B')).toBe(false);
    }
  });

  test('flags given to conch acp apply to every session (a --policy path is relative to where it started)', async () => {
    await writeFile(join(dirs.home, 'policy.json'), JSON.stringify({ version: 1, tools: { deny: [{ id: 't.no-bash', name: 'bash' }] } }));
    const other = join(dirs.home, 'other-project');
    await mkdir(other);
    server.script([{ text: 'one' }, { text: 'two' }]);
    const agent = launch(['--policy', 'policy.json']); // the child runs in dirs.home
    const a = await ready(agent, dirs.workspace);
    const { sessionId: b } = await agent.conn.agent.request('session/new', { cwd: other, mcpServers: [] });
    await prompt(agent, a, 'first');
    await prompt(agent, b, 'second');
    const toolNames = server.requests.map((r) => r.body.tools.map((t: any) => t.name).sort());
    expect(toolNames).toEqual([['edit', 'read', 'write'], ['edit', 'read', 'write']]);
  });

  test('session/cancel mid-bash kills the command and the prompt resolves cancelled', async () => {
    server.script([
      { toolCalls: [{ id: 'call_sleep', name: 'bash', arguments: { command: 'echo $$ > sleeper.pid; exec sleep 30' } }] },
      { text: 'after cancel' },
    ]);
    const agent = launch(['--unrestricted']); // a host pid is the point here, not the sandbox
    const sessionId = await ready(agent);
    const running = prompt(agent, sessionId, 'sleep');
    const pidFile = join(dirs.workspace, 'sleeper.pid');
    while (!existsSync(pidFile) || readFileSync(pidFile, 'utf8').trim() === '') await Bun.sleep(20);
    const pid = Number(readFileSync(pidFile, 'utf8').trim());
    expect(alive(pid)).toBe(true);
    await agent.conn.agent.notify('session/cancel', { sessionId });
    expect((await running).stopReason).toBe('cancelled');
    expect(alive(pid)).toBe(false);
    const last = toolUpdates(updatesOf(agent, sessionId)).at(-1);
    expect(last).toMatchObject({ toolCallId: 'call_sleep', status: 'failed' });
    expect(server.requests).toHaveLength(1);
    // The session stays usable: the cancelled call is answered in the history, the next prompt runs.
    expect((await prompt(agent, sessionId, 'still there?')).stopReason).toBe('end_turn');
    expect(JSON.stringify(server.requests[1]!.body.messages)).toContain('call_sleep');
  });

  // The editor quitting or crashing mid-prompt: both pipes close at once. conch must stop the run
  // (its commands too) and exit cleanly, whether the command was writing output or silent.
  for (const [what, command] of [
    ['writing output', 'echo $$ > sleeper.pid; while true; do echo tick; sleep 0.1; done'],
    ['silent', 'echo $$ > sleeper.pid; exec sleep 30'],
  ] as const) {
    test(`the editor going away mid-command (${what}) stops the command and ends conch cleanly`, async () => {
      server.script([{ toolCalls: [{ id: 'call_gone', name: 'bash', arguments: { command } }] }, { text: 'unused' }]);
      const agent = launch(['--unrestricted']); // a host pid is the point here, not the sandbox
      const sessionId = await ready(agent);
      void prompt(agent, sessionId, 'run it').catch(() => {});
      const pidFile = join(dirs.workspace, 'sleeper.pid');
      while (!existsSync(pidFile) || readFileSync(pidFile, 'utf8').trim() === '') await Bun.sleep(20);
      const pid = Number(readFileSync(pidFile, 'utf8').trim());
      const exited = new Promise<number | null>((resolve) => agent.child.once('exit', (code) => resolve(code)));
      agent.child.stdin.destroy();
      agent.child.stdout.destroy();
      expect(await exited).toBe(0);
      expect(alive(pid)).toBe(false);
      expect(agent.stderr()).toContain('stopping every session');
      expect(agent.stderr()).not.toMatch(/^\s+at /m);
    });
  }

  test('an "ask" command rule becomes session/request_permission; rejecting fails the call and tells the model', async () => {
    // The rule's id comes from a config file (a cloned repository's): the editor is shown it spelled out.
    await writeConfig(dirs, { retry: { maxRetries: 0 }, shell: { commands: { ask: [{ id: 'ask-touch\u001b]0;owned\u0007', executable: 'touch' }] } } });
    server.script([
      { toolCalls: [{ id: 'call_touch', name: 'bash', arguments: { command: 'touch made.txt' } }] },
      { text: 'Understood, not touching.' },
    ]);
    const agent = launch();
    const sessionId = await ready(agent);
    expect((await prompt(agent, sessionId, 'make a file')).stopReason).toBe('end_turn');
    expect(agent.permissions).toHaveLength(1);
    const asked = agent.permissions[0]!;
    expect(asked.sessionId).toBe(sessionId);
    expect(asked.toolCall.toolCallId).toBe('call_touch');
    expect(asked.toolCall.title).toContain('command rule "ask-touch\\u{1b}]0;owned\\u{7}" asks first');
    expect(asked.toolCall.title).not.toContain('\u001b');
    expect(asked.options.map((o) => o.kind).sort()).toEqual(['allow_always', 'allow_once', 'reject_once']);
    expect(existsSync(join(dirs.workspace, 'made.txt'))).toBe(false);
    const last = toolUpdates(updatesOf(agent, sessionId)).at(-1);
    expect(last).toMatchObject({ toolCallId: 'call_touch', status: 'failed' });
    const toModel = JSON.stringify(server.requests[1]!.body.messages);
    expect(toModel).toContain('ask-touch');
    expect(toModel).toContain('declined');
  });

  test('cancelling while the editor is still asking withdraws the question and resolves cancelled', async () => {
    await writeConfig(dirs, { retry: { maxRetries: 0 }, shell: { commands: { ask: [{ id: 'ask-touch', executable: 'touch' }] } } });
    server.script([{ toolCalls: [{ id: 'call_q', name: 'bash', arguments: { command: 'touch never.txt' } }] }, { text: 'unused' }]);
    let sessionId = '';
    // An editor whose user never answers; the cancel arrives while the question is open.
    const agent: AgentProcess = launch([], {
      onPermission: () => {
        void agent.conn.agent.notify('session/cancel', { sessionId });
        return new Promise(() => {});
      },
    });
    sessionId = await ready(agent);
    expect((await prompt(agent, sessionId, 'touch it')).stopReason).toBe('cancelled');
    expect(agent.permissions).toHaveLength(1);
    expect(existsSync(join(dirs.workspace, 'never.txt'))).toBe(false);
    expect(toolUpdates(updatesOf(agent, sessionId)).at(-1)).toMatchObject({ toolCallId: 'call_q', status: 'failed' });
    expect(server.requests).toHaveLength(1);
  });

  test('"allow always" runs the command and is not asked again in that session', async () => {
    await writeConfig(dirs, { retry: { maxRetries: 0 }, shell: { commands: { ask: [{ id: 'ask-touch', executable: 'touch' }] } } });
    server.script([
      { toolCalls: [{ name: 'bash', arguments: { command: 'touch a.txt' } }] },
      { toolCalls: [{ name: 'bash', arguments: { command: 'touch b.txt' } }] },
      { text: 'Both made.' },
    ]);
    const agent = launch([], { onPermission: (r) => ({ outcome: { outcome: 'selected', optionId: optionOfKind(r, 'allow_always') } }) });
    const sessionId = await ready(agent);
    expect((await prompt(agent, sessionId, 'make two files')).stopReason).toBe('end_turn');
    expect(agent.permissions).toHaveLength(1);
    expect(existsSync(join(dirs.workspace, 'a.txt')) && existsSync(join(dirs.workspace, 'b.txt'))).toBe(true);
  });

  test('stop reasons: the turn limit → max_turn_requests; a failed run → JSON-RPC error with conch code', async () => {
    server.script([{ toolCalls: [{ name: 'bash', arguments: { command: 'true' } }] }]);
    const limited = launch(['--max-turns', '1']);
    const s1 = await ready(limited);
    expect((await prompt(limited, s1, 'loop')).stopReason).toBe('max_turn_requests');

    server.script([{ error: { status: 401, message: 'bad key' } }]);
    const agent = launch();
    const s2 = await ready(agent);
    const error = await prompt(agent, s2, 'hello').then(
      () => null,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(RequestError);
    expect((error as RequestError).data).toMatchObject({ code: 'provider_auth' });
    expect((error as RequestError).message).not.toBe('');
    // The process keeps serving after a failed run, and the failed turn is not sent again.
    server.requests.length = 0;
    server.script([{ text: 'fine now' }]);
    expect((await prompt(agent, s2, 'again')).stopReason).toBe('end_turn');
    const history = JSON.stringify(server.requests[0]!.body.messages);
    expect(history).toContain('again');
    expect(history).not.toContain('hello');
  });
});

describe('conch acp with bad input', () => {
  test('malformed JSON, early and unknown requests, a bad cwd, an unknown session: JSON-RPC errors, and it keeps serving', async () => {
    const raw = startRaw(dirs, ['--model', 'anthropic/test-model'], anthropicEnv(server.anthropicBaseUrl));
    try {
      const rpc = (id: number, method: string, params: unknown) => raw.send(JSON.stringify({ jsonrpc: '2.0', id, method, params }));
      rpc(1, 'session/new', { cwd: dirs.workspace, mcpServers: [] });
      expect((await raw.response(1)).error.code).toBe(-32600); // before initialize
      raw.send('{"jsonrpc": "2.0", "id": 2, "method": ');
      expect((await raw.response(null)).error.code).toBe(-32700);
      rpc(3, 'initialize', { protocolVersion: 1, clientCapabilities: {} });
      expect((await raw.response(3)).result.agentInfo.name).toBe('conch');
      rpc(4, 'conch/no-such-method', {});
      expect((await raw.response(4)).error.code).toBe(-32601);
      rpc(5, 'session/new', { cwd: 'relative/dir', mcpServers: [] });
      const relative = await raw.response(5);
      expect(relative.error.code).toBe(-32602);
      expect(relative.error.message).toContain('absolute');
      rpc(6, 'session/prompt', { sessionId: 'no-such-session', prompt: [{ type: 'text', text: 'hi' }] });
      const unknown = await raw.response(6);
      expect(unknown.error.code).toBe(-32002);
      expect(unknown.error.data).toEqual({ sessionId: 'no-such-session' });
      rpc(7, 'session/prompt', { sessionId: 'x' }); // no prompt field
      expect((await raw.response(7)).error.code).toBe(-32602);
      // Still serving: a real session and prompt work after all of that.
      server.script([{ text: ['still here'] }]);
      rpc(8, 'session/new', { cwd: dirs.workspace, mcpServers: [] });
      const { sessionId } = (await raw.response(8)).result;
      rpc(9, 'session/prompt', { sessionId, prompt: [{ type: 'text', text: 'hello' }] });
      expect((await raw.response(9)).result.stopReason).toBe('end_turn');
      // A closed session is gone.
      rpc(10, 'session/close', { sessionId });
      expect((await raw.response(10)).result).toEqual({});
      rpc(11, 'session/prompt', { sessionId, prompt: [{ type: 'text', text: 'hello?' }] });
      expect((await raw.response(11)).error.code).toBe(-32002);
      // stdout carried only JSON-RPC.
      for (const line of raw.lines) expect(JSON.parse(line).jsonrpc).toBe('2.0');
      expect(raw.lines.some((l) => l.includes('still here'))).toBe(true);
      // The editor closing stdin ends the process cleanly.
      expect(await raw.close()).toBe(0);
    } finally {
      await raw.close();
    }
  });

  test('requests written just before stdin closes are still answered (printf … | conch acp)', async () => {
    server.script([{ text: ['answered anyway'], delayMs: 200 }]);
    const raw = startRaw(dirs, ['--model', 'anthropic/test-model'], anthropicEnv(server.anthropicBaseUrl));
    const rpc = (id: number, method: string, params: unknown) => raw.send(JSON.stringify({ jsonrpc: '2.0', id, method, params }));
    rpc(1, 'initialize', { protocolVersion: 1, clientCapabilities: {} });
    await raw.response(1);
    rpc(2, 'session/new', { cwd: dirs.workspace, mcpServers: [] });
    const { sessionId } = (await raw.response(2)).result;
    rpc(3, 'session/prompt', { sessionId, prompt: [{ type: 'text', text: 'hello' }] });
    const exit = raw.close();
    expect((await raw.response(3)).result.stopReason).toBe('end_turn');
    expect(await exit).toBe(0);
    expect(raw.lines.some((l) => l.includes('answered anyway'))).toBe(true);
  });
});

describe.skipIf(!hasTmux)('conch acp typed on a terminal', () => {
  test('says what it is and how to leave, instead of waiting in silence; Ctrl-D ends it', async () => {
    const t = await openTerminal([CONCH, 'acp'], { cwd: dirs.workspace, env: { ...conchEnv(dirs, anthropicEnv(server.anthropicBaseUrl)), TERM: 'xterm-256color' } });
    try {
      const screen = await t.waitFor((s) => s.includes('Ctrl-D ends it'), 'the note');
      expect(screen).toContain('conch acp: this is the Agent Client Protocol server for editors');
      expect(screen).toContain('To run a task here: conch "what to do"');
      t.keys('C-d');
      expect(await t.exited()).toBe(0);
    } finally {
      await t.close();
    }
  }, 60_000);

  test('an editor, over pipes, is not told', async () => {
    const agent = launch();
    await ready(agent);
    expect(agent.stderr()).not.toContain('Agent Client Protocol server');
  });
});

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}
