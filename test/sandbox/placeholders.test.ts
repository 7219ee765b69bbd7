// Placeholders for absent protected names: present while any command that needs them runs, gone
// afterwards, never removing something that is not conch's.
import { afterEach, beforeEach, describe, expect, test } from 'bun:test';
import { appendFileSync, existsSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { prepareSandboxed, type PreparedCommand } from '../../src/sandbox/index.ts';
import { livePlaceholders } from '../../src/sandbox/placeholders.ts';
import { canRun, fixture, isRoot, type Fixture } from './harness.ts';

let fx: Fixture;
beforeEach(() => {
  fx = fixture();
});
afterEach(() => fx.cleanup());

function prepare(command: string): Promise<PreparedCommand> {
  return prepareSandboxed({
    profile: 'workspace-write',
    network: true,
    writableRoots: [],
    protectedGlobs: [],
    command,
    cwd: fx.ws,
    workspace: fx.ws,
    tmpDir: fx.tmp,
  });
}

function start(prepared: PreparedCommand) {
  const child = Bun.spawn(prepared.argv, { cwd: fx.ws, stdio: ["ignore", "pipe", "ignore", ...prepared.extraFds] });
  return {
    done: Promise.all([new Response(child.stdout).text(), child.exited]).then(async ([stdout, code]) => {
      await prepared.release();
      return { stdout, code };
    }),
  };
}

const ours = () => [...livePlaceholders().keys()].filter((path) => path.startsWith(`${fx.ws}/`));

describe.skipIf(!canRun)('placeholders', () => {
  test('overlapping commands: the later one stays protected after the earlier ends, and nothing is left', async () => {
    const short = start(await prepare('sleep 0.2'));
    const long = start(await prepare('sleep 1; echo X=1 > .env.local && echo WROTE; mkdir .conch/x && echo WROTE'));
    expect(existsSync(join(fx.ws, '.env.local'))).toBe(true); // the placeholder, while they run
    await short.done;
    expect(livePlaceholders().get(join(fx.ws, '.env.local'))).toBe(1);
    expect(existsSync(join(fx.ws, '.env.local'))).toBe(true);
    const result = await long.done;
    expect(result.stdout).not.toContain('WROTE');
    expect(existsSync(join(fx.ws, '.env.local'))).toBe(false);
    expect(existsSync(join(fx.ws, '.conch'))).toBe(false);
    expect(ours()).toEqual([]);
  });

  test('many commands prepared and released concurrently leave nothing behind', async () => {
    const runs = Array.from({ length: 8 }, (_, i) =>
      (async () => {
        await Bun.sleep(i * 7);
        const prepared = await prepare(`echo ${i} > .env.test 2>/dev/null || true`);
        const result = await start(prepared).done;
        await prepared.release(); // twice: harmless
        return result.code;
      })(),
    );
    expect(await Promise.all(runs)).toEqual(Array(8).fill(0));
    expect(ours()).toEqual([]);
    for (const name of ['.env.test', '.env.local', '.conch']) expect(existsSync(join(fx.ws, name))).toBe(false);
  });

  test('a file the user saves over a placeholder meanwhile is theirs and stays', async () => {
    const prepared = await prepare('true');
    // Editors save by writing a new file and renaming it over the old name.
    writeFileSync(join(fx.ws, '.env.local.swp'), 'MINE=1\n');
    renameSync(join(fx.ws, '.env.local.swp'), join(fx.ws, '.env.local'));
    await prepared.release();
    expect(readFileSync(join(fx.ws, '.env.local'), 'utf8')).toBe('MINE=1\n');
  });

  test('a host write into one placeholder never shows up under another name', async () => {
    const prepared = await prepare('true');
    const local = join(fx.ws, '.env.local');
    const test_ = join(fx.ws, '.env.test');
    expect(statSync(local).mode & 0o777).toBe(0o444);
    // Not root: the placeholders share an inode and the mode stops the write. Root: own inodes.
    expect(statSync(local).ino === statSync(test_).ino).toBe(!isRoot);
    let wrote = true;
    try {
      appendFileSync(local, 'MINE=1\n');
    } catch {
      wrote = false;
    }
    expect(wrote).toBe(isRoot);
    expect(statSync(test_).size).toBe(0);
    await prepared.release();
    expect(existsSync(test_)).toBe(false);
    expect(existsSync(local)).toBe(wrote);
  });

  test('a placeholder replaced on the host meanwhile is not removed', async () => {
    const prepared = await prepare('true');
    rmSync(join(fx.ws, '.conch'), { recursive: true });
    writeFileSync(join(fx.ws, '.conch'), '');
    await prepared.release();
    expect(existsSync(join(fx.ws, '.conch'))).toBe(true);
  });

  test('the read-only profile needs no placeholders at all', async () => {
    const prepared = await prepareSandboxed({
      profile: 'read-only',
      network: true,
      writableRoots: [],
      protectedGlobs: [],
      command: 'true',
      cwd: fx.ws,
      workspace: fx.ws,
      tmpDir: fx.tmp,
    });
    try {
      expect(existsSync(join(fx.ws, '.env.local'))).toBe(false);
      expect(ours()).toEqual([]);
      expect(prepared.argv).toContain('--ro-bind');
      expect(prepared.argv.join(' ')).not.toContain('.env.local');
    } finally {
      await prepared.release();
    }
  });
});
