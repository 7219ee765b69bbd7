// A plugin whose execute never yields (`for (;;) {}`) stops the main thread's timers and signal
// listeners; the watchdog thread still ends the run: at the deadline (timed_out, 124) or on SIGTERM
// (cancelled, 143), with one JSON document under --json, no process left behind and no temp dir.
import { describe, expect, test } from 'bun:test';
import { chmodSync, existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { anthropicEnv, runConch, useHarness } from '../support/cli.ts';

const harness = useHarness(async (d) => {
  await mkdir(join(d.configHome, 'conch', 'tools'), { recursive: true });
});

/** A plugin that starts a sandboxed command, waits until it runs, says so in a file, then spins. */
async function spinningPlugin(marker: string): Promise<string> {
  const flag = join(harness.dirs.home, 'spinning');
  await writeFile(join(harness.dirs.configHome, 'conch', 'tools', 'spin.ts'), `
    import { writeFileSync } from 'node:fs';
    import { defineTool, Type } from 'conch';
    export default defineTool({
      name: 'spin',
      description: 'never yields',
      parameters: Type.Object({}),
      async execute(_args, ctx) {
        void ctx.exec('sleep ${marker}');
        for (let i = 0; i < 400; i++) {
          await new Promise((r) => setTimeout(r, 25));
          if (Bun.spawnSync(['pgrep', '-f', 'sleep ${marker}']).exitCode === 0) break;
        }
        writeFileSync(${JSON.stringify(flag)}, 'yes');
        for (;;) {}
      },
    });`);
  harness.server.script([{ toolCalls: [{ name: 'spin', arguments: {} }] }, { text: 'unreachable' }]);
  return flag;
}

const running = async (marker: string) => (await Bun.$`pgrep -f ${`sleep ${marker}`}`.nothrow().quiet()).exitCode === 0;
/**
 * Whether the command outlives conch. The watchdog SIGKILLs bwrap's group and exits; the command, in
 * the sandbox's own session, dies when the kernel tears the PID namespace down after that, which on a
 * loaded machine can be a moment after conch is gone. A command the watchdog did not kill stays.
 */
async function alive(marker: string): Promise<boolean> {
  for (let i = 0; i < 40; i++) {
    if (!(await running(marker))) return false;
    await Bun.sleep(50);
  }
  return true;
}
const marker = () => `7${Math.floor(Math.random() * 1e6)}.${Math.floor(Math.random() * 1e6)}`;

async function withTmp<T>(work: (tmp: string) => Promise<T>): Promise<T> {
  const tmp = mkdtempSync(join(tmpdir(), 'conch-watchdog-'));
  chmodSync(tmp, 0o755);
  try {
    return await work(tmp);
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
}
// Per-user folders that are reused, never one per run: conch's state and bun:ffi's C headers.
const perUser = [`conch-${process.getuid?.() ?? 0}`, `bun-cc-${process.getuid?.() ?? 0}`];
const leftovers = (tmp: string) => readdirSync(tmp).filter((n) => !perUser.includes(n));

function run(args: string[], tmp: string, onSpawn?: (c: ReturnType<typeof Bun.spawn>) => void) {
  return runConch({
    dirs: harness.dirs,
    args: ['--model', 'anthropic/test-model', ...args],
    env: { ...anthropicEnv(harness.server.anthropicBaseUrl), TMPDIR: tmp },
    onSpawn,
  });
}

describe('the watchdog', () => {
  test('a spinning plugin cannot outlast --timeout: timed_out, exit 124, one JSON document, its command killed', async () => {
    const m = marker();
    await spinningPlugin(m);
    // The document says what happened before the main thread stopped, as a run's own does.
    harness.server.script([{ thinking: { text: 'spin it' }, toolCalls: [{ name: 'spin', arguments: {} }] }, { text: 'unreachable' }]);
    await withTmp(async (tmp) => {
      const r = await run(['--json', '--timeout', '2s', 'go'], tmp);
      expect(r.code).toBe(124);
      const doc = JSON.parse(r.stdout);
      expect(doc).toMatchObject({ status: 'timed_out', exitCode: 124, partial: true, counts: { modelCalls: 1, toolCalls: 1 } });
      expect(doc.answeredBy).toEqual(['anthropic/test-model']);
      expect(doc.thinking.chars).toBe('spin it'.length);
      expect(doc.message).toContain('watchdog');
      expect(r.stderr).toContain('the run deadline passed');
      expect(await alive(m)).toBe(false);
      expect(leftovers(tmp)).toEqual([]);
    });
  });

  test('a plugin that spins while it loads cannot outlast --timeout either', async () => {
    await writeFile(join(harness.dirs.configHome, 'conch', 'tools', 'load-spin.ts'), 'for (;;) {}\nexport default {};\n');
    harness.server.script([{ text: 'unreachable' }]);
    await withTmp(async (tmp) => {
      const r = await run(['--json', '--timeout', '2s', 'go'], tmp);
      expect(r.code).toBe(124);
      expect(JSON.parse(r.stdout)).toMatchObject({ version: 1, status: 'timed_out', exitCode: 124 });
      expect(harness.server.requests).toHaveLength(0);
      expect(leftovers(tmp)).toEqual([]);
    });
  });

  // As in `conch tools`, `acp` and -i: the load limit (5 s) ends the run, not the run deadline (1 h).
  for (const [stuck, calm] of [['a-stuck.ts', 'b-calm.ts'], ['z-stuck.ts', 'a-calm.ts']] as const) {
    test(`a plugin that never finishes loading ends a run without --timeout, naming it (${stuck} beside ${calm})`, async () => {
      const dir = join(harness.dirs.configHome, 'conch', 'tools');
      await writeFile(join(dir, calm), `import { defineTool, Type } from 'conch';\nexport default defineTool({ name: 'calm', description: 'c', parameters: Type.Object({}), execute: () => 'ok' });`);
      await writeFile(join(dir, stuck), `import { readFileSync } from 'node:fs';\nimport { Type } from 'conch';\nvoid readFileSync, Type;\nfor (;;) {}\nexport default {};\n`);
      harness.server.script([{ text: 'unreachable' }]);
      await withTmp(async (tmp) => {
        const r = await run(['--json', 'go'], tmp);
        expect(r.code).toBe(124);
        const doc = JSON.parse(r.stdout);
        expect(doc).toMatchObject({ status: 'timed_out', exitCode: 124 });
        expect(doc.message).toContain(`the plugin ${join(dir, stuck)} did not finish loading within 5000 ms`);
        expect(r.stderr).toContain(join(dir, stuck));
        expect(harness.server.requests).toHaveLength(0);
        expect(leftovers(tmp)).toEqual([]);
      });
    });
  }

  test('without --json the answer stream stays empty and the reason is on stderr', async () => {
    await spinningPlugin(marker());
    await withTmp(async (tmp) => {
      const r = await run(['--timeout', '2s', 'go'], tmp);
      expect(r.code).toBe(124);
      expect(r.stdout).toBe('');
      expect(r.stderr).toContain('watchdog ended the run');
    });
  });

  test('SIGTERM while a plugin spins ends the run: cancelled by SIGTERM, exit 143 (not Ctrl-C\'s 130), its command killed', async () => {
    const m = marker();
    const flag = await spinningPlugin(m);
    await withTmp(async (tmp) => {
      let child: ReturnType<typeof Bun.spawn> | undefined;
      const pending = run(['--json', 'go'], tmp, (c) => (child = c));
      for (let i = 0; i < 600 && !existsSync(flag); i++) await Bun.sleep(25);
      expect(existsSync(flag)).toBe(true);
      child!.kill('SIGTERM');
      const r = await pending;
      expect(r.code).toBe(143);
      expect(JSON.parse(r.stdout)).toMatchObject({ status: 'cancelled', signal: 'SIGTERM', exitCode: 143 });
      expect(r.stderr).toContain('SIGTERM asked conch to stop');
      expect(await alive(m)).toBe(false);
      expect(leftovers(tmp)).toEqual([]);
    });
  });

  test('with a plugin loaded, SIGINT during a model call still cancels the usual way', async () => {
    await writeFile(join(harness.dirs.configHome, 'conch', 'tools', 'calm.ts'), `export default { name: 'calm', description: 'c', parameters: { type: 'object', properties: {} }, execute: () => 'ok' };`);
    harness.server.script([{ text: 'thinking…', hangAfterText: true }]);
    await withTmp(async (tmp) => {
      let child: ReturnType<typeof Bun.spawn> | undefined;
      const pending = run(['--json', 'go'], tmp, (c) => (child = c));
      while (harness.server.requests.length === 0) await Bun.sleep(20);
      await Bun.sleep(200);
      child!.kill('SIGINT');
      const r = await pending;
      expect(r.code).toBe(130);
      const doc = JSON.parse(r.stdout);
      expect(doc.status).toBe('cancelled');
      expect(doc.message).not.toContain('watchdog');
    });
  });
});
