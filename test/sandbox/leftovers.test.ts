// Placeholders left by a conch that was killed (SIGKILL: no exit hook runs) are removed by the next
// sandboxed command of any conch process of the same user, unless a user changed them since or a
// running command still holds them. The "conch" here is test/sandbox/leftover-child.ts, a separate
// process driven over stdin, with a private TMPDIR so that its state directory is this test's alone.
import { afterEach, beforeEach, describe, expect, test } from 'bun:test';
import { chmodSync, existsSync, mkdirSync, readdirSync, readFileSync, renameSync, statSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { canRun, fixture, type Fixture } from './harness.ts';

const REPO = resolve(import.meta.dir, '../..');
const BUN = process.execPath;
const uid = process.getuid?.() ?? 0;

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

const env = () => ({ PATH: process.env.PATH ?? '/usr/bin:/bin', TMPDIR: state, HOME: fx.root });
const records = () => readdirSync(join(state, `conch-${uid}`, 'placeholders'));
const at = (name: string) => join(fx.ws, name);

/** A conch process that prepares and releases sandboxed commands on request. */
function conch() {
  const child = Bun.spawn([BUN, join(import.meta.dir, 'leftover-child.ts'), fx.ws, fx.tmp], {
    env: env(),
    stdin: 'pipe',
    stdout: 'pipe',
    stderr: 'inherit',
  });
  children.push(child);
  const reader = child.stdout.getReader();
  let buffered = '';
  const line = async (): Promise<string> => {
    for (;;) {
      const newline = buffered.indexOf('\n');
      if (newline >= 0) {
        const out = buffered.slice(0, newline);
        buffered = buffered.slice(newline + 1);
        return out;
      }
      const { value, done } = await reader.read();
      if (done) throw new Error(`the conch stand-in exited (${await child.exited})`);
      buffered += new TextDecoder().decode(value);
    }
  };
  return {
    child,
    async send(command: 'prepare' | 'release' | 'exit'): Promise<string> {
      child.stdin.write(`${command}\n`);
      await child.stdin.flush();
      return line();
    },
    async kill() {
      child.kill('SIGKILL');
      await child.exited;
    },
  };
}

describe.skipIf(!canRun)('leftover placeholders', () => {
  test('a killed conch leaves them; the next prepare removes them, except what a user changed', async () => {
    const a = conch();
    expect(await a.send('prepare')).toMatch(/^prepared \d+$/);
    for (const name of ['.env.local', '.env.production', '.env.test', '.conch']) expect(existsSync(at(name))).toBe(true);
    expect(records()).toHaveLength(1);
    await a.kill();
    expect(existsSync(at('.env.local'))).toBe(true); // nothing ran its cleanup

    // The user works on some of them meanwhile: writes into one (not root: the placeholders share
    // an inode, so that write shows under every name linked to it, which then all count as the
    // user's), saves another by rename, puts a file into the .conch placeholder.
    const shared = statSync(at('.env.production')).ino;
    chmodSync(at('.env.production'), 0o644);
    writeFileSync(at('.env.production'), 'MINE=1\n');
    writeFileSync(at('.env.test.swp'), 'SAVED=1\n');
    renameSync(at('.env.test.swp'), at('.env.test'));
    writeFileSync(at('.conch/notes'), 'mine\n');
    const linked = ['.env.local', '.env.staging', '.env.development'].filter((name) => statSync(at(name)).ino === shared);

    const b = conch();
    await b.send('prepare');
    await b.send('release');
    expect(await b.send('exit')).toBe('bye');
    await b.child.exited;

    expect(readFileSync(at('.env.production'), 'utf8')).toBe('MINE=1\n');
    expect(readFileSync(at('.env.test'), 'utf8')).toBe('SAVED=1\n');
    expect(readFileSync(at('.conch/notes'), 'utf8')).toBe('mine\n');
    for (const name of ['.env.local', '.env.staging', '.env.development']) {
      expect({ name, exists: existsSync(at(name)) }).toEqual({ name, exists: linked.includes(name) });
    }
    expect(existsSync(at('.env.staging.local'))).toBe(linked.length > 0);
    expect(records()).toEqual([]);
  }, 30_000);

  test('a live conch keeps its placeholders while another prepares and releases', async () => {
    const a = conch();
    await a.send('prepare');
    const inode = statSync(at('.env.local')).ino;
    const b = conch();
    await b.send('prepare');
    await b.send('release');
    expect(statSync(at('.env.local')).ino).toBe(inode); // still a's, still there
    await a.send('release');
    expect(existsSync(at('.env.local'))).toBe(false);
    expect(records()).toEqual([]);
  }, 30_000);

  test('a leftover that a running command holds stays until that command is released', async () => {
    const a = conch();
    await a.send('prepare');
    const c = conch();
    await c.send('prepare'); // uses a's placeholders too (and records that it does)
    await a.kill();
    await c.send('prepare'); // recovery runs, but c's commands still use them
    expect(existsSync(at('.env.local'))).toBe(true);
    expect(existsSync(at('.conch'))).toBe(true);
    await c.send('release'); // c was the last user: they go with it
    for (const name of ['.env.local', '.env.production', '.conch']) expect(existsSync(at(name))).toBe(false);
    expect(records()).toEqual([]);
  }, 30_000);

  test('conch sandbox run: SIGHUP and SIGTERM end the command and the placeholders go with it', async () => {
    for (const [signal, number] of [['SIGHUP', 1], ['SIGTERM', 15]] as const) {
      const run = Bun.spawn([join(REPO, 'bin/conch'), 'sandbox', 'run', '--', 'sleep', '30'], {
        cwd: fx.ws,
        env: { ...env(), CONCH_FROM_SOURCE: '1' },
        stdio: ['ignore', 'ignore', 'pipe'],
      });
      children.push(run);
      for (let i = 0; i < 200 && !existsSync(at('.env.local')); i++) await Bun.sleep(25);
      expect(existsSync(at('.env.local'))).toBe(true);
      run.kill(signal);
      expect(await run.exited).toBe(128 + number);
      expect(existsSync(at('.env.local'))).toBe(false);
      expect(existsSync(at('.conch'))).toBe(false);
      expect(records()).toEqual([]);
    }
  }, 30_000);
});
