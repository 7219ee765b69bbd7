import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { chmodSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { ttyApprover, visibleCommand } from '../../src/policy/approve.ts';
import {
  type ApprovalAnswer,
  type CommandLayer,
  type CommandRule,
  createCommandGuard,
  findOnPath,
  shellRuleLayers,
} from '../../src/policy/command-rules.ts';

let dir: string;
let bin: string;
let other: string;
let PATH: string;

function exe(path: string) {
  writeFileSync(path, '#!/bin/sh\n');
  chmodSync(path, 0o755);
}

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'conch-rules-'));
  bin = join(dir, 'bin');
  other = join(dir, 'other');
  mkdirSync(bin);
  mkdirSync(other);
  for (const name of ['git', 'wc', 'rm', 'make', 'ls']) exe(join(bin, name));
  exe(join(other, 'git'));
  exe(join(other, 'only-here'));
  writeFileSync(join(bin, 'not-executable'), 'x');
  chmodSync(join(bin, 'not-executable'), 0o644);
  mkdirSync(join(bin, 'a-directory'));
  symlinkSync(bin, join(dir, 'linked-bin'));
  mkdirSync(join(dir, 'work'));
  exe(join(dir, 'work', 'build.sh'));
  PATH = [bin, other].join(':');
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const rule = (id: string, executable: string, args: string[] = [], match: 'prefix' | 'exact' = 'prefix'): CommandRule => ({ id, executable, args, match });

function layer(source: string, parts: Partial<Omit<CommandLayer, 'source' | 'idPrefix'>>): CommandLayer {
  return { source, idPrefix: `${source.split(' ')[0]}:shell.commands`, allow: [], deny: [], ask: [], ...parts };
}

function guard(layers: CommandLayer[], approver?: (command: string, rule: string) => Promise<ApprovalAnswer>) {
  return createCommandGuard(layers, { resolveExecutable: findOnPath, path: PATH, approver });
}

async function decide(layers: CommandLayer[], command: string) {
  return guard(layers)(command, join(dir, 'work'));
}

describe('findOnPath', () => {
  test('finds the first executable regular file on PATH, without following links', () => {
    expect(findOnPath('git', PATH)).toBe(join(bin, 'git'));
    expect(findOnPath('only-here', PATH)).toBe(join(other, 'only-here'));
    expect(findOnPath('git', `${join(dir, 'linked-bin')}:${bin}`)).toBe(join(dir, 'linked-bin', 'git'));
  });
  test('skips non-executables, directories, missing names and relative PATH entries', () => {
    expect(findOnPath('not-executable', PATH)).toBeNull();
    expect(findOnPath('a-directory', PATH)).toBeNull();
    expect(findOnPath('nope', PATH)).toBeNull();
    expect(findOnPath('git', `relative/dir:${other}`)).toBe(join(other, 'git'));
  });
});

