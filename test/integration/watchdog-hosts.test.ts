// The watchdog beyond one-shot runs: `conch tools`, `conch acp` and interactive mode load plugins
// too, and a plugin that never yields (`for (;;) {}`) must not hold any of them forever. A plugin
// stuck while it loads ends conch once its load time (5 s) and the grace period are up; a signal
// ends it even when the main thread cannot answer; an ACP prompt's deadline holds.
import { describe, expect, test } from 'bun:test';
import { existsSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { anthropicEnv, CONCH, conchEnv, openaiEnv, runConch, useHarness } from '../support/cli.ts';
import { startAgent, type AgentProcess } from '../support/acp-client.ts';
import { hasTmux, openTerminal, type Terminal } from '../support/tty.ts';

const harness = useHarness(async (d) => {
  await mkdir(join(d.configHome, 'conch', 'tools'), { recursive: true });
});
const SLOW = 60_000;
const tools = (name: string, source: string) => writeFile(join(harness.dirs.configHome, 'conch', 'tools', name), source);
const flag = () => join(harness.dirs.home, 'spinning');

/** A plugin that says so in a file, then spins while it loads. */
const spinsAtImport = () => tools('load-spin.ts', `import { writeFileSync } from 'node:fs';\nwriteFileSync(${JSON.stringify(flag())}, 'yes');\nfor (;;) {}\nexport default {};\n`);
/** A plugin whose execute says so in a file, then spins. */
const spinsInExecute = () =>
  tools('spin.ts', `
    import { writeFileSync } from 'node:fs';
    import { defineTool, Type } from 'conch';
    export default defineTool({
      name: 'spin',
      description: 'never yields',
      parameters: Type.Object({}),
      async execute() {
        writeFileSync(${JSON.stringify(flag())}, 'yes');
        for (;;) {}
      },
    });`);
/**
 * conch on a terminal, under bash: Ctrl-C goes to the terminal's whole foreground group, and a
 * user's login shell may be dash, which dies of it; bash waits for conch and records its exit code.
 */
async function conversation(status: string): Promise<Terminal> {
  const t = await openTerminal(['/bin/bash', '-c', `"${CONCH}" --model openai/test-model; echo "exit $?" > '${status}'; exec sleep 60`], {
    cwd: harness.dirs.workspace,
    env: { ...conchEnv(harness.dirs, openaiEnv(harness.server.openaiBaseUrl)), TERM: 'xterm-256color' },
  });
  await t.waitFor((s) => s.includes('/help lists commands') && s.trimEnd().endsWith('›'), 'the prompt');
  return t;
}
// The shell's redirect makes the file before echo writes into it: wait for the whole line.
async function exitOfConch(status: string): Promise<string> {
  let text = '';
  for (let i = 0; i < 1200 && !text.endsWith('\n'); i++) {
    if (existsSync(status)) text = await Bun.file(status).text();
    if (!text.endsWith('\n')) await Bun.sleep(25);
  }
  return text;
}
const spinning = async () => {
  for (let i = 0; i < 1200 && !existsSync(flag()); i++) await Bun.sleep(25);
  expect(existsSync(flag())).toBe(true);
};

describe('conch tools', () => {
  test('a plugin that never finishes loading: one JSON document saying so, exit 124, not a hang', async () => {
    await spinsAtImport();
    const r = await runConch({ dirs: harness.dirs, args: ['tools', '--json'], env: {} });
    expect(r.code).toBe(124);
    const doc = JSON.parse(r.stdout);
    expect(doc).toMatchObject({ tools: null, status: 'timed_out', exitCode: 124 });
    expect(doc.message).toContain(`the plugin ${join(harness.dirs.configHome, 'conch', 'tools', 'load-spin.ts')} did not finish loading within 5000 ms`);
    expect(r.stderr).toContain('the watchdog ended conch tools');
  }, SLOW);

  test('SIGTERM while a plugin spins at import ends it: exit 143', async () => {
    await spinsAtImport();
    let child: ReturnType<typeof Bun.spawn> | undefined;
    const pending = runConch({ dirs: harness.dirs, args: ['tools'], env: {}, onSpawn: (c) => (child = c) });
    await spinning();
    child!.kill('SIGTERM');
    const r = await pending;
    expect(r.code).toBe(143);
    expect(r.stderr).toContain('SIGTERM asked conch to stop and its main thread did not answer');
  }, SLOW);

  test('plugins that load: the listing as before', async () => {
    await tools('calm.ts', `export default { name: 'calm', description: 'c', parameters: { type: 'object', properties: {} }, execute: () => 'ok' };`);
    const r = await runConch({ dirs: harness.dirs, args: ['tools', '--json'], env: {} });
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout).tools.map((t: { name: string }) => t.name)).toContain('calm');
  }, SLOW);
});

