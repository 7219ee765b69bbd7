// Two conch processes in one workspace: each run's protection of absent names holds until its own
// last command ends, whichever run started first or ends first, and no placeholder outlives the
// last run that needs it. Real CLI processes (`conch sandbox run`), real bwrap, host checked after.
import { afterEach, beforeEach, describe, expect, test } from 'bun:test';
import { existsSync, mkdirSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { canRun, fixture, snapshotAll, type Fixture } from './harness.ts';

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

// Known weakness, not fixed yet (run with `bun test --todo` to see it fail): a run in a folder that
// contains another run's workspace (or writable root) binds none of that run's placeholders, so its
// command can remove one; since Linux 3.18 removing a mount point on the host detaches the mounts on
// it in every other namespace, and the inner run's command then writes its protected name.
describe.skipIf(!canRun)('a run in the folder around another run', () => {
  test.todo("cannot remove the inner run's placeholders from under its running command", async () => {
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
    expect((await outer.out)[0]).toBe('REMOVED\n');
    const [stdout] = await out;
    expect(stdout).toBe('DONE\n');
    expect(existsSync(join(inner, '.env.local'))).toBe(false);
  });
});
