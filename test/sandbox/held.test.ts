// The run's held sandbox (src/sandbox/held.ts): commands after the first join one sandbox set up
// once. Real bwrap and nsenter; each case is something a sandbox per command gave and this must too.
import { describe, expect, test } from 'bun:test';
import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { PlaceholderScope } from '../../src/sandbox/index.ts';
import { heldAvailable } from '../../src/sandbox/held.ts';
import { canRun, fixture, useFixtureScope } from './harness.ts';
import { hostProcesses, lingering, runExecutor, untilHeld } from './held-harness.ts';

const run = canRun && heldAvailable() ? describe : describe.skip;
if (canRun && !heldAvailable()) console.warn('\n*** nsenter not found: the held sandbox tests are SKIPPED ***\n');

run('the held sandbox', () => {
  const current = useFixtureScope();

  test('serves the commands after the first, with every protection of a sandbox of their own', async () => {
    const exec = await runExecutor(current.fx, current.scope);
    await untilHeld(exec);
    const result = await exec(
      [
        'echo x > .env; echo x > .git/config; touch .env.local; echo ok > src/new.txt',
        'grep -E "^(CapEff|NoNewPrivs|Seccomp):" /proc/self/status',
        // Per process (sysfs shows the host's devices in every sandbox: it is the host's mount).
        "cut -d: -f1 /proc/net/dev | tail -n +3 | tr -d ' '",
        'cat /proc/1/environ | wc -c',
        'ls /proc/$$/fd',
        'echo "uid $(id -u) gid $(id -g)"',
      ].join('; '),
    );
    // The user, as in a sandbox of its own (bwrap's outer namespace maps the user to root).
    expect(result.output).toContain(`uid ${process.getuid!()} gid ${process.getgid!()}`);
    expect(result.output).toContain('.env: Read-only file system');
    expect(result.output).toContain('.git/config: Read-only file system');
    expect(result.output).toMatch(/\.env\.local': (Permission denied|Read-only file system)/);
    expect(result.output).toContain('CapEff:\t0000000000000000');
    expect(result.output).toContain('NoNewPrivs:\t1');
    expect(result.output).toContain('Seccomp:\t2');
    // --no-network: the held network namespace has only its loopback.
    expect(result.output).toMatch(/^lo$/m);
    expect(result.output).not.toMatch(/^(eth|en|wl)/m);
    // The sandbox's first process was started with nothing in its environment to read.
    expect(result.output).toMatch(/^0$/m);
    // No descriptor of conch's beyond stdio reaches the command (the /proc one is closed first).
    expect(result.output).toMatch(/^0\n1\n2\n/m);
    expect(readFileSync(join(current.fx.ws, '.env'), 'utf8')).toBe('SECRET=1\n');
    expect(readFileSync(join(current.fx.ws, 'src', 'new.txt'), 'utf8')).toBe('ok\n');
  });

  test('a process a command leaves behind is gone when the command returns, setsid or not', async () => {
    const exec = await runExecutor(current.fx, current.scope);
    const ns = await untilHeld(exec);
    const result = await exec('sleep 301.5 >/dev/null 2>&1 & setsid sleep 302.5 >/dev/null 2>&1 & echo started');
    expect(result.output.trim()).toBe('started');
    expect(result.cleanupError).toBeUndefined();
    expect(await lingering('sleep 301.5')).toEqual([]);
    expect(await lingering('sleep 302.5')).toEqual([]);
    // The sandbox that held them went with them; the next command runs in a fresh one.
    const next = await exec('readlink /proc/self/ns/pid; ls /proc | grep -c "^[0-9]"');
    expect(next.exitCode).toBe(0);
    expect(next.output).not.toContain(ns);
  });

  test('a command that times out takes its background processes with it', async () => {
    const exec = await runExecutor(current.fx, current.scope);
    await untilHeld(exec);
    const result = await exec('sleep 303.5 & sleep 304.5', 500);
    expect(result.timedOut).toBe(true);
    // Gone with the sandbox, not found later holding the output as escapees.
    expect(result.cleanupError).toBeUndefined();
    expect(await lingering('sleep 303.5')).toEqual([]);
    expect(await lingering('sleep 304.5')).toEqual([]);
  });

  test('a protected file replaced on the host (an editor saving .env by rename) stays read-only', async () => {
    const exec = await runExecutor(current.fx, current.scope);
    await untilHeld(exec);
    writeFileSync(join(current.fx.ws, '.env.saved'), 'SECRET=2\n');
    renameSync(join(current.fx.ws, '.env.saved'), join(current.fx.ws, '.env'));
    const result = await exec('echo hijacked > .env; cat .env');
    expect(result.output).toContain('Read-only file system');
    expect(readFileSync(join(current.fx.ws, '.env'), 'utf8')).toBe('SECRET=2\n');
  });

  test('a .git directory swapped on the host between commands stays read-only', async () => {
    const exec = await runExecutor(current.fx, current.scope);
    await untilHeld(exec);
    renameSync(join(current.fx.ws, '.git'), join(current.fx.ws, 'old-git'));
    // The same entries as before, so that only the directory's identity differs.
    mkdirSync(join(current.fx.ws, '.git'));
    writeFileSync(join(current.fx.ws, '.git', 'HEAD'), 'ref: refs/heads/main\n');
    writeFileSync(join(current.fx.ws, '.git', 'config'), '[core]\n');
    const result = await exec('echo "[core] fsmonitor = evil" > .git/config');
    expect(result.output).toContain('Read-only file system');
    expect(readFileSync(join(current.fx.ws, '.git', 'config'), 'utf8')).toBe('[core]\n');
  });

  test('two commands at once each run, one of them in a sandbox of its own', async () => {
    const exec = await runExecutor(current.fx, current.scope);
    await untilHeld(exec);
    const [a, b] = await Promise.all([exec('sleep 0.3; echo a > .env; echo A'), exec('sleep 0.3; echo b > .env; echo B')]);
    expect(a.output).toContain('A');
    expect(b.output).toContain('B');
    expect(a.output).toContain('Read-only file system');
    expect(b.output).toContain('Read-only file system');
  });

  test('the run ending ends its held sandbox', async () => {
    const exec = await runExecutor(current.fx, current.scope);
    await untilHeld(exec);
    const holders = () => hostProcesses(`--chdir / -- /bin/sh -c echo; read _`).filter((pid) => readFileSync(`/proc/${pid}/cmdline`, 'latin1').includes(current.fx.ws));
    expect(holders().length).toBeGreaterThan(0);
    current.scope.close();
    const until = Date.now() + 5000;
    while (holders().length > 0 && Date.now() < until) await Bun.sleep(10);
    expect(holders()).toEqual([]);
  });

  // Attacks: what a command could not do with a sandbox of its own, and must not in the held one.
  test('a hidden file replaced on the host (a credential rewritten by rename) stays hidden', async () => {
    const secret = join(current.fx.outside, 'credentials');
    writeFileSync(secret, 'token=old\n');
    const exec = await runExecutor(current.fx, current.scope, { hidden: [secret] });
    await untilHeld(exec);
    expect((await exec(`cat ${secret}; echo end`)).output).toBe('end\n');
    // What git credential-store, docker login or an editor do: a new file renamed over the old one.
    writeFileSync(`${secret}.lock`, 'token=new\n');
    renameSync(`${secret}.lock`, secret);
    const result = await exec(`cat ${secret}; echo end`);
    expect(result.output).not.toContain('token=new');
    expect(result.output).toBe('end\n');
  });

  test('a directory renamed above a mount point inside the sandbox does not move the next command elsewhere', async () => {
    // The fixture's workspace is /tmp/conch-sbx-X/ws: inside, /tmp is the run's temp dir, and
    // /tmp/conch-sbx-X a directory bwrap made there for the mount point, which a command can rename.
    const exec = await runExecutor(current.fx, current.scope);
    await untilHeld(exec);
    const moved = await exec('d=$(dirname "$PWD"); mv "$d" "$d.moved" && mkdir -p "$PWD/.git/hooks" && echo fake > "$PWD/.git/config" && echo moved');
    expect(moved.output).toContain('moved');
    const next = await exec('pwd; echo real > src/after.txt; cat .git/config');
    expect(next.exitCode).toBe(0);
    expect(next.output).not.toContain('fake');
    expect(existsSync(join(current.fx.ws, 'src', 'after.txt'))).toBe(true);
    expect(readFileSync(join(current.fx.ws, 'src', 'after.txt'), 'utf8')).toBe('real\n');
  });

  test('a directory renamed above a mount point while the held sandbox starts does not become its baseline', async () => {
    // The run's second command starts the held sandbox and runs in a sandbox of its own meanwhile:
    // the held one's mounts are in place by the time it runs, and its mount table used to be read
    // only after its first check. Renamed in between, the moved table was what every later command
    // was compared to, and each of them ran in the fake workspace left at the old path.
    // A race, though one the command wins most of the time: a few runs, each with its own sandbox.
    for (let attempt = 0; attempt < 5; attempt++) {
      const run = new PlaceholderScope();
      try {
        const exec = await runExecutor(current.fx, run);
        await exec('true');
        const moved = await exec('d=$(dirname "$PWD"); mv "$d" "$d.moved.$$" && mkdir -p "$PWD/.git" && echo fake > "$PWD/.git/config" && echo moved');
        expect(moved.output).toContain('moved');
        await untilHeld(exec);
        const next = await exec(`echo ${attempt} > src/after.txt; cat .git/config`);
        expect(next.output).not.toContain('fake');
        expect(readFileSync(join(current.fx.ws, 'src', 'after.txt'), 'utf8')).toBe(`${attempt}\n`);
      } finally {
        run.close();
      }
    }
  });

  test('what a command leaves in /dev, /dev/shm or System V IPC is not there for the next one', async () => {
    const exec = await runExecutor(current.fx, current.scope);
    await untilHeld(exec);
    const left = await exec(
      [
        'echo planted > /dev/shm/left',
        'rm -f /dev/stdout && ln -s /tmp/captured /dev/stdout',
        `${Bun.which('ipcmk') ?? 'false'} -M 4096 >/dev/null && echo segment`,
      ].join('; '),
    );
    expect(left.output).toContain(Bun.which('ipcmk') ? 'segment' : '');
    const next = await exec('ls /dev/shm; readlink /dev/stdout; grep -c . /proc/sysvipc/shm');
    expect(next.output).not.toContain('left');
    expect(next.output).toContain('/proc/self/fd/1');
    expect(next.output).not.toContain('/tmp/captured');
    // The header line only.
    expect(next.output).toMatch(/^1$/m);
  });
  test('no command can signal the holder: the sandbox outlives a kill, a stop and a change of priority', async () => {
    // The holder is the sandbox's pid 1 (bwrap --as-pid-1), to which the kernel delivers no signal
    // from inside its namespace. As a plain child of pid 1 (the same user), a command could SIGKILL
    // it as it exits: the sandbox then died under the next command, which failed to join it or was
    // killed with no output (a red team's finding, the moment made long at idle priority on one CPU).
    const exec = await runExecutor(current.fx, current.scope);
    const ns = await untilHeld(exec);
    for (let i = 0; i < 10; i++) {
      const attack = await exec('chrt -i -p 0 1; taskset -p 1 1 >/dev/null; kill -9 1 2; kill -STOP 1 2; echo sent');
      expect(attack.cleanupError).toBeUndefined();
      const next = await exec('readlink /proc/self/ns/pid; grep State /proc/1/status');
      expect(next.exitCode).toBe(0);
      // The same sandbox, its holder asleep on its pipe as before.
      expect(next.output).toContain(ns);
      expect(next.output).toMatch(/State:\s+S/);
    }
  });
});
