// conch's temp directories (conch-run-*: a run's private /tmp and logs) are gone after every exit
// path, and the test helpers' (conch-plugin-run-*) after a test run. Each child gets its own TMPDIR,
// so the count cannot be disturbed by anything else on the machine; only the per-user state folder
// (conch-<uid>, shared by every run on purpose) may stay.
import { afterEach, beforeEach, describe, expect, test } from 'bun:test';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, readlinkSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { anthropicEnv, BUN, REPO, runConch, useHarness } from '../support/cli.ts';

const harness = useHarness();
let tmp: string;
beforeEach(() => {
  tmp = mkdtempSync(join(tmpdir(), 'conch-tmpcount-'));
  chmodSync(tmp, 0o755);
});
afterEach(() => rmSync(tmp, { recursive: true, force: true }));

const uid = process.getuid?.() ?? 0;
const leftovers = () => readdirSync(tmp).filter((name) => name !== `conch-${uid}`);
const run = (args: string[], onSpawn?: (c: ReturnType<typeof Bun.spawn>) => void) =>
  runConch({ dirs: harness.dirs, args: ['--model', 'anthropic/test-model', ...args], env: { ...anthropicEnv(harness.server.anthropicBaseUrl), TMPDIR: tmp }, onSpawn });

describe('temp directories', () => {
  test('a completed run with a shell command and a run that times out leave nothing in TMPDIR', async () => {
    harness.server.script([{ toolCalls: [{ name: 'bash', arguments: { command: 'echo hi > /tmp/x; cat /tmp/x' } }] }, { text: 'done' }]);
    expect((await run(['--json', 'go'])).code).toBe(0);
    harness.server.script([{ text: 'slow', hangAfterText: true }]);
    expect((await run(['--json', '--timeout', '1s', 'go'])).code).toBe(124);
    expect(leftovers()).toEqual([]);
  });

  test('a second Ctrl-C, which exits at once, leaves nothing in TMPDIR', async () => {
    // Each SIGINT once the command says conch is there: the first while the command runs, the
    // second once the first one's TERM reached it (two sent while conch waits for the CPU arrive as one).
    const running = join(harness.dirs.home, 'running');
    const termed = join(harness.dirs.home, 'termed');
    const command = `trap "touch '${termed}'" TERM; trap "" INT; touch '${running}'; while :; do sleep 1; done`;
    harness.server.script([{ toolCalls: [{ name: 'bash', arguments: { command } }] }]);
    let child: ReturnType<typeof Bun.spawn> | undefined;
    const pending = run(['--json', '--unrestricted', 'go'], (c) => (child = c));
    while (!existsSync(running) && child!.exitCode === null) await Bun.sleep(20);
    child!.kill('SIGINT');
    while (!existsSync(termed) && child!.exitCode === null) await Bun.sleep(20);
    child!.kill('SIGINT');
    const r = await pending;
    expect(r.code).toBe(130);
    expect(r.stdout).toBe('');
    expect(leftovers()).toEqual([]);
  });

  test("a SIGKILLed run's directory is removed by the next run; a live process's is not", async () => {
    // Enough files that removing them takes a while: the next run must not exit with that half done.
    const command = 'head -c 100000 /dev/zero > /tmp/big; mkdir /tmp/many; cd /tmp/many; seq 1 10000 | xargs touch; touch /tmp/ready; sleep 30';
    harness.server.script([{ toolCalls: [{ name: 'bash', arguments: { command } }] }]);
    let child: ReturnType<typeof Bun.spawn> | undefined;
    const pending = run(['--json', 'go'], (c) => (child = c));
    const ready = () => leftovers().some((name) => existsSync(join(tmp, name, 'tmp', 'ready')));
    while (!ready() && child!.exitCode === null) await Bun.sleep(20);
    child!.kill('SIGKILL');
    await pending;
    const killed = leftovers();
    expect(killed).toHaveLength(1);
    expect(killed[0]).toStartWith('conch-run-');
    // Named like a run directory of this (live) test process: not conch's to remove.
    const stat = readFileSync('/proc/self/stat', 'latin1');
    const start = stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19];
    const ns = readlinkSync('/proc/self/ns/pid').replace(/\D/g, '');
    const live = `conch-run-${ns}-${process.pid}-${start}-live`;
    mkdirSync(join(tmp, live));
    harness.server.script([{ text: 'done' }]);
    expect((await run(['--json', 'go'])).code).toBe(0);
    expect(leftovers()).toEqual([live]);
  });

  test("a SIGKILLed run's placeholders are removed by the next run, even one that runs no shell command", async () => {
    // They went only at the next run's first shell command: a killed run's empty .git, HEAD, .conch
    // and .env.* stayed in the workspace through any number of runs that ran none (conch -c "explain").
    harness.server.script([{ toolCalls: [{ name: 'bash', arguments: { command: 'touch ready; sleep 30' } }] }]);
    let child: ReturnType<typeof Bun.spawn> | undefined;
    const pending = run(['--json', 'go'], (c) => (child = c));
    const ws = harness.dirs.workspace;
    while (!existsSync(join(ws, 'ready')) && child!.exitCode === null) await Bun.sleep(20);
    child!.kill('SIGKILL');
    await pending;
    expect(readdirSync(ws)).toContain('.env.local');
    expect(readdirSync(ws)).toContain('.conch');
    harness.server.script([{ text: 'done' }]);
    expect((await run(['--json', '-c', 'go on'])).code).toBe(0);
    expect(readdirSync(ws)).toEqual(['ready']);
  });

  test('a test file using the plugin test context leaves no conch-plugin-run-* behind', async () => {
    const file = join(tmp, 'uses-context.test.ts');
    writeFileSync(file, `
      import { test, expect } from 'bun:test';
      import { makeContext } from ${JSON.stringify(join(REPO, 'test/support/plugin-context.ts'))};
      test('context', async () => {
        const ctx = await makeContext(${JSON.stringify(REPO)});
        expect(ctx.cwd).toBe(${JSON.stringify(REPO)});
      });`);
    const child = Bun.spawn([BUN, 'test', file], { cwd: REPO, env: { ...process.env, TMPDIR: tmp }, stdout: 'pipe', stderr: 'pipe' });
    const [err, code] = await Promise.all([new Response(child.stderr).text(), child.exited]);
    expect(err).toContain('1 pass');
    expect(code).toBe(0);
    expect(leftovers()).toEqual(['uses-context.test.ts']);
  });
});

