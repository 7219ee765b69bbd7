// Filesystem escapes through the real bubblewrap sandbox. Every test runs the attack, expects it to
// fail, and checks the host afterwards: the workspace and the outside directory are byte-for-byte
// what they were (or changed only where a change is allowed).
import { afterEach, beforeEach, describe, expect, test } from 'bun:test';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { PlaceholderScope, rememberDirectory } from '../../src/sandbox/index.ts';
import { canRun, fixture, isRoot, randomName, sandboxed, snapshotAll, type Fixture } from './harness.ts';

let fx: Fixture;
beforeEach(() => {
  fx = fixture();
});
afterEach(() => fx.cleanup());

/** Run an attack; it must fail (non-zero) and leave the host as it was. */
async function attack(command: string, options: Parameters<typeof sandboxed>[2] = {}) {
  const before = snapshotAll(fx);
  const result = await sandboxed(fx, command, options);
  expect(snapshotAll(fx)).toBe(before);
  return result;
}

describe.skipIf(!canRun)('writes outside the workspace', () => {
  test('create a file in /etc', async () => {
    const target = join('/etc', randomName('conch-attack'));
    try {
      const result = await attack(`echo pwned > ${target}`);
      expect(result.code).not.toBe(0);
      expect(result.stderr).toMatch(/Read-only file system|Permission denied/);
      expect(existsSync(target)).toBe(false);
    } finally {
      rmSync(target, { force: true });
    }
  });

  test('create a file in $HOME', async () => {
    const target = join(homedir(), randomName('conch-attack'));
    try {
      const result = await attack(`echo pwned > "$HOME/${target.split('/').pop()}"`);
      expect(result.code).not.toBe(0);
      expect(existsSync(target)).toBe(false);
    } finally {
      rmSync(target, { force: true });
    }
  });

  test('create a file in /var/tmp', async () => {
    const target = join('/var/tmp', randomName('conch-attack'));
    try {
      const result = await attack(`echo pwned > ${target}`);
      expect(result.code).not.toBe(0);
      expect(existsSync(target)).toBe(false);
    } finally {
      rmSync(target, { force: true });
    }
  });

  test('overwrite an existing file outside the workspace', async () => {
    const result = await attack(`echo pwned > ${fx.outside}/file`);
    expect(result.code).not.toBe(0);
    expect(readFileSync(join(fx.outside, 'file'), 'utf8')).toBe('outside\n');
  });

  test('/tmp inside is the run\'s temp dir: a write there never reaches the host /tmp', async () => {
    const name = randomName('conch-attack');
    try {
      const first = await sandboxed(fx, `echo private > /tmp/${name}`);
      expect(first.code).toBe(0);
      expect(existsSync(join('/tmp', name))).toBe(false);
      // …and it is still there for the next command of the same run
      const second = await sandboxed(fx, `cat /tmp/${name}`);
      expect(second).toMatchObject({ code: 0, stdout: 'private\n' });
      expect(readFileSync(join(fx.tmp, name), 'utf8')).toBe('private\n');
    } finally {
      rmSync(join('/tmp', name), { force: true });
    }
  });

  test('the host /tmp is not visible inside', async () => {
    const name = randomName('conch-host');
    writeFileSync(join('/tmp', name), 'host\n');
    try {
      const result = await sandboxed(fx, `cat /tmp/${name}`);
      expect(result.code).not.toBe(0);
    } finally {
      rmSync(join('/tmp', name), { force: true });
    }
  });

  test('create a file in /run (a tmpfs submount of the read-only root)', async () => {
    const target = join('/run', randomName('conch-attack'));
    try {
      const result = await attack(`echo pwned > ${target}`);
      expect(result.code).not.toBe(0);
      expect(existsSync(target)).toBe(false);
    } finally {
      rmSync(target, { force: true });
    }
  });

  test('/dev/shm inside is private', async () => {
    const name = randomName('conch-attack');
    try {
      await sandboxed(fx, `echo x > /dev/shm/${name}`);
      expect(existsSync(join('/dev/shm', name))).toBe(false);
    } finally {
      rmSync(join('/dev/shm', name), { force: true });
    }
  });

  test('overwrite a kernel setting through /proc/sys (its own value, so harmless either way)', async () => {
    const result = await attack('v=$(cat /proc/sys/kernel/core_pattern) && printf "%s\\n" "$v" > /proc/sys/kernel/core_pattern && echo WROTE');
    expect(result.stdout).not.toContain('WROTE');
  });

  test('write to /sys (its own value back)', async () => {
    const file = '/sys/kernel/mm/transparent_hugepage/defrag';
    if (!existsSync(file)) return void console.warn(`skipping /sys write check: ${file} does not exist here`);
    const result = await attack(`v=$(sed -E 's/.*\\[([a-z+]+)\\].*/\\1/' ${file}) && echo "$v" > ${file} && echo WROTE`);
    expect(result.stdout).not.toContain('WROTE');
  });

  test('write through a symlink created in the workspace pointing outside', async () => {
    const before = readFileSync(join(fx.outside, 'file'), 'utf8');
    const result = await sandboxed(fx, `ln -s ${fx.outside}/file link && echo pwned > link`);
    expect(result.code).not.toBe(0);
    expect(readFileSync(join(fx.outside, 'file'), 'utf8')).toBe(before);
  });

  test('write through a symlink that already existed in the workspace (to an outside directory)', async () => {
    symlinkSync(fx.outside, join(fx.ws, 'out'));
    const result = await attack('echo pwned > out/new; echo pwned > out/file');
    expect(result.code).not.toBe(0);
    expect(existsSync(join(fx.outside, 'new'))).toBe(false);
  });

  test('hardlink an outside file into the workspace and write through it', async () => {
    const result = await attack(`ln ${fx.outside}/file hard && echo pwned >> hard`);
    expect(result.code).not.toBe(0);
    expect(result.stderr).toMatch(/cross-device|Invalid cross-device link|Operation not permitted/i);
    expect(existsSync(join(fx.ws, 'hard'))).toBe(false);
  });

  test('rename the workspace itself away', async () => {
    const result = await attack(`mv "$PWD" "$PWD.moved"`);
    expect(result.code).not.toBe(0);
    expect(existsSync(`${fx.ws}.moved`)).toBe(false);
  });
});

