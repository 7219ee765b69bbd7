// An MCP server's schema pattern that backtracks (a ReDoS: seconds per string, checked and then
// described in conch's main thread) holds the main thread as plugin code can. In a
// one-shot run the watchdog starts for MCP tools (mcp-cli.test.ts); here `conch acp` and `conch -i`,
// with no plugin at all, must end at the deadline too, not minutes later.
import { describe, expect, test } from 'bun:test';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { anthropicEnv, BUN, CONCH, conchEnv, openaiEnv, useHarness, writeConfig } from '../support/cli.ts';
import { startAgent } from '../support/acp-client.ts';
import { hasTmux, openTerminal, type Terminal } from '../support/tty.ts';
import { WRITER } from './harness.ts';

// A start-up time far past what a loaded machine needs: a server that failed to start offers no tool to get stuck in.
const harness = useHarness(async (d) => writeConfig(d, { mcpServers: { w: { command: BUN, args: [WRITER], startupTimeoutMs: 60_000 } } }));
const SLOW = 60_000;
/**
 * One call whose string a dozen backtracking patterns (anyOf) each take a second or more to refuse,
 * then to describe: half a minute with the main thread held, far past the deadline of 4 s, which
 * leaves the model's first answer time to arrive on a loaded machine.
 */
const redos = () => harness.server.script([{ toolCalls: [{ name: 'mcp__w__match_any', arguments: { item: `${'a'.repeat(40)}!` } }] }, { text: 'unreachable' }]);

describe('the watchdog holds the deadline when MCP tools are offered', () => {
  test('conch acp: a prompt stuck in a backtracking MCP schema ends conch acp at its deadline (exit 124)', async () => {
    redos();
    const agent = startAgent({ dirs: harness.dirs, args: ['--model', 'anthropic/test-model', '--timeout', '4s'], env: anthropicEnv(harness.server.anthropicBaseUrl) });
    try {
      const exited = new Promise<number | null>((resolve) => agent.child.once('exit', (code) => resolve(code)));
      await agent.conn.agent.request('initialize', { protocolVersion: 1, clientCapabilities: {} });
      const { sessionId } = await agent.conn.agent.request('session/new', { cwd: harness.dirs.workspace, mcpServers: [] });
      void agent.conn.agent.request('session/prompt', { sessionId, prompt: [{ type: 'text', text: 'go' }] }).catch(() => {});
      expect(await exited).toBe(124);
      expect(agent.stderr()).toContain('the watchdog ended conch acp');
    } finally {
      await agent.close();
    }
  }, SLOW);

  test.skipIf(!hasTmux)('conch -i: a turn stuck in a backtracking MCP schema ends the conversation at its deadline (exit 124)', async () => {
    redos();
    const status = join(harness.dirs.home, 'status');
    let t: Terminal | undefined;
    try {
      // Written whole, then renamed into place: the file exists only once its line is complete
      // (a redirect creates it empty before echo writes, and a read in between got '').
      t = await openTerminal(['/bin/bash', '-c', `"${CONCH}" --model openai/test-model --timeout 4s; echo "exit $?" > '${status}.part'; mv '${status}.part' '${status}'; exec sleep 60`], {
        cwd: harness.dirs.workspace,
        env: { ...conchEnv(harness.dirs, openaiEnv(harness.server.openaiBaseUrl)), TERM: 'xterm-256color' },
      });
      await t.waitFor((s) => s.includes('/help lists commands') && s.trimEnd().endsWith('›'), 'the prompt');
      t.type('go');
      t.keys('Enter');
      await t.waitFor((s) => s.includes('the watchdog ended the conversation'), 'the watchdog line');
      for (let i = 0; i < 1200 && !existsSync(status); i++) await Bun.sleep(25);
      expect(await Bun.file(status).text()).toBe('exit 124\n');
    } finally {
      await t?.close();
    }
  }, SLOW);
});
