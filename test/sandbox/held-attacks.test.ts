// Attacks on the held sandbox's prepared process (held.ts) by the commands of a run: each is an
// attempt a model's command can make, and what must come of it. Real bwrap and nsenter.
import { describe, expect, test } from 'bun:test';
import { existsSync, mkdirSync, readdirSync, readFileSync, readlinkSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { heldAvailable, preparedCounts } from '../../src/sandbox/held.ts';
import { canRun, py, PYTHON, snapshotAll, useFixtureScope } from './harness.ts';
import { hostProcesses, lingering, runExecutor, untilHeld } from './held-harness.ts';

const run = canRun && heldAvailable() ? describe : describe.skip;

/** The host pids of a process prepared for commands in `dir`. */
async function prepared(dir: string): Promise<number[]> {
  const until = Date.now() + 5000;
  while (Date.now() < until) {
    const pids = hostProcesses(`--chdir ${dir} -- /bin/sh /proc/self/fd/8`);
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

/** A shell loop over the sandbox's processes that are the prepared one's (its script is fd 8), not the command's own. */
const EACH_PREPARED = String.raw`for p in /proc/[0-9]*; do
  p=$(basename $p); [ "$p" = $$ ] && continue
  case "$(tr '\0' ' ' < /proc/$p/cmdline 2>/dev/null)" in '/bin/sh /proc/self/fd/8 '|*' -- /bin/sh /proc/self/fd/8 ') ;; *) continue;; esac`;

run('a command against the held sandbox and its prepared process', () => {
  const current = useFixtureScope();

  test('cannot end, stop or feed the holder: the next command runs in the same sandbox', async () => {
    const exec = await runExecutor(current.fx, current.scope);
    const ns = await untilHeld(exec);
    await prepared(current.fx.ws);
    const attack = await exec(
      [
        'kill -KILL 1; kill -STOP 1; kill -TERM 1; kill -HUP 1',
        // A line on its stdin would end its `read` (opened through /proc: a pipe opens either way).
        '(echo > /proc/1/fd/0) 2>&1 | grep -c denied',
        'readlink /proc/1/fd/0 || echo unreadable',
        'grep State /proc/1/status',
      ].join('; '),
    );
    expect(attack.output).toContain('unreadable');
    expect(attack.output).toMatch(/^1$/m);
    expect(attack.output).toMatch(/State:\s+S/);
    expect((await exec('readlink /proc/self/ns/pid')).output.trim()).toBe(ns);
  });

  for (const slow of [false, true]) {
    test(`given up for another cwd, the prepared process cannot be read or fed a script${slow ? ' (held up until the command is done)' : ''}`, async () => {
      const exec = await runExecutor(current.fx, current.scope, { env: { CONCH_TASK_KEY: 'prepared-secret' } });
      await untilHeld(exec);
      await exec('true');
      const pids = await prepared(current.fx.ws);
      const used = preparedCounts.used;
      // A loaded machine may not run it to its end before the command is in: stopped from here, it
      // is there for the command to find for as long as that runs.
      if (slow) for (const pid of pids) process.kill(pid, 'SIGSTOP');
      // In src: the one prepared for the workspace's root is let go as this command starts, and this
      // command runs beside it while it ends.
      const attack = await exec(
        String.raw`end=$(($(date +%s) + 1)); seen=0
while [ $(date +%s) -le $end ]; do
  ${EACH_PREPARED}
  seen=1
  tr '\0' '\n' < /proc/$p/environ 2>/dev/null | grep CONCH_TASK_KEY
  readlink /proc/$p/cwd 2>/dev/null
  for fd in 7 8; do (printf '\ntouch hijacked-%s\n' $fd > /proc/$p/fd/$fd) 2>/dev/null && echo "wrote $p/$fd"; done
  kill -STOP $p 2>/dev/null && echo "stopped $p"
  done
done; echo "seen $seen"`,
        undefined,
        'src',
      );
      if (slow) for (const pid of pids) process.kill(pid, 'SIGCONT');
      expect(preparedCounts.used).toBe(used);
      expect(attack.output).not.toContain('prepared-secret');
      expect(attack.output).not.toContain('wrote');
      expect(attack.output).toContain(slow ? 'seen 1' : 'seen');
      if (process.env.ATK_DEBUG) console.log(attack.output);
      // Let go on (the command's own stop is undone with the test's, though nsenter, which stops
      // itself when its child stops, may see that only after), it runs no script; by the next
      // command it is gone or its sandbox ends.
      const after = await exec('ls; ls src');
      // nsenter stops itself when its child stops, and on a loaded machine may do so only after the
      // next command's check: a later command's check catches it, and its sandbox ends (held.ts).
      let left = await gone(pids);
      for (let i = 0; i < 3 && left.length > 0; i++) {
        expect((await exec('ls src')).output).not.toContain('hijacked');
        left = await gone(pids);
      }
      expect(left).toEqual([]);
      expect(after.output).not.toContain('hijacked');
      expect(readdirSync(current.fx.ws).filter((name) => name.startsWith('hijacked'))).toEqual([]);
    });
  }

  test('a process let go that a command kept from ending takes its sandbox with it before the next command', async () => {
    const exec = await runExecutor(current.fx, current.scope);
    const ns = await untilHeld(exec);
    await exec('true');
    const pids = await prepared(current.fx.ws);
    // Its processes inside the sandbox (nsenter is outside, out of a command's sight), held up from
    // here: as a loaded machine can leave them, for the command below to find and stop for good.
    const inside = pids.filter((pid) => !readFileSync(`/proc/${pid}/cmdline`, 'latin1').startsWith('/usr/bin/nsenter'));
    expect(inside.length).toBe(2);
    for (const pid of inside) process.kill(pid, 'SIGSTOP');
    const attack = await exec(`${EACH_PREPARED}\n  kill -STOP $p && echo "stopped"\ndone`, undefined, 'src');
    expect(attack.output).toBe('stopped\nstopped\n');
    // Still there (stopped by the command as well as from here), it ran nothing, but it is not the
    // holder's: only the sandbox's end can take it, and no later command may share it with it.
    const next = await exec('readlink /proc/self/ns/pid');
    expect(next.output.trim()).not.toBe(ns);
    expect(await gone(pids)).toEqual([]);
  });

  test('what a command leaves running, however it hides, never meets a prepared process', async () => {
    const exec = await runExecutor(current.fx, current.scope);
    const ns = await untilHeld(exec);
    await prepared(current.fx.ws);
    // Out of the session, out of the group, its descriptors closed, twice forked, and a zombie.
    const left = await exec(
      `(setsid sh -c 'exec </dev/null >/dev/null 2>&1 3>&- 4>&- 5>&-; sleep 308.5' &) ; sh -c 'sleep 0 & exec sleep 309.5' >/dev/null 2>&1 & echo left`,
    );
    expect(left.output).toBe('left\n');
    expect(await lingering('sleep 308.5')).toEqual([]);
    expect(await lingering('sleep 309.5')).toEqual([]);
    const next = await exec('readlink /proc/self/ns/pid; ps -eo args | grep -c "sleep 30[89]"');
    expect(next.output.split('\n')[0]).not.toBe(ns);
    expect(next.output.split('\n')[1]).toBe('0');
  });

  test('a cwd swapped for a link out of the workspace after the process was prepared for it is refused', async () => {
    const exec = await runExecutor(current.fx, current.scope);
    await untilHeld(exec);
    await exec('true', undefined, 'src');
    await prepared(join(current.fx.ws, 'src'));
    const used = preparedCounts.used;
    // Run in src itself, in the process prepared for it; the next one is prepared for src again.
    const swap = await exec(`cd .. && mv src src.old && ln -s ${current.fx.outside} src && echo swapped`, undefined, 'src');
    expect(swap.output).toBe('swapped\n');
    expect(preparedCounts.used).toBe(used + 1);
    await prepared(join(current.fx.ws, 'src'));
    const inSrc = await exec('pwd; ls', undefined, 'src');
    expect((inSrc as { denied?: { rule: string } }).denied?.rule).toBe('workspace.outside');
    expect(inSrc.output).not.toContain('file');
    expect(preparedCounts.used).toBe(used + 1);
  });

  test('a cwd replaced on the host after the process was prepared for it: the command runs in the new one', async () => {
    const exec = await runExecutor(current.fx, current.scope);
    await untilHeld(exec);
    await exec('true', undefined, 'src');
    await prepared(join(current.fx.ws, 'src'));
    const used = preparedCounts.used;
    renameSync(join(current.fx.ws, 'src'), join(current.fx.ws, 'src.old'));
    mkdirSync(join(current.fx.ws, 'src'));
    writeFileSync(join(current.fx.ws, 'src', 'new.txt'), 'new\n');
    const result = await exec('pwd; ls; echo made > here.txt', undefined, 'src');
    expect(preparedCounts.used).toBe(used + 1);
    expect(result.output).toBe(`${join(current.fx.ws, 'src')}\nnew.txt\n`);
    expect(readFileSync(join(current.fx.ws, 'src', 'here.txt'), 'utf8')).toBe('made\n');
    expect(existsSync(join(current.fx.ws, 'src.old', 'here.txt'))).toBe(false);
  });

  test('nothing of the run is left in conch when it ends: no descriptor, no process', async () => {
    const fds = () => readdirSync('/proc/self/fd').map((fd) => { try { return readlinkSync(`/proc/self/fd/${fd}`); } catch { return '?'; } });
    const before = fds();
    const exec = await runExecutor(current.fx, current.scope);
    await untilHeld(exec);
    for (const cwd of ['.', 'src', 'src', '.', '.']) {
      await Bun.sleep(20);
      await exec('echo x', undefined, cwd);
    }
    await prepared(current.fx.ws);
    expect(hostProcesses(current.fx.ws).length).toBeGreaterThan(0);
    current.scope.close();
    const until = Date.now() + 5000;
    while ((hostProcesses(current.fx.ws).length > 0 || hostProcesses('echo; read _').length > 0) && Date.now() < until) await Bun.sleep(10);
    expect(hostProcesses(current.fx.ws)).toEqual([]);
    await Bun.sleep(50);
    const after = fds();
    const added = after.filter((fd) => !before.includes(fd));
    expect(added).toEqual([]);
    expect(after.length).toBeLessThanOrEqual(before.length);
  });

  // The battery's attacks, each run in a prepared process and in a sandbox of its own: the same must come of both.
  const attacks: [string, string][] = [
    ['write outside', 'echo x >> OUTSIDE/file; echo x > OUTSIDE/new; echo $?'],
    ['write the repository config and hooks', 'echo x >> .git/config; echo x > .git/hooks/pre-commit; chmod +x .git/hooks/x 2>&1; echo $?'],
    ['replace .env', 'echo x > .env; mv .env gone; rm -f .env; ln -sf /etc/passwd .env; cat .env'],
    ['write the system and home', 'touch /etc/conch-x /usr/conch-x "$HOME/conch-x" 2>&1 | sed "s/^.*: //" | sort | uniq -c'],
    ['new namespaces and mounts', 'unshare -U true; unshare -rm true; mount -t tmpfs none src; umount /tmp 2>&1; echo $?'],
    ['capabilities and credentials', 'grep -E "^(Cap|NoNewPrivs|Seccomp)" /proc/self/status; id -u; id -g'],
    ['the network', 'ls /sys/class/net; cat /proc/net/route | wc -l'],
    ['environment, signals and limits', 'env | sort; grep -E "^Sig(Blk|Ign)" /proc/self/status; umask; ulimit -a; cat /proc/self/oom_score_adj; ps -o pgid=,sid=,tty= -p $$ | tr -s " " | sed "s/[0-9][0-9]*/N/g"'],
    ['what is left for the next one', 'ls -a /tmp /dev/shm; ipcs -m 2>/dev/null | grep -c "^0x" ; echo done'],
  ];
  if (PYTHON) {
    attacks.push(['ptrace and process memory', py('import ctypes\nlibc = ctypes.CDLL(None, use_errno=True)\nprint(libc.ptrace(0, 0, 0, 0), ctypes.get_errno())\nprint(libc.syscall(310, 1, 0, 0, 0, 0, 0), ctypes.get_errno())')]
    );
  }
  for (const [name, attack] of attacks) {
    test(`in a prepared process as in a sandbox of its own: ${name}`, async () => {
      const command = attack.replaceAll('OUTSIDE', current.fx.outside);
      const exec = await runExecutor(current.fx, current.scope);
      await untilHeld(exec);
      await exec('true');
      await prepared(current.fx.ws);
      const before = snapshotAll(current.fx);
      const used = preparedCounts.used;
      const inPrepared = await exec(command);
      expect(preparedCounts.used).toBe(used + 1);
      const afterPrepared = snapshotAll(current.fx);
      process.env.CONCH_SANDBOX_PER_COMMAND = '1';
      let ownSandbox;
      try {
        ownSandbox = await exec(command);
      } finally {
        delete process.env.CONCH_SANDBOX_PER_COMMAND;
      }
      expect(preparedCounts.used).toBe(used + 1);
      expect(inPrepared.output.replaceAll(/pid:\[\d+\]/g, '')).toBe(ownSandbox.output.replaceAll(/pid:\[\d+\]/g, ''));
      expect(inPrepared.exitCode).toBe(ownSandbox.exitCode);
      expect(afterPrepared).toBe(before);
      expect(snapshotAll(current.fx)).toBe(before);
      if (process.env.ATK_DEBUG) console.log(name, inPrepared.output);
    });
  }
});
