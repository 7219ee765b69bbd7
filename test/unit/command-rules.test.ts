import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { chmodSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { ttyApprover, visibleCommand } from '../../src/policy/approve.ts';
import { type ApprovalAnswer, createCommandGuard, findOnPath, shellRuleLayers, shellRuleRoots } from '../../src/policy/command-rules.ts';
import type { CommandLayer, CommandRule } from '../../src/config/command-layer.ts';

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
    expect(await decide([allowGit], `PATH=/tmp/evil ${join(bin, 'git')} status`)).toMatchObject({ allowed: false });
    const withPath = layer('user config', { allow: [{ ...rule('git', 'git'), env: ['PATH'] }] });
    expect(await decide([withPath], `PATH=/tmp/evil ${join(bin, 'git')} status`)).toEqual({ allowed: true });
  });
});

describe('variables set before the program', () => {
  const gitStatus = (env?: string[]) => layer('user config', { allow: [{ ...rule('git-status', join(bin, 'git'), ['status']), ...(env && { env }) }] });

  for (const [command, variable] of [
    [`GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=core.fsmonitor GIT_CONFIG_VALUE_0='touch pwned; false' git status`, 'GIT_CONFIG_COUNT'],
    [`GIT_CONFIG_PARAMETERS="'core.fsmonitor=touch pwned'" git status`, 'GIT_CONFIG_PARAMETERS'],
    ['GIT_DIR=evil/.git git status', 'GIT_DIR'],
    ['env GIT_DIR=evil/.git git status', 'GIT_DIR'],
    ['NODE_OPTIONS=--require=./x.js PERL5OPT=-Mx git status', 'NODE_OPTIONS'],
  ] as const) {
    test(`an allow rule without "env" does not prove: ${command}`, async () => {
      const d = await decide([gitStatus()], command);
      expect(d).toMatchObject({ allowed: false, rule: 'user:shell.commands.allow' });
      if (!d.allowed) {
        expect(d.message).toContain(variable);
        expect(d.message).toContain(`add "env": ["${variable}"`);
        expect(d.message).toContain('rule "git-status"');
      }
    });
  }

  test('a rule\'s "env" permits exactly the names it lists', async () => {
    const l = gitStatus(['GIT_TRACE', 'GIT_PAGER']);
    expect(await decide([l], 'GIT_TRACE=1 git status')).toEqual({ allowed: true });
    expect(await decide([l], 'env GIT_TRACE=1 GIT_PAGER=cat git status')).toEqual({ allowed: true });
    const d = await decide([l], 'GIT_TRACE=1 GIT_DIR=x git status');
    expect(d).toMatchObject({ allowed: false });
    if (!d.allowed) {
      expect(d.message).toContain('"env": ["GIT_DIR"]');
      expect(d.message).not.toContain('"GIT_TRACE"');
    }
  });

  test('code-loading variables are named as such', async () => {
    const d = await decide([gitStatus()], 'LD_PRELOAD=./x.so git status');
    expect(d.allowed).toBe(false);
    if (!d.allowed) expect(d.message).toContain('LD_PRELOAD makes programs load other code');
  });

  test('default deny refuses them; deny rules alone let them through', async () => {
    const strict = layer('policy file', { default: 'deny', allow: [rule('c.ls', 'ls')] });
    expect(await decide([strict], 'ls')).toEqual({ allowed: true });
    expect(await decide([strict], 'LC_ALL=C ls')).toMatchObject({ allowed: false, rule: 'policy:shell.commands.default' });
    expect(await decide([layer('user config', { deny: [rule('rm', 'rm')] })], 'FOO=1 ls')).toEqual({ allowed: true });
  });

  test('under ask rules a command that sets variables is asked about as that exact command', async () => {
    const asked: string[] = [];
    const approve = async (command: string) => {
      asked.push(command);
      return 'always' as const;
    };
    const g = guard([layer('user config', { ask: [rule('ask-push', 'git', ['push'])] })], approve);
    expect(await g('GIT_SSH_COMMAND=./evil git push', dir)).toEqual({ allowed: true });
    expect(await g('git push', dir)).toEqual({ allowed: true }); // "always" above was for that command only
    expect(await g('git push origin', dir)).toEqual({ allowed: true }); // …and this one for the rule
    expect(await g('FOO=1 ls', dir)).toEqual({ allowed: true }); // unmatched, but a variable could reach "git push"
    expect(await g('ls', dir)).toEqual({ allowed: true });
    expect(asked).toEqual(['GIT_SSH_COMMAND=./evil git push', 'git push', 'FOO=1 ls']);

    const permitted = guard([layer('user config', { ask: [{ ...rule('ask-push', 'git', ['push']), env: ['GIT_SSH_COMMAND'] }] })]);
    const d = await permitted('GIT_SSH_COMMAND=ssh git push', dir);
    expect(d).toMatchObject({ allowed: false, rule: 'ask-push' });
    if (!d.allowed) expect(d.message).toContain('matches "ask" rule "ask-push"');
  });

  test('every layer must permit them: a later layer\'s "env" does not widen an earlier one', async () => {
    const user = gitStatus();
    const project = layer('project config', { allow: [{ ...rule('p.git', 'git'), env: ['GIT_DIR'] }] });
    expect(await decide([user, project], 'git status')).toEqual({ allowed: true });
    expect(await decide([user, project], 'GIT_DIR=x git status')).toMatchObject({ allowed: false, rule: 'user:shell.commands.allow' });
    expect(await decide([gitStatus(['GIT_DIR']), project], 'GIT_DIR=x git status')).toEqual({ allowed: true });
  });
});