describe('precedence', () => {
  test('no rules: every command is allowed, constructs included', async () => {
    expect(await decide([], 'ls | wc -l; rm -rf x')).toEqual({ allowed: true });
    expect(await decide([layer('user config', { default: 'allow' })], 'ls *')).toEqual({ allowed: true });
  });

  test('deny wins over allow in the same layer', async () => {
    const l = layer('user config', {
      allow: [rule('git-any', join(bin, 'git'))],
      deny: [rule('no-force', join(bin, 'git'), ['push', '--force'], 'exact')],
    });
    expect(await decide([l], 'git push origin main')).toEqual({ allowed: true });
    const d = await decide([l], 'git push --force');
    expect(d).toMatchObject({ allowed: false, rule: 'no-force' });
    if (!d.allowed) expect(d.message).toContain('no-force');
  });

  test('deny in an earlier layer beats allow in a later one, and the reverse', async () => {
    const user = layer('user config', { deny: [rule('u.no-rm', 'rm')] });
    const project = layer('project config', { allow: [rule('p.rm', 'rm')] });
    expect(await decide([user, project], 'rm x')).toMatchObject({ allowed: false, rule: 'u.no-rm' });
    expect(await decide([project, user], 'rm x')).toMatchObject({ allowed: false, rule: 'u.no-rm' });
  });

  test('prefix matches longer argument lists, exact only the same list', async () => {
    const l = layer('user config', {
      allow: [rule('status', join(bin, 'git'), ['status']), rule('wc-l', join(bin, 'wc'), ['-l'], 'exact')],
    });
    expect(await decide([l], 'git status')).toEqual({ allowed: true });
    expect(await decide([l], 'git status --short')).toEqual({ allowed: true });
    expect(await decide([l], 'git stash')).toMatchObject({ allowed: false });
    expect(await decide([l], 'wc -l')).toEqual({ allowed: true });
    expect(await decide([l], 'wc -l file')).toMatchObject({ allowed: false });
    expect(await decide([l], 'wc')).toMatchObject({ allowed: false });
  });

  test('an empty allow list allows by default; default deny denies everything unmatched', async () => {
    expect(await decide([layer('user config', { deny: [rule('x', 'rm')] })], 'ls')).toEqual({ allowed: true });
    const d = await decide([layer('user config', { default: 'deny' })], 'ls');
    expect(d).toMatchObject({ allowed: false, rule: 'user:shell.commands.default' });
  });

  test('a non-empty allow list denies the unmatched and says what is allowed', async () => {
    const l = layer('user config', { allow: [rule('docs.wc', join(bin, 'wc'))] });
    const d = await decide([l], 'rm -rf build');
    expect(d).toMatchObject({ allowed: false, rule: 'user:shell.commands.allow' });
    if (!d.allowed) {
      expect(d.message).toContain(join(bin, 'rm'));
      expect(d.message).toContain('"docs.wc"');
    }
  });

  test('executables: PATH name, absolute path, bare-name rule, other directory, relative path', async () => {
    const l = layer('user config', { allow: [rule('git', join(bin, 'git')), rule('make', 'make'), rule('build', join(dir, 'work', 'build.sh'))] });
    expect(await decide([l], 'git log')).toEqual({ allowed: true });
    expect(await decide([l], `${join(bin, 'git')} log`)).toEqual({ allowed: true });
    expect(await decide([l], 'make all')).toEqual({ allowed: true });
    expect(await decide([l], `${join(other, 'git')} log`)).toMatchObject({ allowed: false });
    expect(await decide([l], './build.sh')).toEqual({ allowed: true });
    expect(await decide([l], '../work/build.sh')).toEqual({ allowed: true });
  });

  test('a rule naming a directory through a symlink matches the same program', async () => {
    const l = layer('user config', { deny: [rule('linked', join(dir, 'linked-bin', 'rm'))] });
    expect(await decide([l], 'rm x')).toMatchObject({ allowed: false, rule: 'linked' });
  });

  test('a program not on PATH cannot be allowed by an allow list', async () => {
    const d = await decide([layer('user config', { allow: [rule('git', 'git')] })], 'curl example.com');
    expect(d).toMatchObject({ allowed: false });
    if (!d.allowed) expect(d.message).toContain('"curl" was not found on the sandbox PATH');
  });

  test('env FOO=1 cmd is judged as cmd', async () => {
    const l = layer('user config', { deny: [rule('no-force', 'git', ['push', '--force'], 'exact')] });
    expect(await decide([l], 'env GIT_TRACE=1 git push --force')).toMatchObject({ allowed: false, rule: 'no-force' });
    expect(await decide([l], 'A=1 git push --force')).toMatchObject({ allowed: false, rule: 'no-force' });
  });
});

describe('commands that cannot be proven', () => {
  const allowGit = layer('user config', { allow: [rule('git', 'git')] });
  test('denied when any allow rule exists, naming the construct', async () => {
    const d = await decide([allowGit], 'git status | head');
    expect(d).toMatchObject({ allowed: false, rule: 'user:shell.commands.allow' });
    if (!d.allowed) expect(d.message).toContain("a pipe '|'");
  });
  test('denied under default deny', async () => {
    const d = await decide([layer('policy file', { default: 'deny' })], 'echo $HOME');
    expect(d).toMatchObject({ allowed: false, rule: 'policy:shell.commands.default' });
    if (!d.allowed) expect(d.message).toContain('variable expansion');
  });
  test('allowed with deny rules only (the sandbox, not the rule, contains them)', async () => {
    expect(await decide([layer('user config', { deny: [rule('rm', 'rm')] })], 'ls && echo ok')).toEqual({ allowed: true });
  });
  test('a PATH assignment or a code-loading variable is not provable', async () => {
    const d = await decide([allowGit], 'PATH=/tmp/evil git status');
    expect(d).toMatchObject({ allowed: false });
    if (!d.allowed) expect(d.message).toContain('PATH assignment');
    const e = await decide([allowGit], 'LD_PRELOAD=./x.so git status');
    if (!e.allowed) expect(e.message).toContain('LD_PRELOAD');
    expect(e.allowed).toBe(false);
    expect(await decide([allowGit], `PATH=/tmp/evil ${join(bin, 'git')} status`)).toEqual({ allowed: true });
  });
});