test("TMPDIR inside the workspace: write and edit keep out of conch's own directories there, as commands do", async () => {
  const inner = join(harness.dirs.workspace, 'tmp');
  mkdirSync(inner);
  const state = `tmp/conch-${uid}`;
  harness.server.script([
    // Asked when the run is under way, so its directory exists and has its name.
    () => {
      const runDir = readdirSync(inner).find((name) => name.startsWith('conch-run-'));
      return { toolCalls: [
        { name: 'write', arguments: { path: `${state}/planted`, content: 'x' } },
        { name: 'write', arguments: { path: `tmp/${runDir}/logs/planted`, content: 'x' } },
        { name: 'edit', arguments: { path: `${state}/placeholders.lock`, edits: [{ old_text: 'a', new_text: 'b' }] } },
        { name: 'write', arguments: { path: 'tmp/mine.txt', content: 'x' } },
      ] };
    },
    { text: 'done' },
  ]);
  const r = await runConch({ dirs: harness.dirs, args: ['--model', 'anthropic/test-model', 'go'], env: { ...anthropicEnv(harness.server.anthropicBaseUrl), TMPDIR: inner } });
  expect(r.code).toBe(0);
  const results = (harness.server.requests[1]!.body.messages.at(-1).content as { content: unknown }[]).map((b) => JSON.stringify(b.content));
  for (const result of results.slice(0, 3)) expect(result).toContain("denied by policy rule 'workspace.own'");
  expect(results[3]).toContain('Created tmp/mine.txt');
  expect(readdirSync(join(inner, `conch-${uid}`))).not.toContain('planted');
});
