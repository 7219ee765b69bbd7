// git in the sandbox does not list the run's placeholders (empty files at absent protected names)
// as untracked, and lists everything else exactly as before: a real untracked .env, the user's own
// global excludes applied.
import { describe, expect, test } from 'bun:test';
import { mkdirSync, mkdtempSync, realpathSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { PlaceholderScope } from '../../src/sandbox/index.ts';
import { escapePattern } from '../../src/sandbox/git-excludes.ts';
import { bashExecutor, canRun, fixture, sandboxed, type Fixture } from './harness.ts';

const GIT = Bun.which('git');
const CONCH = resolve(import.meta.dir, '../../bin/conch');

/** The fixture's workspace made a real repository (its fake .git reinitialised), one file committed. */
function repo(): Fixture {
  const fx = fixture();
  Bun.spawnSync([GIT!, 'init', '-q', fx.ws]);
  Bun.spawnSync([GIT!, '-C', fx.ws, 'add', 'src/main.txt']);
  Bun.spawnSync([GIT!, '-C', fx.ws, '-c', 'user.name=t', '-c', 'user.email=t@t', 'commit', '-qm', 'one']);
  return fx;
}

const lines = (text: string) => text.split('\n').filter((line) => line !== '');

describe.skipIf(!canRun || !GIT)('git status inside the sandbox', () => {
  test('lists the real untracked .env and a new file, none of the placeholders', async () => {
    const fx = repo();
    try {
      const { code, stdout } = await sandboxed(fx, 'touch new.txt && git status --porcelain');
      expect(code).toBe(0);
      expect(lines(stdout).sort()).toEqual(['?? .env', '?? new.txt']);
      // They were there, for the sandbox to bind: only git does not list them.
      const listed = await sandboxed(fx, 'ls -a');
      expect(lines(listed.stdout)).toContain('.env.local');
    } finally {
      fx.cleanup();
    }
  });

  test("the same from a run's every command, the held sandbox's included", async () => {
    const fx = repo();
    const scope = new PlaceholderScope();
    try {
      const run = await bashExecutor(fx, scope);
      for (let i = 0; i < 3; i++) {
        const result = await run('git status --porcelain');
        expect(result.exitCode).toBe(0);
        expect(lines(result.output)).toEqual(['?? .env']);
      }
    } finally {
      scope.close();
      fx.cleanup();
    }
  });

  test('in a subfolder whose name has characters gitignore treats specially', async () => {
    // Under /var/tmp, which the sandbox shows read-only: the repository's .git lies above the workspace.
    const top = realpathSync(mkdtempSync('/var/tmp/conch-sbx-repo-'));
    const sub = join(top, 'we ird[1]*!#');
    const tmp = realpathSync(mkdtempSync(join(tmpdir(), 'conch-sbx-tmp-')));
    mkdirSync(sub);
    writeFileSync(join(sub, 'kept.txt'), 'x\n');
    Bun.spawnSync([GIT!, 'init', '-q', top]);
    const fx: Fixture = { root: top, ws: sub, tmp, outside: tmp, cleanup: () => [top, tmp].forEach((dir) => rmSync(dir, { recursive: true, force: true })) };
    try {
      const { code, stdout, stderr } = await sandboxed(fx, 'ls -a && git status --porcelain --untracked-files=all .');
      expect(stderr).toBe('');
      expect(code).toBe(0);
      const [listed, status] = [lines(stdout).filter((l) => !l.startsWith('??')), lines(stdout).filter((l) => l.startsWith('??'))];
      expect(listed).toContain('.env.local');
      // Porcelain paths are the repository's, quoted for the space.
      expect(status).toEqual(['?? "we ird[1]*!#/kept.txt"']);
    } finally {
      fx.cleanup();
    }
  });

  test('a placeholder excluded is not a name git ignores anywhere else', async () => {
    const fx = repo();
    mkdirSync(join(fx.ws, 'deep'));
    writeFileSync(join(fx.ws, 'deep', '.env.local'), 'A=1\n');
    try {
      const { stdout } = await sandboxed(fx, 'git status --porcelain --untracked-files=all');
      expect(lines(stdout).sort()).toEqual(['?? .env', '?? deep/.env.local']);
    } finally {
      fx.cleanup();
    }
  });
});

describe.skipIf(!canRun || !GIT)("the user's own global excludes", () => {
  // A conch of its own: the user's excludes are read once per process, from its HOME (under
  // /var/tmp: the host's /tmp is not what commands see, so nothing there is copied in).
  function status(home: string, ws: string, argv = ['git', 'status', '--porcelain'], extra: Record<string, string> = {}) {
    const env = { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: home, XDG_CONFIG_HOME: join(home, '.config'), XDG_STATE_HOME: join(home, 'state'), XDG_CACHE_HOME: join(home, 'cache'), ...extra };
    // The timeout only ends a conch that hangs (the test then fails on its status), it measures nothing.
    const result = Bun.spawnSync([CONCH, 'sandbox', 'run', '--', ...argv], { cwd: ws, env, stdout: 'pipe', stderr: 'pipe', timeout: 20_000 });
    return { code: result.exitCode, stdout: result.stdout.toString(), stderr: result.stderr.toString() };
  }

  // Where the excludes file lies in a folder commands can write (a dotfiles --allow-write root, the
  // home as workspace), a command chooses what the next conch copies into its sandbox's /tmp.
  function withHome(body: (home: string, fx: Fixture) => void) {
    const fx = repo();
    const home = realpathSync(mkdtempSync('/var/tmp/conch-home-'));
    mkdirSync(join(home, '.config', 'git'), { recursive: true });
    try {
      body(home, fx);
    } finally {
      rmSync(home, { recursive: true, force: true });
      fx.cleanup();
    }
  }

  test("an excludes link to conch's own /proc entries (its environment, with the API keys) is not copied in", () => {
    withHome((home, fx) => {
      symlinkSync('/proc/self/environ', join(home, '.config', 'git', 'ignore'));
      const key = { ANTHROPIC_API_KEY: 'sk-ant-LEAKED-KEY' };
      const env = status(home, fx.ws, ['sh', '-c', 'env; cat /tmp/conch-git-excludes-*'], key);
      expect(env.code).toBe(0);
      expect(env.stdout).toContain('conch: its sandbox'); // the file is there, and read
      expect(env.stdout).not.toContain('LEAKED-KEY');
      expect(status(home, fx.ws, undefined, key).stdout).toBe('?? .env\n');
    });
  });

  test('an excludes file that is a FIFO does not stall conch', () => {
    withHome((home, fx) => {
      expect(Bun.spawnSync(['mkfifo', join(home, '.config', 'git', 'ignore')]).exitCode).toBe(0);
      const after = status(home, fx.ws);
      expect(after.code).toBe(0);
      expect(lines(after.stdout)).toEqual(['?? .env']);
    });
  });

  test("an excludes file in the host's /tmp (which commands do not see) is not copied in", () => {
    withHome((home, fx) => {
      const secret = realpathSync(mkdtempSync('/tmp/conch-other-'));
      try {
        writeFileSync(join(secret, 'ticket'), 'HOST-TMP-SECRET\n');
        symlinkSync(join(secret, 'ticket'), join(home, '.config', 'git', 'ignore'));
        const seen = status(home, fx.ws, ['sh', '-c', `cat ${secret}/ticket; cat /tmp/conch-git-excludes-*`]);
        expect(seen.stdout).toContain('conch: its sandbox');
        expect(seen.stdout).not.toContain('HOST-TMP-SECRET');
      } finally {
        rmSync(secret, { recursive: true, force: true });
      }
    });
  });

  for (const [name, configure] of [
    ['~/.config/git/ignore', (home: string) => writeFileSync(join(home, '.config', 'git', 'ignore'), '*.log\n')],
    ['core.excludesFile', (home: string) => {
      writeFileSync(join(home, 'my-ignores'), '*.log\n');
      writeFileSync(join(home, '.gitconfig'), '[core]\n\texcludesFile = ~/my-ignores\n');
    }],
    ['$XDG_CONFIG_HOME/git/ignore', (home: string) => writeFileSync(join(home, 'xdg', 'git', 'ignore'), '*.log\n')],
    ['core.excludesFile in $XDG_CONFIG_HOME/git/config', (home: string) => {
      writeFileSync(join(home, 'my-ignores'), '*.log\n');
      writeFileSync(join(home, 'xdg', 'git', 'config'), '[core]\n\texcludesFile = ~/my-ignores\n');
    }],
    // git opens a relative one from the work tree's top (where it works), not from the home folder.
    ['a relative core.excludesFile, from the work tree', (home: string, ws: string) => {
      writeFileSync(join(home, '.gitconfig'), '[core]\n\texcludesFile = my-ignores\n');
      writeFileSync(join(ws, 'my-ignores'), '*.log\nmy-ignores\n');
    }],
  ] as const) {
    test(`still apply, from ${name}`, () => {
      const fx = repo();
      const home = realpathSync(mkdtempSync('/var/tmp/conch-home-'));
      mkdirSync(join(home, '.config', 'git'), { recursive: true });
      mkdirSync(join(home, 'xdg', 'git'), { recursive: true });
      writeFileSync(join(fx.ws, 'build.log'), 'x\n');
      // Where the user's git finds its config: the test's XDG_CONFIG_HOME for the XDG cases.
      const xdg: Record<string, string> = name.includes('XDG') ? { XDG_CONFIG_HOME: join(home, 'xdg') } : {};
      try {
        const before = status(home, fx.ws, undefined, xdg);
        expect(before.code).toBe(0);
        expect(lines(before.stdout).sort()).toEqual(['?? .env', '?? build.log']);
        configure(home, fx.ws);
        const after = status(home, fx.ws, undefined, xdg);
        expect(after.code).toBe(0);
        expect(lines(after.stdout)).toEqual(['?? .env']);
      } finally {
        rmSync(home, { recursive: true, force: true });
        fx.cleanup();
      }
    });
  }
});

test('escapePattern leaves no character special', () => {
  expect(escapePattern('a b/[x]*?!#\\.env')).toBe('a\\ b/\\[x\\]\\*\\?\\!\\#\\\\.env');
});
