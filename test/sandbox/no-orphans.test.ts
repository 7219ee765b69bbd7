// Nothing conch starts outlives it, on any exit path: a bash call abandoned at its deadline while
// the run ends and conch exits, and `conch sandbox run` killed while bwrap is still setting up the
// sandbox (a bwrap child caught there, before --die-with-parent holds, would otherwise wait forever).
// Each command carries a marker no other process on the machine has, so pgrep finds only it.
import { describe, expect, test } from 'bun:test';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { anthropicEnv, CONCH, runConch, useHarness } from '../support/cli.ts';
import { canRun } from './harness.ts';

const harness = useHarness(async (d) => {
  mkdirSync(join(d.configHome, 'conch', 'tools'), { recursive: true });
});

const marker = () => `41.${Math.floor(Math.random() * 1e9)}`;

async function alive(mark: string): Promise<string[]> {
  const found = await Bun.$`pgrep -af ${mark}`.nothrow().quiet();
  return found.stdout.toString().split('\n').filter((line) => line.trim() !== '');
}

/** The processes carrying `mark`, after giving SIGKILLed ones a moment to leave the process table. */
async function leftOver(mark: string): Promise<string[]> {
  for (let i = 0; i < 40 && (await alive(mark)).length > 0; i++) await Bun.sleep(50);
  return alive(mark);
}

describe.skipIf(!canRun)('no process outlives conch', () => {
  for (const mode of ['sandboxed', 'unrestricted'] as const) {
    test(`${mode}: a command abandoned with its call, then the run ends and conch exits`, async () => {
      const mark = marker();
      // A plugin that ignores its own signal: its call is abandoned at the deadline, its command
      // runs on (it ignores SIGTERM too) until the run ends and conch exits.
      writeFileSync(
        join(harness.dirs.configHome, 'conch', 'tools', 'stubborn.ts'),
        `import { defineTool, Type } from 'conch';
        export default defineTool({
          name: 'stubborn',
          description: 'never stops',
          parameters: Type.Object({}),
          timeoutMs: 300,
          async execute(_args, ctx) {
            return ctx.exec('trap "" TERM; while :; do sleep ${mark}; done', { signal: new AbortController().signal, timeoutMs: 600000 });
          },
        });`,
      );
      harness.server.script([{ toolCalls: [{ name: 'stubborn', arguments: {} }] }, { text: 'gave up' }]);
      const r = await runConch({
        dirs: harness.dirs,
        args: ['--model', 'anthropic/test-model', '--json', ...(mode === 'unrestricted' ? ['--unrestricted'] : []), 'go'],
        env: anthropicEnv(harness.server.anthropicBaseUrl),
      });
      expect(r.code).toBe(0);
      expect(JSON.stringify(harness.server.requests[1]!.body)).toContain('was abandoned');
      expect(await leftOver(mark)).toEqual([]);
    }, 30_000);
  }

  test('unrestricted: a daemon a command detached with setsid (bash or a job) does not outlive conch', async () => {
    const mark = marker();
    harness.server.script([
      { toolCalls: [
        { name: 'bash', arguments: { command: `setsid sh -c 'exec sleep ${mark}1' >/dev/null 2>&1 </dev/null & echo started` } },
        { name: 'job_start', arguments: { command: `setsid sh -c 'exec sleep ${mark}2' >/dev/null 2>&1 </dev/null & sleep 60` } },
      ] },
      { text: 'done' },
    ]);
    const r = await runConch({
      dirs: harness.dirs,
      args: ['--model', 'anthropic/test-model', '--json', '--unrestricted', '--plugin', 'jobs', 'go'],
      env: anthropicEnv(harness.server.anthropicBaseUrl),
    });
    expect(r.code).toBe(0);
    expect(JSON.stringify(harness.server.requests[1]!.body)).toContain('started');
    expect(await leftOver(mark)).toEqual([]);
  }, 30_000);

  test('conch sandbox run killed while bwrap starts: no bwrap and no command left', async () => {
    const mark = marker();
    for (const signal of ['SIGTERM', 'SIGHUP', 'SIGINT', 'SIGTERM', 'SIGHUP', 'SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
      const run = Bun.spawn([CONCH, 'sandbox', 'run', '--', 'sleep', mark], {
        cwd: harness.dirs.workspace,
        env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: harness.dirs.home, CONCH_FROM_SOURCE: '1' },
        stdio: ['ignore', 'ignore', 'ignore'],
      });
      // The placeholders exist: bwrap is about to start, or starting.
      for (let i = 0; i < 400 && !existsSync(join(harness.dirs.workspace, '.env.local')); i++) await Bun.sleep(5);
      run.kill(signal);
      await run.exited;
      expect({ signal, left: await leftOver(mark) }).toEqual({ signal, left: [] });
    }
  }, 60_000);
});
