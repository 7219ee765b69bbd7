import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ConfigError } from '../../src/core/errors.ts';
import { loadPolicyFile } from '../../src/config/policy-file.ts';

let dir: string;
let n = 0;
beforeAll(() => {
  dir = realpathSync(mkdtempSync(join(tmpdir(), 'conch-policy-')));
  mkdirSync(join(dir, 'policies'));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function write(content: unknown): string {
  const file = join(dir, 'policies', `p${n++}.json`);
  writeFileSync(file, typeof content === 'string' ? content : JSON.stringify(content));
  return file;
}

async function problem(content: unknown): Promise<ConfigError> {
  const file = write(content);
  try {
    await loadPolicyFile(file, dir);
  } catch (e) {
    expect(e).toBeInstanceOf(ConfigError);
    expect((e as Error).message).toContain(file);
    return e as ConfigError;
  }
  throw new Error(`expected ${JSON.stringify(content)} to be refused`);
}

test('a complete policy file becomes one layer with stable ids and resolved roots', async () => {
  const file = write({
    version: 1,
    tools: { allow: [{ id: 't.read', name: 'read' }, { id: 't.bash', name: 'bash' }], deny: [{ id: 't.no-write', name: 'write' }] },
    write: { allow: [{ id: 'w.here', root: '..' }], deny: [{ id: 'w.ssh', root: '/home/me/.ssh' }, { id: 'w.lock', glob: '**/*.lock' }] },
    read: { roots: [{ id: 'r.repo', root: 'repo' }], deny: [{ id: 'r.env', glob: '**/.env*' }] },
    shell: {
      commands: {
        default: 'deny',
        allow: [{ id: 'c.status', executable: '/usr/bin/git', args: ['status'], match: 'prefix' }, { id: 'c.wc', executable: 'wc', env: ['LC_ALL'] }],
        deny: [{ id: 'c.force', executable: '/usr/bin/git', args: ['push', '--force'], match: 'exact' }],
        ask: [{ id: 'c.push', executable: '/usr/bin/git', args: ['push'] }],
      },
    },
    sandbox: { profile: 'read-only', network: false },
  });
  const layer = await loadPolicyFile(file, '/somewhere/else');
  expect(layer.kind).toBe('policy');
  expect(layer.source).toBe(`policy file ${file}`);
  expect(layer.toolsAllow).toEqual({ names: ['read', 'bash'], rule: 'policy:tools.allow' });
  expect(layer.toolsDeny).toEqual([{ name: 'write', rule: 't.no-write' }]);
  expect(layer.writeAllow).toEqual([{ rule: 'w.here', root: dir }]);
  expect(layer.writeDeny).toEqual([
    { rule: 'w.ssh', root: '/home/me/.ssh' },
    { rule: 'w.lock', glob: '**/*.lock' },
  ]);
  expect(layer.readRoots).toEqual([{ rule: 'r.repo', root: join(dir, 'policies', 'repo') }]);
  expect(layer.readDeny).toEqual([{ rule: 'r.env', glob: '**/.env*' }]);
  expect(layer.network).toBe(false);
  expect(layer.profile).toBe('read-only');
  expect(layer.commands).toEqual({
    source: `policy file ${file}`,
    idPrefix: 'policy:shell.commands',
    default: 'deny',
    allow: [
      { id: 'c.status', executable: '/usr/bin/git', args: ['status'], match: 'prefix' },
      { id: 'c.wc', executable: 'wc', args: [], match: 'prefix', env: ['LC_ALL'] },
    ],
    deny: [{ id: 'c.force', executable: '/usr/bin/git', args: ['push', '--force'], match: 'exact' }],
    ask: [{ id: 'c.push', executable: '/usr/bin/git', args: ['push'], match: 'prefix' }],
  });
});

test('the path is relative to the working directory', async () => {
  const file = write({ version: 1 });
  const layer = await loadPolicyFile(file.slice(dir.length + 1), dir);
  expect(layer.source).toBe(`policy file ${file}`);
});

describe('invalid policy files name the file, the rule and the problem', () => {
  test('missing version', async () => {
    const e = await problem({ tools: {} });
    expect(e.message).toContain('"version" is required');
    expect(e.message).toContain('"version": 1');
  });
  test('unsupported version', async () => {
    expect((await problem({ version: 2 })).message).toContain('"version" must be 1, got 2');
  });
  test('unknown top-level key, with a suggestion', async () => {
    const e = await problem({ version: 1, tool: {} });
    expect(e.message).toContain('"tool" is not a known key');
    expect(e.message).toContain('Valid keys: version, tools, write, read, shell, sandbox');
    expect(e.message).toContain('Did you mean "tools"?');
  });
  test('a rule without an id is named by its position', async () => {
    const e = await problem({ version: 1, tools: { deny: [{ name: 'bash' }] } });
    expect(e.message).toContain('rule (tools.deny[0]): "id" is required');
  });
  test('a bad field is named with the rule id', async () => {
    const e = await problem({ version: 1, shell: { commands: { allow: [{ id: 'c.x', executable: '/bin/ls', match: 'pre' }] } } });
    expect(e.message).toContain('rule "c.x" (shell.commands.allow[0]): "match" must be one of "prefix", "exact", got "pre"');
  });
  test('an unknown key in a rule suggests the right one', async () => {
    const e = await problem({ version: 1, write: { allow: [{ id: 'w.a', roots: '/x' }] } });
    expect(e.message).toContain('rule "w.a" (write.allow[0])');
    expect(e.message).toContain('Did you mean "root"?');
  });
  test('allow lists take roots only', async () => {
    const e = await problem({ version: 1, write: { allow: [{ id: 'w.g', glob: 'src/**' }] } });
    expect(e.message).toContain('rule "w.g" (write.allow[0])');
    expect(e.message).toContain('"glob" is not a known key');
  });
  test('duplicate ids', async () => {
    const e = await problem({ version: 1, tools: { deny: [{ id: 'same', name: 'bash' }] }, read: { deny: [{ id: 'same', glob: 'x' }] } });
    expect(e.message).toContain('rule "same" (read.deny[0]) reuses the id of tools.deny[0]');
  });
  test('absolute or escaping globs', async () => {
    expect((await problem({ version: 1, write: { deny: [{ id: 'g', glob: '/etc/**' }] } })).message).toContain('rule "g" (write.deny[0]): "glob" must be workspace-relative');
    expect((await problem({ version: 1, read: { deny: [{ id: 'g', glob: '../x' }] } })).message).toContain('workspace-relative');
  });
  test('a relative executable path', async () => {
    const e = await problem({ version: 1, shell: { commands: { deny: [{ id: 'c.rel', executable: 'bin/rm' }] } } });
    expect(e.message).toContain('rule "c.rel" (shell.commands.deny[0]): "executable" must be an absolute path or a bare program name');
  });
  test('"env" on a deny rule, or one that is not a variable name', async () => {
    const deny = await problem({ version: 1, shell: { commands: { deny: [{ id: 'c.rm', executable: 'rm', env: ['X'] }] } } });
    expect(deny.message).toContain('rule "c.rm" (shell.commands.deny[0]): "env" only applies to allow and ask rules');
    expect(deny.key).toBe('shell.commands.deny[0].env');
    const name = await problem({ version: 1, shell: { commands: { ask: [{ id: 'c.push', executable: 'git', env: ['A=B'] }] } } });
    expect(name.message).toContain('rule "c.push" (shell.commands.ask[0]): "env[0]" must be a variable name such as "CI", got "A=B"');
  });
  test('a wrong sandbox profile', async () => {
    const e = await problem({ version: 1, sandbox: { profile: 'none' } });
    expect(e.message).toContain('"sandbox.profile" must be one of "workspace-write", "read-only", got "none"');
  });
  test('not JSON', async () => {
    expect((await problem('{ version: 1 ')).message).toContain('not valid JSON');
  });
  test('a missing file names the flag', async () => {
    const missing = join(dir, 'nope.json');
    const e = await loadPolicyFile('nope.json', dir).catch((err) => err);
    expect(e).toBeInstanceOf(ConfigError);
    expect(e.message).toBe(`--policy nope.json: the policy file ${missing} does not exist.`);
  });
});
