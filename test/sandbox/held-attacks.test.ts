// Attacks on the run's held sandbox (src/sandbox/held.ts): each case is something a command could
// not do with a sandbox of its own, and must not be able to do in the held one either.
import { afterEach, beforeEach, describe, expect, test } from 'bun:test';
import { existsSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { PlaceholderScope } from '../../src/sandbox/index.ts';
import { heldAvailable } from '../../src/sandbox/held.ts';
import { canRun, fixture, type Fixture } from './harness.ts';
import { hostProcesses, runExecutor, untilHeld } from './held-harness.ts';

const run = canRun && heldAvailable() ? describe : describe.skip;

run('attacks on the held sandbox', () => {
  let fx: Fixture;
  let scope: PlaceholderScope;
  beforeEach(() => {
    fx = fixture();
    scope = new PlaceholderScope();
  });
  afterEach(() => {
    scope.close();
    fx.cleanup();
  });

  test('a hidden file replaced on the host (a credential rewritten by rename) stays hidden', async () => {
    const secret = join(fx.outside, 'credentials');
    writeFileSync(secret, 'token=old\n');
    const exec = await runExecutor(fx, scope, { hidden: [secret] });
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
    const exec = await runExecutor(fx, scope);
    await untilHeld(exec);
    const moved = await exec('d=$(dirname "$PWD"); mv "$d" "$d.moved" && mkdir -p "$PWD/.git/hooks" && echo fake > "$PWD/.git/config" && echo moved');
    expect(moved.output).toContain('moved');
    const next = await exec('pwd; echo real > src/after.txt; cat .git/config');
    expect(next.exitCode).toBe(0);
    expect(next.output).not.toContain('fake');
    expect(existsSync(join(fx.ws, 'src', 'after.txt'))).toBe(true);
    expect(readFileSync(join(fx.ws, 'src', 'after.txt'), 'utf8')).toBe('real\n');
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
        const exec = await runExecutor(fx, run);
        await exec('true');
        const moved = await exec('d=$(dirname "$PWD"); mv "$d" "$d.moved.$$" && mkdir -p "$PWD/.git" && echo fake > "$PWD/.git/config" && echo moved');
        expect(moved.output).toContain('moved');
        await untilHeld(exec);
        const next = await exec(`echo ${attempt} > src/after.txt; cat .git/config`);
        expect(next.output).not.toContain('fake');
        expect(readFileSync(join(fx.ws, 'src', 'after.txt'), 'utf8')).toBe(`${attempt}\n`);
      } finally {
        run.close();
      }
    }
  });

  test('what a command leaves in /dev, /dev/shm or System V IPC is not there for the next one', async () => {
    const exec = await runExecutor(fx, scope);
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
    const exec = await runExecutor(fx, scope);
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