describe.skipIf(!canRun)('the workspace, the temp dir and writable roots', () => {
  test('the workspace and the temp dir are writable', async () => {
    const result = await sandboxed(fx, `echo ok > made.txt && echo tmp > "$TMPDIR/t" && mkdir -p a/b && cat "$TMPDIR/t"`);
    expect(result).toMatchObject({ code: 0, stdout: 'tmp\n' });
    expect(readFileSync(join(fx.ws, 'made.txt'), 'utf8')).toBe('ok\n');
    expect(readFileSync(join(fx.tmp, 't'), 'utf8')).toBe('tmp\n');
  });

  test('the read-only profile: workspace writes fail, the temp dir stays writable', async () => {
    const result = await attack(`echo x > new.txt; echo y > src/main.txt; rm -f src/main.txt; echo tmp > "$TMPDIR/t"`, {
      profile: 'read-only',
    });
    expect(result.stderr).toContain('Read-only file system');
    expect(readFileSync(join(fx.tmp, 't'), 'utf8')).toBe('tmp\n');
  });

  test('a configured writable root is writable; its siblings are not', async () => {
    const extra = join(fx.outside, 'extra');
    mkdirSync(extra);
    const result = await sandboxed(fx, `echo ok > ${extra}/f; echo no > ${fx.outside}/g`, { writableRoots: [extra] });
    expect(result.code).not.toBe(0);
    expect(readFileSync(join(extra, 'f'), 'utf8')).toBe('ok\n');
    expect(existsSync(join(fx.outside, 'g'))).toBe(false);
  });

  test('a writable root inside the workspace moved away and replaced by a link elsewhere is refused, not mounted', async () => {
    // The link made the next command's writable root whatever it named (the home directory).
    const root = join(fx.ws, 'vendor', 'lib');
    mkdirSync(root, { recursive: true });
    const target = join(fx.outside, 'home');
    mkdirSync(target);
    const moved = await sandboxed(fx, `mv vendor moved && mkdir vendor && ln -s ${target} vendor/lib && echo MOVED`, { writableRoots: [root] });
    expect(moved.stdout).toBe('MOVED\n');
    const next = sandboxed(fx, 'echo PWNED > vendor/lib/.bashrc', { writableRoots: [root] });
    await expect(next).rejects.toThrow(/writable root .*vendor\/lib now leads to .*home, not to .*vendor\/lib as before/);
    expect(existsSync(join(target, '.bashrc'))).toBe(false);
  });

  // A writable root above the workspace (--allow-write ~/src for ~/src/org/proj) lets a command move a
  // folder between them, and the workspace with it, .git and all, then make a new one at its path:
  // the next command protected the new one while the real .git lay writable where it went (under
  // node_modules, which the nested-repository check does not walk).
  test('a workspace moved away (with the folder above it, in a writable root) and made again is refused, and its .git stays as it was', async () => {
    const top = join(fx.root, 'src');
    const ws = join(top, 'org', 'proj');
    mkdirSync(join(ws, '.git', 'hooks'), { recursive: true });
    writeFileSync(join(ws, '.git', 'HEAD'), 'ref: refs/heads/main\n');
    const options = { workspace: ws, cwd: ws, writableRoots: [top], placeholders: new PlaceholderScope() };
    const gone = join(top, 'node_modules', 'org');
    try {
      const moved = await sandboxed(fx, `mkdir -p ${top}/node_modules && mv ${top}/org ${gone} && mkdir -p ${ws} && echo MOVED`, options);
      expect(moved.stdout).toBe('MOVED\n');
      const next = sandboxed(fx, `echo evil > ${gone}/proj/.git/hooks/pre-commit`, options);
      await expect(next).rejects.toThrow(/workspace .*org\/proj is no longer the directory it was at this session's first command: something moved it away/);
      expect(existsSync(join(gone, 'proj', '.git', 'hooks', 'pre-commit'))).toBe(false);
      // Another session (a fresh clone there, in a long-lived host) starts from the directory as it is.
      expect((await sandboxed(fx, 'echo ok', { ...options, placeholders: new PlaceholderScope() })).stdout).toBe('ok\n');
    } finally {
      options.placeholders.close();
    }
  });

  test('a writable root moved away (with the folder above it, in the workspace) and made again is refused', async () => {
    const root = join(fx.ws, 'vendor', 'lib');
    mkdirSync(join(root, '.git', 'hooks'), { recursive: true });
    writeFileSync(join(root, '.git', 'HEAD'), 'ref: refs/heads/main\n');
    const options = { writableRoots: [root], placeholders: new PlaceholderScope() };
    try {
      expect((await sandboxed(fx, 'mkdir -p node_modules && mv vendor node_modules/vendor && mkdir -p vendor/lib && echo MOVED', options)).stdout).toBe('MOVED\n');
      const next = sandboxed(fx, 'echo evil > node_modules/vendor/lib/.git/hooks/pre-commit', options);
      await expect(next).rejects.toThrow(/writable root .*vendor\/lib is no longer the directory it was/);
      expect(existsSync(join(fx.ws, 'node_modules', 'vendor', 'lib', '.git', 'hooks', 'pre-commit'))).toBe(false);
    } finally {
      options.placeholders.close();
    }
  });

  test("a run's temp dir swapped for a link before its first command (by another conch's command, TMPDIR in the workspace) is refused", async () => {
    // conch makes the temp dir and remembers where it leads; a link put there later named the next
    // command's /tmp (the home directory, writable).
    rememberDirectory(fx.tmp);
    const target = join(fx.outside, 'home');
    mkdirSync(target);
    rmSync(fx.tmp, { recursive: true });
    symlinkSync(target, fx.tmp);
    await expect(sandboxed(fx, 'echo PWNED > /tmp/.bashrc')).rejects.toThrow(/temp dir .* now leads to .*home, not to /);
    expect(existsSync(join(target, '.bashrc'))).toBe(false);
  });

  test("a writable root's own .git and .env stay read-only (a sibling repository's hooks would run at its next commit)", async () => {
    const extra = join(fx.outside, 'sibling');
    mkdirSync(join(extra, '.git', 'hooks'), { recursive: true });
    writeFileSync(join(extra, '.git', 'config'), '[core]\n');
    writeFileSync(join(extra, '.env'), 'TOKEN=1\n');
    const result = await sandboxed(
      fx,
      `echo evil > ${extra}/.git/hooks/pre-commit; echo x >> ${extra}/.git/config; echo y > ${extra}/.env; mv ${extra}/.git ${extra}/moved; echo ok > ${extra}/f`,
      { writableRoots: [extra] },
    );
    expect(result.stderr).toContain('Read-only file system');
    expect(readFileSync(join(extra, 'f'), 'utf8')).toBe('ok\n');
    expect(existsSync(join(extra, '.git', 'hooks', 'pre-commit'))).toBe(false);
    expect(readFileSync(join(extra, '.git', 'config'), 'utf8')).toBe('[core]\n');
    expect(readFileSync(join(extra, '.env'), 'utf8')).toBe('TOKEN=1\n');
    expect(existsSync(join(extra, 'moved'))).toBe(false);
  });

  test("a writable root's absent protected names cannot be created (.git/hooks, .env, .env.local, .conch, HEAD), and nothing is left after", async () => {
    const extra = join(fx.outside, 'plain');
    mkdirSync(extra);
    const result = await sandboxed(
      fx,
      `mkdir -p ${extra}/.git/hooks && echo evil > ${extra}/.git/hooks/pre-commit && echo WROTE; ` +
        `echo T=1 > ${extra}/.env && echo WROTE; echo T=1 > ${extra}/.env.local && echo WROTE; ` +
        `mkdir ${extra}/.conch && echo WROTE; echo ref > ${extra}/HEAD && echo WROTE; ` +
        `rm -rf ${extra}/.git ${extra}/.env && echo WROTE; echo ok > ${extra}/f`,
      { writableRoots: [extra] },
    );
    expect(result.stdout).not.toContain('WROTE');
    expect(readFileSync(join(extra, 'f'), 'utf8')).toBe('ok\n');
    // The placeholders that held the names went with the command; the root is as the command left it.
    expect(readdirSync(extra)).toEqual(['f']);
  });
});

describe.skipIf(!canRun)('protected paths', () => {
  test('write .git/config', async () => {
    const result = await attack('echo "[core] hooksPath=/tmp" >> .git/config');
    expect(result.code).not.toBe(0);
    expect(result.stderr).toContain('Read-only file system');
  });

  test('create .git/hooks/pre-commit', async () => {
    const result = await attack('printf "#!/bin/sh\\necho pwned\\n" > .git/hooks/pre-commit && chmod +x .git/hooks/pre-commit');
    expect(result.code).not.toBe(0);
    expect(existsSync(join(fx.ws, '.git', 'hooks', 'pre-commit'))).toBe(false);
  });

  test('delete .git', async () => {
    const result = await attack('rm -rf .git');
    expect(result.code).not.toBe(0);
  });

  test('mv .git away, then write a new .git/config', async () => {
    const result = await attack('mv .git .git-old; mkdir -p .git && echo evil > .git/config');
    expect(result.code).not.toBe(0);
    expect(existsSync(join(fx.ws, '.git-old'))).toBe(false);
  });

  test('overwrite the existing .env', async () => {
    const result = await attack('echo STOLEN=1 > .env');
    expect(result.code).not.toBe(0);
    expect(readFileSync(join(fx.ws, '.env'), 'utf8')).toBe('SECRET=1\n');
  });

  test('create .env.local when absent (and no placeholder is left behind)', async () => {
    const result = await attack('echo X=1 > .env.local');
    expect(result.code).not.toBe(0);
    expect(existsSync(join(fx.ws, '.env.local'))).toBe(false);
  });

  test('create .conch/x when .conch is absent (and no placeholder is left behind)', async () => {
    const result = await attack('mkdir -p .conch && echo x > .conch/x');
    expect(result.code).not.toBe(0);
    expect(existsSync(join(fx.ws, '.conch'))).toBe(false);
  });

  test('create a .git when the workspace has none', async () => {
    rmSync(join(fx.ws, '.git'), { recursive: true });
    const result = await attack('git init -q . 2>&1 || mkdir -p .git/hooks');
    expect(result.code).not.toBe(0);
    expect(existsSync(join(fx.ws, '.git'))).toBe(false);
  });

  test('an existing .env.* match outside the known names is protected too', async () => {
    writeFileSync(join(fx.ws, '.env.preview'), 'P=1\n');
    const result = await attack('echo P=2 > .env.preview; rm -f .env.preview');
    expect(result.code).not.toBe(0);
    expect(readFileSync(join(fx.ws, '.env.preview'), 'utf8')).toBe('P=1\n');
  });

  test('a configured protected glob holds existing matches', async () => {
    mkdirSync(join(fx.ws, 'deploy'));
    writeFileSync(join(fx.ws, 'deploy', 'prod.yaml'), 'replicas: 3\n');
    const result = await attack('echo replicas: 0 > deploy/prod.yaml', { protectedGlobs: ['deploy/*.yaml'] });
    expect(result.code).not.toBe(0);
  });

  test('rename a parent of a nested protected file, then recreate the file', async () => {
    mkdirSync(join(fx.ws, 'config', 'secrets'), { recursive: true });
    writeFileSync(join(fx.ws, 'config', 'secrets', 'prod.json'), '{"key":"k"}\n');
    const result = await attack(
      'mv config config-old || mv config/secrets config/s2 || true; mkdir -p config/secrets; echo evil > config/secrets/prod.json',
      { protectedGlobs: ['config/secrets/prod.json'] },
    );
    expect(result.code).not.toBe(0);
    expect(result.stderr).toMatch(/busy|Read-only/i);
  });

  test('rename a parent of a nested protected path that does not exist yet', async () => {
    mkdirSync(join(fx.ws, 'keys'));
    const result = await attack('mv keys keys-old; mkdir -p keys/prod && echo evil > keys/prod/id', { protectedGlobs: ['keys/prod/**'] });
    expect(result.code).not.toBe(0);
    expect(existsSync(join(fx.ws, 'keys', 'prod'))).toBe(false);
  });

  test('remount a protected path read-write (as root inside when conch runs as root)', async () => {
    const result = await attack(
      'id -u; mount -o remount,rw,bind .git && echo REMOUNTED; mount -o remount,rw .git && echo REMOUNTED; ' +
        'umount .git && echo UNMOUNTED; echo evil > .git/config',
    );
    expect(result.stdout.trim().split('\n')[0]).toBe(isRoot ? '0' : String(process.getuid?.()));
    expect(result.stdout).not.toContain('REMOUNTED');
    expect(result.stdout).not.toContain('UNMOUNTED');
    expect(result.code).not.toBe(0);
  });

  test('a nested user namespace to regain capabilities and remount', async () => {
    const result = await attack('unshare -rm sh -c "mount -o remount,rw,bind .git && echo evil > .git/config"');
    expect(result.code).not.toBe(0);
  });

  test('umount /proc', async () => {
    const result = await attack('umount /proc && echo UNMOUNTED; umount -l /proc && echo UNMOUNTED; test -r /proc/self/status');
    expect(result.stdout).not.toContain('UNMOUNTED');
    expect(result.code).toBe(0); // /proc is still there
  });

  test('a writable root inside a protected path is refused, not run', async () => {
    await expect(sandboxed(fx, 'touch ran', { writableRoots: [join(fx.ws, '.git')] })).rejects.toThrow(/inside the protected path/);
    expect(existsSync(join(fx.ws, 'ran'))).toBe(false);
  });

  test('a protected path that is a symlink is refused, not run', async () => {
    rmSync(join(fx.ws, '.env'));
    symlinkSync(join(fx.outside, 'file'), join(fx.ws, '.env'));
    await expect(sandboxed(fx, 'touch ran')).rejects.toThrow(/"\.env" is a symbolic link/);
    expect(existsSync(join(fx.ws, 'ran'))).toBe(false);
  });

  test('hardlink a protected file into the writable temp dir and write through the link', async () => {
    const result = await attack(`ln .git/config "$TMPDIR/cfg" && echo evil >> "$TMPDIR/cfg"`);
    expect(result.code).not.toBe(0);
    expect(existsSync(join(fx.tmp, 'cfg'))).toBe(false);
  });
});
