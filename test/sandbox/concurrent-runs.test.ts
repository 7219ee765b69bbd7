// Two conch processes in one workspace: each run's protection of absent names holds until its own
// last command ends, whichever run started first or ends first, and no placeholder outlives the
// last run that needs it. Real CLI processes (`conch sandbox run`), real bwrap, host checked after.
import { afterEach, beforeEach, describe, expect, test } from 'bun:test';
import { existsSync, mkdirSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { heldAvailable } from '../../src/sandbox/held.ts';
import { PlaceholderScope } from '../../src/sandbox/index.ts';
import { canRun, fixture, snapshotAll, type Fixture } from './harness.ts';
import { runExecutor, untilHeld } from './held-harness.ts';

const REPO = resolve(import.meta.dir, '../..');
const uid = process.getuid?.() ?? 0;
const FILES = ['.env.local', '.env.development', '.env.production', '.env.test', '.env.staging', '.env.test.local'];

let fx: Fixture;
let state: string;
const children: Bun.Subprocess[] = [];
beforeEach(() => {
  fx = fixture();
  state = join(fx.root, 'state');
  mkdirSync(state);
});
afterEach(async () => {
  for (const child of children.splice(0)) {
    child.kill('SIGKILL');
    await child.exited;
  }
  fx.cleanup();
});

/** `conch sandbox run -- sh -c SCRIPT` in the workspace, with a state directory of this test's own. */
function run(script: string, tmpdir = state) {
  const child = Bun.spawn([join(REPO, 'bin/conch'), 'sandbox', 'run', '--', 'sh', '-c', script], {
    cwd: fx.ws,
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin', TMPDIR: tmpdir, HOME: fx.root, CONCH_FROM_SOURCE: '1' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.push(child);
  return { child, out: Promise.all([new Response(child.stdout).text(), new Response(child.stderr).text(), child.exited]) };
}

/** Keep trying to create every protected name, `rounds` times 50 ms apart; print what got through. */
function attacker(rounds: number): string {
  const files = FILES.map((name) => `(echo X=1 > ${name}) 2>/dev/null && echo "CREATED ${name}";`).join(' ');
  return (
    `i=0; while [ $i -lt ${rounds} ]; do ${files} ` +
    `mkdir -p .conch/tools 2>/dev/null && echo "CREATED .conch/tools"; ` +
    `(echo '{}' > .conch/config.json) 2>/dev/null && echo "CREATED .conch/config.json"; ` +
    `i=$((i+1)); sleep 0.05; done; echo DONE`
  );
}

async function waitFor(check: () => boolean): Promise<void> {
  for (let i = 0; i < 400 && !check(); i++) await Bun.sleep(25);
  expect(check()).toBe(true);
}

describe.skipIf(!canRun)('two conch runs in one workspace', () => {
  test('the second run stays protected after the first ends (early and late attempts), and nothing is left', async () => {
    const before = snapshotAll(fx);
    // The first ends only once the second's command runs (a fixed sleep let a slow start of the
    // second begin after the first had ended), half a second into the second's attempts.
    const first = run('while [ ! -e src/second-started ]; do sleep 0.05; done; sleep 0.5');
    await waitFor(() => existsSync(join(fx.ws, '.env.local')));
    // Starts while the first runs: finds the first run's placeholders already there.
    const second = run(`: > src/second-started; ${attacker(80)}`);
    const [, firstErr, firstCode] = await first.out;
    expect({ firstCode, firstErr }).toEqual({ firstCode: 0, firstErr: '' });
    // The first run is over; the second still runs and is still trying (about 2.5 s more).
    for (const name of FILES) expect({ name, there: existsSync(join(fx.ws, name)) }).toEqual({ name, there: true });
    const [stdout, stderr, code] = await second.out;
    expect({ code, stderr }).toEqual({ code: 0, stderr: '' });
    expect(stdout.trim()).toBe('DONE'); // not one CREATED line
    rmSync(join(fx.ws, 'src', 'second-started'));
    expect(snapshotAll(fx)).toBe(before); // the placeholders went with the last run
    expect(readdirSync(join(state, `conch-${uid}`, 'placeholders'))).toEqual([]);
  }, 30_000);

  test('the first run stays protected when a second run starts and ends meanwhile', async () => {
    const before = snapshotAll(fx);
    const first = run(attacker(50));
    await waitFor(() => existsSync(join(fx.ws, '.env.local')));
    const [, secondErr, secondCode] = await run('true').out;
    expect({ secondCode, secondErr }).toEqual({ secondCode: 0, secondErr: '' });
    const [stdout, stderr, code] = await first.out;
    expect({ code, stderr }).toEqual({ code: 0, stderr: '' });
    expect(stdout.trim()).toBe('DONE');
    expect(snapshotAll(fx)).toBe(before);
  }, 30_000);

  // Runs with another TMPDIR keep their placeholder records apart (user-dir.ts), as do runs of
  // another user or in a container sharing the workspace: the first run's end removed its
  // placeholders under the second run's command, whose mounts over them went with them (and .git,
  // absent here, became writable: hooks, core.fsmonitor).
  test('runs that share no state directory (another TMPDIR) keep each other protected, and nothing is left', async () => {
    rmSync(join(fx.ws, '.git'), { recursive: true });
    const before = snapshotAll(fx);
    const other = join(fx.root, 'other-state');
    mkdirSync(other);
    // Each waits for the other: the second starts on the first's placeholders, and attacks once the first is over.
    const first = run('while [ ! -e src/second-started ]; do sleep 0.05; done');
    await waitFor(() => existsSync(join(fx.ws, '.env.local')));
    const second = run(
      ': > src/second-started; while [ ! -e src/first-done ]; do sleep 0.05; done; ' +
        `(mkdir -p .git/hooks && echo hook > .git/hooks/post-checkout) 2>/dev/null && echo "CREATED .git/hooks"; ${attacker(5)}`,
      other,
    );
    const [, firstErr, firstCode] = await first.out;
    expect({ firstCode, firstErr }).toEqual({ firstCode: 0, firstErr: '' });
    writeFileSync(join(fx.ws, 'src', 'first-done'), '');
    const [stdout, stderr, code] = await second.out;
    expect({ code, stderr }).toEqual({ code: 0, stderr: '' });
    expect(stdout.trim()).toBe('DONE');
    for (const name of ['first-done', 'second-started']) rmSync(join(fx.ws, 'src', name));
    rmSync(other, { recursive: true });
    // The first run could not remove what the second still bound; its record keeps them, and the
    // next run of its state directory removes them.
    expect((await run('true').out)[2]).toBe(0);
    expect(snapshotAll(fx)).toBe(before);
    expect(readdirSync(join(state, `conch-${uid}`, 'placeholders'))).toEqual([]);
  }, 30_000);
});

// A run in a folder that contains another run's workspace (or writable root) binds that run's
// placeholders read-only as well: since Linux 3.18 removing a mount point on the host detaches the
// mounts on it in every other namespace, so a command of the outer run that removed one would let
// the inner run's command write its protected name.
describe.skipIf(!canRun)('a run in the folder around another run', () => {
  test("cannot remove the inner run's placeholders from under its running command", async () => {
    const inner = join(fx.ws, 'sub');
    mkdirSync(inner);
    const child = Bun.spawn(
      [join(REPO, 'bin/conch'), 'sandbox', 'run', '--', 'sh', '-c', 'for i in $(seq 100); do (echo PLANTED > .env.local) 2>/dev/null && { echo WROTE; break; }; sleep 0.05; done; echo DONE'],
      { cwd: inner, env: { PATH: process.env.PATH ?? '/usr/bin:/bin', TMPDIR: state, HOME: fx.root, CONCH_FROM_SOURCE: '1' }, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    children.push(child);
    const out = Promise.all([new Response(child.stdout).text(), child.exited]);
    await waitFor(() => existsSync(join(inner, '.env.local')));
    const outer = run('rm -f sub/.env.local && echo REMOVED');
    const [outerOut, outerErr, outerCode] = await outer.out;
    expect({ outerOut, outerCode }).toEqual({ outerOut: '', outerCode: 1 });
    expect(outerErr).toContain('sub/.env.local'); // rm's own complaint (busy: a mount point)
    const [stdout] = await out;
    expect(stdout).toBe('DONE\n');
    expect(existsSync(join(inner, '.env.local'))).toBe(false);
  }, 30_000);

  test.skipIf(!heldAvailable())('an inner run that starts later is covered from the outer run\'s next command on, held sandbox too', async () => {
    const scope = new PlaceholderScope();
    try {
      const exec = await runExecutor(fx, scope);
      await untilHeld(exec); // the outer run's held sandbox, set up before the inner run exists
      const inner = join(fx.ws, 'sub');
      mkdirSync(inner);
      const child = Bun.spawn(
        [join(REPO, 'bin/conch'), 'sandbox', 'run', '--', 'sh', '-c', ': > started; while [ ! -e done ]; do (echo PLANTED > .env.local) 2>/dev/null && echo WROTE; sleep 0.05; done; echo DONE'],
        // The state directory this process keeps its records in, so the two runs see each other's.
        { cwd: inner, env: { PATH: process.env.PATH ?? '/usr/bin:/bin', TMPDIR: tmpdir(), HOME: fx.root, CONCH_FROM_SOURCE: '1' }, stdio: ['ignore', 'pipe', 'pipe'] },
      );
      children.push(child);
      const out = Promise.all([new Response(child.stdout).text(), child.exited]);
      // Its command runs: its record is written (its placeholders exist a moment before that).
      await waitFor(() => existsSync(join(inner, 'started')));
      // Refused in a sandbox of its own (the held one no longer fits), then in the new held one.
      let inHeld = false;
      for (let i = 0; i < 200 && !inHeld; i++) {
        // (pid 1's command line may hold this script: the word is split in it)
        const output = (await exec(`rm -f sub/.env.local sub/.env.test && echo REM''OVED; tr '\\0' ' ' < /proc/1/cmdline`)).output;
        expect(output).not.toContain('REMOVED');
        inHeld = output.includes('/bin/sh -c echo; read _');
      }
      expect(inHeld).toBe(true);
      writeFileSync(join(inner, 'done'), '');
      expect((await out)[0]).toBe('DONE\n');
      for (const name of ['done', 'started']) rmSync(join(inner, name));
      // Once the inner run is over its placeholders are gone, and the outer run's commands go on.
      expect(readdirSync(inner)).toEqual([]);
      expect((await exec('echo ok > sub/.env.local && cat sub/.env.local')).output).toBe('ok\n');
    } finally {
      scope.close();
    }
  }, 30_000);

  test('the same holds for two runs of one process', async () => {
    const [outerScope, innerScope] = [new PlaceholderScope(), new PlaceholderScope()];
    try {
      const inner = join(fx.ws, 'sub');
      mkdirSync(join(inner, 'tmp'), { recursive: true });
      const innerExec = await runExecutor({ ...fx, ws: inner, tmp: join(inner, 'tmp') }, innerScope);
      expect((await innerExec('true')).exitCode).toBe(0);
      expect(existsSync(join(inner, '.env.local'))).toBe(true); // held by the inner run until it ends
      const outerExec = await runExecutor(fx, outerScope);
      expect((await outerExec('rm -f sub/.env.local && echo REMOVED')).output).not.toContain('REMOVED');
      expect(existsSync(join(inner, '.env.local'))).toBe(true);
    } finally {
      outerScope.close();
      innerScope.close();
    }
  }, 30_000);

  test("a run apart whose path shows as another inside (under /tmp, the run's temp dir) gets nothing bound", async () => {
    const [outerScope, otherScope] = [new PlaceholderScope(), new PlaceholderScope()];
    try {
      // Beside the workspace, under the host's /tmp: inside, that path lies in the outer run's temp dir.
      const other = join(fx.root, 'other');
      mkdirSync(join(other, 'tmp'), { recursive: true });
      const otherExec = await runExecutor({ ...fx, ws: other, tmp: join(other, 'tmp') }, otherScope);
      expect((await otherExec('true')).exitCode).toBe(0);
      expect(existsSync(join(other, '.env.local'))).toBe(true);
      const result = await (await runExecutor(fx, outerScope))(`ls -A ${fx.root}`);
      expect(result.output).not.toContain('other'); // no mount point made for it in the temp dir
      expect(existsSync(join(fx.tmp, fx.root, 'other'))).toBe(false);
    } finally {
      outerScope.close();
      otherScope.close();
    }
  }, 30_000);
});