describe('layers intersect', () => {
  const user = layer('user config', { allow: [rule('u.git-status', 'git', ['status'])] });
  const project = layer('project config', { allow: [rule('p.git-status', 'git', ['status']), rule('p.rm', 'rm')] });
  test('a project allow rule cannot widen the user allow list', async () => {
    expect(await decide([user, project], 'git status')).toEqual({ allowed: true });
    expect(await decide([user, project], 'rm -rf x')).toMatchObject({ allowed: false, rule: 'user:shell.commands.allow' });
  });
  test('a project allow list narrows an open user config', async () => {
    const open = layer('user config', { deny: [rule('u.no-make', 'make')] });
    expect(await decide([open, project], 'ls')).toMatchObject({ allowed: false, rule: 'project:shell.commands.allow' });
    expect(await decide([open, project], 'rm x')).toEqual({ allowed: true });
  });
});

describe('ask', () => {
  const asking = layer('policy file', { ask: [rule('c.push', 'git', ['push'])], allow: [rule('c.git', 'git')] });

  test('without an approver, ask is deny and says why', async () => {
    const d = await decide([asking], 'git push origin main');
    expect(d).toMatchObject({ allowed: false, rule: 'c.push' });
    if (!d.allowed) expect(d.message).toStartWith('"ask" rule c.push needs a terminal; denied');
    expect(await decide([asking], 'git status')).toEqual({ allowed: true });
  });

  test('once allows this time only; deny refuses; the approver sees the exact command and rule', async () => {
    const answers: ApprovalAnswer[] = ['once', 'deny'];
    const asked: [string, string][] = [];
    const g = guard([asking], async (command, id) => {
      asked.push([command, id]);
      return answers.shift()!;
    });
    expect(await g('git push origin main', dir)).toEqual({ allowed: true });
    const d = await g('git push origin main', dir);
    expect(d).toMatchObject({ allowed: false, rule: 'c.push' });
    if (!d.allowed) expect(d.message).toContain('declined');
    expect(asked).toEqual([
      ['git push origin main', 'c.push'],
      ['git push origin main', 'c.push'],
    ]);
  });

  test('always remembers the rule for the rest of the run', async () => {
    let asked = 0;
    const g = guard([asking], async () => {
      asked++;
      return 'always';
    });
    expect(await g('git push origin a', dir)).toEqual({ allowed: true });
    expect(await g('git push origin b', dir)).toEqual({ allowed: true });
    expect(asked).toBe(1);
  });

  test('always under a default "ask" remembers only that exact command', async () => {
    let asked = 0;
    const g = guard([layer('user config', { default: 'ask' })], async () => {
      asked++;
      return 'always';
    });
    await g('ls a', dir);
    await g('ls a', dir);
    await g('ls b', dir);
    expect(asked).toBe(2);
  });

  test('an approver that fails denies', async () => {
    const g = guard([asking], async () => {
      throw new Error('terminal went away');
    });
    expect(await g('git push', dir)).toMatchObject({ allowed: false, rule: 'c.push' });
  });

  test('a deny rule is never asked about', async () => {
    let asked = 0;
    const l = layer('user config', { ask: [rule('ask-git', 'git')], deny: [rule('no-force', 'git', ['push', '--force'])] });
    const g = guard([l], async () => {
      asked++;
      return 'once';
    });
    expect(await g('git push --force', dir)).toMatchObject({ allowed: false, rule: 'no-force' });
    expect(asked).toBe(0);
  });

  test('an unprovable command under ask rules is asked about, not silently run', async () => {
    const seen: string[] = [];
    const g = guard([layer('user config', { ask: [rule('ask-rm', 'rm')] })], async (command) => {
      seen.push(command);
      return 'deny';
    });
    expect(await g('ls | xargs rm', dir)).toMatchObject({ allowed: false, rule: 'ask-rm' });
    expect(seen).toEqual(['ls | xargs rm']);
  });

  test('questions are asked one at a time', async () => {
    let open = 0;
    let maxOpen = 0;
    const g = guard([asking], async () => {
      open++;
      maxOpen = Math.max(maxOpen, open);
      await new Promise((r) => setTimeout(r, 5));
      open--;
      return 'once';
    });
    await Promise.all([g('git push a', dir), g('git push b', dir), g('git push c', dir)]);
    expect(maxOpen).toBe(1);
  });
});