describe('directories commands can change', () => {
  const allowStatus = () => layer('user config', { allow: [rule('git-status', join(bin, 'git'), ['status'])] });
  let n = 0;
  const workspace = () => {
    const ws = join(dir, `ws-${n++}`);
    mkdirSync(ws);
    return ws;
  };

  test('a link is looked at again for every command: replaced by a real directory, it no longer matches', async () => {
    const ws = workspace();
    const g = guard([allowStatus()]);
    symlinkSync(bin, join(ws, 'd'));
    expect(await g('d/git status', ws)).toEqual({ allowed: true });
    rmSync(join(ws, 'd'));
    mkdirSync(join(ws, 'd'));
    exe(join(ws, 'd', 'git'));
    expect(await g('d/git status', ws)).toMatchObject({ allowed: false });
  });

  test('a program reached through them is not the program a rule names elsewhere', async () => {
    const ws = workspace();
    symlinkSync(bin, join(ws, 'd'));
    symlinkSync(join(ws, 'd'), join(dir, `via-${n}`));
    const g = createCommandGuard([allowStatus()], { resolveExecutable: findOnPath, path: PATH, mutableRoots: [ws] });
    const d = await g('d/git status', ws);
    expect(d).toMatchObject({ allowed: false, rule: 'user:shell.commands.allow' });
    if (!d.allowed) expect(d.message).toContain('reaches "d/git" through a directory that commands in this run can change');
    // A link outside them that leads through them is no better.
    expect(await g(`${join(dir, `via-${n}`)}/git status`, ws)).toMatchObject({ allowed: false });
    expect(await g('git status', ws)).toEqual({ allowed: true });
    expect(await g(`${join(bin, 'git')} status`, ws)).toEqual({ allowed: true });
    // Deny rules still match it.
    const deny = createCommandGuard([layer('user config', { deny: [rule('no-git', join(bin, 'git'))] })], {
      resolveExecutable: findOnPath,
      path: PATH,
      mutableRoots: [ws],
    });
    expect(await deny('d/git status', ws)).toMatchObject({ allowed: false, rule: 'no-git' });
  });

  test('a PATH entry inside them, searched before the program, could shadow it', async () => {
    const ws = workspace();
    mkdirSync(join(ws, 'bin'));
    const g = createCommandGuard([allowStatus()], { resolveExecutable: findOnPath, path: `${join(ws, 'bin')}:${PATH}`, mutableRoots: [ws] });
    expect(await g('git status', ws)).toMatchObject({ allowed: false, rule: 'user:shell.commands.allow' });
    const after = createCommandGuard([allowStatus()], { resolveExecutable: findOnPath, path: `${PATH}:${join(ws, 'bin')}`, mutableRoots: [ws] });
    expect(await after('git status', ws)).toEqual({ allowed: true });
  });

  test('a rule naming a program inside them matches it as usual', async () => {
    const ws = workspace();
    mkdirSync(join(ws, 'tools'));
    exe(join(ws, 'tools', 'check'));
    symlinkSync('tools', join(ws, 't'));
    const g = createCommandGuard([layer('user config', { allow: [rule('check', join(ws, 'tools', 'check'))] })], {
      resolveExecutable: findOnPath,
      path: PATH,
      mutableRoots: [ws],
    });
    expect(await g('tools/check', ws)).toEqual({ allowed: true });
    expect(await g('t/check --all', ws)).toEqual({ allowed: true });
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

test('shellRuleLayers and shellRuleRoots read Config.shellRules', () => {
  const l = layer('user config', { default: 'deny' });
  expect(shellRuleLayers([l])).toEqual([l]);
  expect(shellRuleLayers({ layers: [l], mutableRoots: ['/w'] })).toEqual([l]);
  expect(shellRuleRoots({ layers: [l], mutableRoots: ['/w'] })).toEqual(['/w']);
  expect(shellRuleRoots([l])).toEqual([]);
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
    // The refusal starts a line of its own, as after a typed answer.
    expect(u.shown()).toEndWith('[a]lways for this run: \nconch: not approved\n');
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