describe('conch acp', () => {
  const launch = (args: string[] = []): AgentProcess =>
    startAgent({ dirs: harness.dirs, args: ['--model', 'anthropic/test-model', ...args], env: anthropicEnv(harness.server.anthropicBaseUrl) });
  const exitOf = (agent: AgentProcess) => new Promise<number | null>((resolve) => (agent.child.exitCode !== null ? resolve(agent.child.exitCode) : agent.child.once('exit', (code) => resolve(code))));

  test('session/new with a plugin that never finishes loading: conch acp exits 124 instead of hanging', async () => {
    await spinsAtImport();
    const agent = launch();
    try {
      await agent.conn.agent.request('initialize', { protocolVersion: 1, clientCapabilities: {} });
      void agent.conn.agent.request('session/new', { cwd: harness.dirs.workspace, mcpServers: [] }).catch(() => {});
      expect(await exitOf(agent)).toBe(124);
      expect(agent.stderr()).toContain('the watchdog ended conch acp');
    } finally {
      await agent.close();
    }
  }, SLOW);

  test("a prompt whose tool spins: the prompt's deadline holds (exit 124), and SIGTERM ends it sooner (exit 143)", async () => {
    await spinsInExecute();
    for (const [args, signal, code] of [[['--timeout', '2s'], null, 124], [[], 'SIGTERM', 143]] as const) {
      harness.server.script([{ toolCalls: [{ name: 'spin', arguments: {} }] }, { text: 'unreachable' }]);
      const agent = launch([...args]);
      try {
        await agent.conn.agent.request('initialize', { protocolVersion: 1, clientCapabilities: {} });
        const { sessionId } = await agent.conn.agent.request('session/new', { cwd: harness.dirs.workspace, mcpServers: [] });
        void agent.conn.agent.request('session/prompt', { sessionId, prompt: [{ type: 'text', text: 'go' }] }).catch(() => {});
        await spinning();
        if (signal) agent.child.kill(signal);
        expect(await exitOf(agent)).toBe(code);
      } finally {
        await agent.close();
      }
      await Bun.$`rm -f ${flag()}`;
    }
  }, SLOW);
});

describe.skipIf(!hasTmux)('interactive mode', () => {
  test('Ctrl-C while a plugin spins in a turn ends conch: exit 130, the reason on the terminal', async () => {
    await spinsInExecute();
    harness.server.script([{ toolCalls: [{ name: 'spin', arguments: {} }] }, { text: 'unreachable' }]);
    const status = join(harness.dirs.home, 'status');
    let t: Terminal | undefined;
    try {
      t = await conversation(status);
      t.type('spin');
      t.keys('Enter');
      await spinning();
      t.keys('C-c');
      await t.waitFor((s) => s.includes('the watchdog ended the conversation'), 'the watchdog line');
      expect(await exitOfConch(status)).toBe('exit 130\n');
      // The run had the terminal's echo off (keys typed ahead); the watchdog's exit turns it on again.
      t.type('echo-check');
      await t.waitFor((s) => s.includes('echo-check'), 'typed keys echoed after conch exited');
    } finally {
      await t?.close();
    }
  }, SLOW);
});

describe('with a plugin that behaves, everything goes on as before', () => {
  const calm = () => tools('calm.ts', `export default { name: 'calm', description: 'c', parameters: { type: 'object', properties: {} }, execute: () => 'calm result' };`);

  test('conch acp: a prompt calls the plugin and ends; session/cancel cancels the next; conch acp stays up', async () => {
    await calm();
    harness.server.script([{ toolCalls: [{ name: 'calm', arguments: {} }] }, { text: 'done' }, { text: 'waiting…', hangAfterText: true }]);
    const agent = startAgent({ dirs: harness.dirs, args: ['--model', 'anthropic/test-model'], env: anthropicEnv(harness.server.anthropicBaseUrl) });
    try {
      await agent.conn.agent.request('initialize', { protocolVersion: 1, clientCapabilities: {} });
      const { sessionId } = await agent.conn.agent.request('session/new', { cwd: harness.dirs.workspace, mcpServers: [] });
      const first = await agent.conn.agent.request('session/prompt', { sessionId, prompt: [{ type: 'text', text: 'call it' }] });
      expect(first.stopReason).toBe('end_turn');
      expect(JSON.stringify(harness.server.requests[1]!.body.messages)).toContain('calm result');
      const second = agent.conn.agent.request('session/prompt', { sessionId, prompt: [{ type: 'text', text: 'wait' }] });
      while (harness.server.requests.length < 3) await Bun.sleep(20);
      await agent.conn.agent.notify('session/cancel', { sessionId });
      expect((await second).stopReason).toBe('cancelled');
      expect(agent.child.exitCode).toBeNull();
    } finally {
      await agent.close();
    }
  }, SLOW);

  test.skipIf(!hasTmux)('conch -i: Ctrl-C mid-command returns to the prompt, the next turn runs, Ctrl-D exits 0', async () => {
    await calm();
    const marker = `43.${Math.floor(Math.random() * 1e9)}`;
    harness.server.script([{ toolCalls: [{ name: 'bash', arguments: { command: `sleep ${marker}` } }] }, { text: 'after the cancel' }]);
    const running = async () => (await Bun.$`pgrep -f ${`sleep ${marker}`}`.nothrow().quiet()).exitCode === 0;
    const status = join(harness.dirs.home, 'status');
    let t: Terminal | undefined;
    try {
      t = await conversation(status);
      t.type('run a long command');
      t.keys('Enter');
      for (let i = 0; i < 800 && !(await running()); i++) await Bun.sleep(25);
      expect(await running()).toBe(true);
      t.keys('C-c');
      await t.waitFor((s) => /cancelled[\s\S]*› $/.test(`${s.trimEnd()} `), 'the prompt after the cancel');
      t.type('next');
      t.keys('Enter');
      await t.waitFor((s) => /after the cancel[\s\S]*› $/.test(`${s.trimEnd()} `), 'the next answer and the prompt');
      t.keys('C-d');
      expect(await exitOfConch(status)).toBe('exit 0\n');
    } finally {
      await t?.close();
    }
  }, SLOW);
});