test('shellRuleLayers reads Config.shellRules', () => {
  const l = layer('user config', { default: 'deny' });
  expect(shellRuleLayers([l])).toEqual([l]);
  expect(shellRuleLayers(null)).toBeNull();
  expect(shellRuleLayers([])).toBeNull();
});

describe('ttyApprover', () => {
  function tty(isTTY = true) {
    const input = Object.assign(new PassThrough(), { isTTY });
    let shown = '';
    const output = { isTTY, write: (text: string) => ((shown += text), true) };
    return { input, output, shown: () => shown };
  }

  test.each([
    ['y\n', 'once'],
    ['yes\n', 'once'],
    ['A\n', 'always'],
    ['n\n', 'deny'],
    ['\n', 'deny'],
    ['maybe\n', 'deny'],
  ] as const)('answer %p → %s', async (typed, expected) => {
    const t = tty();
    const answer = ttyApprover(t.input, t.output)('git push origin main', 'c.push');
    t.input.write(typed);
    expect(await answer).toBe(expected);
  });

  test('shows the exact command, the rule id and the choices', async () => {
    const t = tty();
    const answer = ttyApprover(t.input, t.output)('git push origin main', 'c.push');
    t.input.write('y');
    t.input.write('\n');
    await answer;
    expect(t.shown()).toContain('git push origin main');
    expect(t.shown()).toContain('"c.push"');
    expect(t.shown()).toContain('[y]es / [N]o / [a]lways for this run');
  });

  test('control characters in the command are shown, not obeyed', async () => {
    const t = tty();
    const answer = ttyApprover(t.input, t.output)('ls\r\u001b[2Krm -rf /', 'r');
    t.input.write('n\n');
    await answer;
    expect(t.shown()).toContain('ls\\u{d}\\u{1b}[2Krm -rf /');
    expect(visibleCommand('a\tb\nc')).toBe('a\\tb\\nc');
  });

  test('never waits without a TTY on both sides', async () => {
    const noIn = tty(false);
    expect(await ttyApprover(noIn.input, { isTTY: true, write: () => true })('ls', 'r')).toBe('deny');
    const noOut = tty(true);
    expect(await ttyApprover(noOut.input, { isTTY: false, write: () => true })('ls', 'r')).toBe('deny');
    expect(noOut.shown()).toBe('');
  });

  test('input ending or the run being cancelled answers deny', async () => {
    const t = tty();
    const ended = ttyApprover(t.input, t.output)('ls', 'r');
    t.input.end();
    expect(await ended).toBe('deny');

    const u = tty();
    const controller = new AbortController();
    const cancelled = ttyApprover(u.input, u.output, controller.signal)('ls', 'r');
    controller.abort();
    expect(await cancelled).toBe('deny');
    expect(await ttyApprover(u.input, u.output, controller.signal)('ls', 'r')).toBe('deny');
  });

  test('plugs into the guard', async () => {
    const t = tty();
    const g = createCommandGuard([layer('user config', { ask: [rule('ask-ls', 'ls')] })], {
      resolveExecutable: findOnPath,
      path: PATH,
      approver: ttyApprover(t.input, t.output),
    });
    const decision = g('ls -la', dir);
    await new Promise((r) => setTimeout(r, 0));
    t.input.write('a\n');
    expect(await decision).toEqual({ allowed: true });
    expect(await g('ls', dir)).toEqual({ allowed: true });
  });
});
