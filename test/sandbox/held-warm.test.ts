// The held sandbox's prepared process (src/sandbox/held.ts): while the sandbox is idle the next
// command's nsenter and bwrap are set up and wait at bwrap's --block-fd; a command that passes every
// check, with the cwd and environment it was prepared for, is given it. Real bwrap and nsenter.
import { describe, expect, test } from 'bun:test';
import { existsSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { heldAvailable, preparedCounts } from '../../src/sandbox/held.ts';
import { canRun, useFixtureScope } from './harness.ts';
import { hostProcesses, lingering, runExecutor, untilHeld } from './held-harness.ts';

const run = canRun && heldAvailable() ? describe : describe.skip;

const CLOCK_TICKS = Number(Bun.spawnSync(['getconf', 'CLK_TCK']).stdout.toString().trim()) || 100;

/** The host pids of the process prepared for commands in `dir` (nsenter, bwrap, bwrap's child). */
function preparedFor(dir: string): number[] {
  return hostProcesses(`--chdir ${dir} -- /bin/sh /proc/self/fd/8`);
}

/** Waits until the process prepared for `dir` is all there (bwrap has forked its child). */
async function prepared(dir: string): Promise<number[]> {
  const until = Date.now() + 5000;
  while (Date.now() < until) {
    const pids = preparedFor(dir);
    if (pids.length >= 3) return pids;
    await Bun.sleep(5);
  }
  throw new Error(`no process was prepared for ${dir}`);
}

async function gone(pids: number[]): Promise<number[]> {
  const until = Date.now() + 5000;
  let left = pids;
  while ((left = pids.filter((pid) => existsSync(`/proc/${pid}`))).length > 0 && Date.now() < until) await Bun.sleep(10);
  return left;
}

/** Seconds since boot in clock ticks, as /proc/PID/stat gives a process's start. */
function uptimeTicks(): number {
  return Number(readFileSync('/proc/uptime', 'latin1').split(' ')[0]) * CLOCK_TICKS;
}

run('the held sandbox prepares the next command', () => {
  const current = useFixtureScope();

  test('a command after an idle moment runs in the process started before it came, as a command started then would', async () => {
    const exec = await runExecutor(current.fx, current.scope);
    await untilHeld(exec);
    await prepared(current.fx.ws);
    // Well past the tick the prepared process started in.
    await Bun.sleep(50);
    const before = uptimeTicks();
    const used = preparedCounts.used;
    const result = await exec(
      [
        "cut -d' ' -f22 /proc/$$/stat",
        'printf "%s|%s\\n" "$0" "$PWD"',
        'ls /proc/$$/fd',
        'grep -E "^(CapEff|NoNewPrivs|Seccomp):" /proc/self/status',
        'readlink /proc/self/ns/pid',
        'echo "uid $(id -u)"; echo err >&2; exit 3',
      ].join('; '),
    );
    expect(preparedCounts.used).toBe(used + 1);
    const [started, ...rest] = result.output.split('\n');
    // The shell's process was forked before the command was given: it is the prepared one.
    expect(Number(started)).toBeLessThan(before);
    const out = rest.join('\n');
    expect(out).toContain(`/bin/sh|${current.fx.ws}\n`);
    // Nothing of conch's beyond stdio, neither the gate nor the script's descriptor.
    expect(out).toMatch(/^0\n1\n2\n/m);
    expect(out).toContain('CapEff:\t0000000000000000');
    expect(out).toContain('NoNewPrivs:\t1');
    expect(out).toContain('Seccomp:\t2');
    expect(out).toContain(`uid ${process.getuid!()}`);
    expect(out.endsWith('err\n')).toBe(true);
    expect(result.exitCode).toBe(3);
    expect(result.cleanupError).toBeUndefined();
    // The same held sandbox as a command started as usual.
    const ns = /pid:\[\d+\]/.exec(out)![0];
    const usual = await exec(`readlink /proc/self/ns/pid; : ${'x'.repeat(17 * 1024)}`);
    expect(usual.output.trim()).toBe(ns);
  });

  test('a command in another directory or with another environment starts as usual and runs there', async () => {
    const exec = await runExecutor(current.fx, current.scope);
    await untilHeld(exec);
    const forWs = await prepared(current.fx.ws);
    const used = preparedCounts.used;
    const src = join(current.fx.ws, 'src');
    expect((await exec('pwd; echo "[$CONCH_TASK_X]"', undefined, 'src')).output).toBe(`${src}\n[]\n`);
    expect(preparedCounts.used).toBe(used);
    // Given no command, it ran none and ended by itself; the next one is prepared for src.
    expect(await gone(forWs)).toEqual([]);
    await prepared(src);
    // The same run, another environment: what the process was prepared with must not reach it.
    const other = await runExecutor(current.fx, current.scope, { env: { CONCH_TASK_X: 'other' } });
    expect((await other('pwd; echo "[$CONCH_TASK_X]"', undefined, 'src')).output).toBe(`${src}\n[other]\n`);
    expect(preparedCounts.used).toBe(used);
    await prepared(src);
    expect((await exec('pwd; echo "[$CONCH_TASK_X]"', undefined, 'src')).output).toBe(`${src}\n[]\n`);
    expect(preparedCounts.used).toBe(used);
    await prepared(src);
    expect((await exec('pwd; echo "[$CONCH_TASK_X]"', undefined, 'src')).output).toBe(`${src}\n[]\n`);
    expect(preparedCounts.used).toBe(used + 1);
  });

  test('quotes, backslashes, newlines and a syntax error reach the shell as written; a long command starts as usual', async () => {
    const exec = await runExecutor(current.fx, current.scope);
    await untilHeld(exec);
    const host = (command: string) => {
      const child = Bun.spawnSync(['/bin/sh', '-c', command], { env: {}, stderr: 'pipe' });
      return child.stdout.toString() + child.stderr.toString();
    };
    const tricky = [`printf '[%s]\\n' 'it'"'"'s' 'a\\b' '$HOME' "tab\there" ''`, `echo "two"; echo '\\' "\\$(x)"`, 'echo three'].join('\n');
    const broken = ['echo a', 'echo b', 'if then fi'].join('\n');
    for (const command of [tricky, broken]) {
      await prepared(current.fx.ws);
      const used = preparedCounts.used;
      const result = await exec(command);
      expect(preparedCounts.used).toBe(used + 1);
      expect(result.output).toBe(host(command));
    }
    await prepared(current.fx.ws);
    const used = preparedCounts.used;
    const long = `: ${'y'.repeat(17 * 1024)}; echo long`;
    const result = await exec(long);
    expect(result.output).toBe('long\n');
    expect(result.exitCode).toBe(0);
    expect(preparedCounts.used).toBe(used);
    // Just under the limit, quotes and all.
    await prepared(current.fx.ws);
    const near = `echo "${"'".repeat(3000)}" | wc -c`;
    expect((await exec(near)).output.trim()).toBe('3001');
    expect(preparedCounts.used).toBe(used + 1);
  });

  test('its output, exit code, timeout and teardown are those of a command started as usual', async () => {
    const exec = await runExecutor(current.fx, current.scope);
    await untilHeld(exec);
    await prepared(current.fx.ws);
    const used = preparedCounts.used;
    const ended = await exec('echo out; echo err >&2; exit 7');
    expect(ended.output).toBe('out\nerr\n');
    expect(ended.exitCode).toBe(7);
    await prepared(current.fx.ws);
    const timed = await exec('sleep 305.5 & sleep 306.5', 300);
    expect(preparedCounts.used).toBe(used + 2);
    expect(timed.timedOut).toBe(true);
    expect(timed.cleanupError).toBeUndefined();
    expect(await lingering('sleep 305.5')).toEqual([]);
    expect(await lingering('sleep 306.5')).toEqual([]);
    // Left behind by a command that returned: the sandbox ends, the prepared process with it.
    const left = await exec('setsid sleep 307.5 >/dev/null 2>&1 & echo started');
    expect(left.output).toBe('started\n');
    expect(await lingering('sleep 307.5')).toEqual([]);
    expect((await exec('echo next')).output).toBe('next\n');
  });

  test('nothing of a prepared process outlives the run, not even a zombie', async () => {
    const exec = await runExecutor(current.fx, current.scope);
    await untilHeld(exec);
    const pids = await prepared(current.fx.ws);
    current.scope.close();
    expect(await gone(pids)).toEqual([]);
    expect(preparedFor(current.fx.ws)).toEqual([]);
  });

  test('a command that fails the checks is not given the prepared process, which goes with its sandbox', async () => {
    const exec = await runExecutor(current.fx, current.scope);
    await untilHeld(exec);
    const pids = await prepared(current.fx.ws);
    const used = preparedCounts.used;
    writeFileSync(join(current.fx.ws, '.env.saved'), 'SECRET=2\n');
    renameSync(join(current.fx.ws, '.env.saved'), join(current.fx.ws, '.env'));
    const result = await exec('echo hijacked > .env; cat .env');
    expect(result.output).toContain('Read-only file system');
    expect(preparedCounts.used).toBe(used);
    expect(await gone(pids)).toEqual([]);
    expect(readFileSync(join(current.fx.ws, '.env'), 'utf8')).toBe('SECRET=2\n');
    // Planted in /dev by a command: the prepared process that follows it has the same /dev.
    await untilHeld(exec);
    await exec('echo x > /dev/shm/planted');
    const after = await prepared(current.fx.ws);
    const usedAfter = preparedCounts.used;
    expect((await exec('ls /dev/shm; echo end')).output).toBe('end\n');
    expect(preparedCounts.used).toBe(usedAfter);
    expect(await gone(after)).toEqual([]);
  });
});
