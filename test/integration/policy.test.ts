// Capability flags, command rules and policy files, seen from outside: what the model is offered
// (recorded by the local model server) and what happens when it calls a tool anyway.
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, test } from 'bun:test';
import { existsSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { startModelServer, type ModelServer } from '../support/model-server.ts';
import { anthropicEnv, makeDirs, runConch, writeConfig, type Sandbox } from '../support/cli.ts';

let server: ModelServer;
let dirs: Sandbox;
beforeAll(async () => {
  server = await startModelServer();
});
afterAll(() => server.close());
beforeEach(async () => {
  dirs = await makeDirs();
  server.requests.length = 0;
});
afterEach(() => dirs.cleanup());

const run = (args: string[]) =>
  runConch({ dirs, args: ['--model', 'anthropic/test-model', ...args], env: anthropicEnv(server.anthropicBaseUrl) });
const offered = (i = 0) => (server.requests[i]!.body.tools ?? []).map((t: any) => t.name).sort();
const lastResult = (i: number) => JSON.stringify(server.requests[i]!.body.messages.at(-1).content);

describe('capability flags narrow the catalog the model sees', () => {
  const cases: [string[], string[]][] = [
    [[], ['bash', 'edit', 'read', 'write']],
    [['--no-shell'], ['edit', 'read', 'write']],
    [['--read-only'], ['bash', 'read']],
    [['--no-filesystem'], ['bash']],
    [['--tools', 'read,bash'], ['bash', 'read']],
    [['--no-shell', '--read-only'], ['read']],
  ];
  for (const [flags, tools] of cases) {
    test(`${flags.join(' ') || '(no flags)'} → ${tools.join(', ')}`, async () => {
      server.script([{ text: 'ok' }]);
      const r = await run([...flags, 'the task words']);
      expect(r.code).toBe(0);
      expect(offered()).toEqual(tools);
      // The task survives boolean flags placed before it.
      expect(JSON.stringify(server.requests[0]!.body.messages)).toContain('the task words');
    });
  }

  test('a call to a tool the flags removed is refused with the reason', async () => {
    server.script([{ toolCalls: [{ name: 'write', arguments: { path: 'x.txt', content: 'x' } }] }, { text: 'ok' }]);
    const r = await run(['--read-only', 'go']);
    expect(r.code).toBe(0);
    expect(lastResult(1)).toContain('read-only');
    expect(existsSync(join(dirs.workspace, 'x.txt'))).toBe(false);
  });

  test('--tools naming an unregistered tool is a setup error', async () => {
    const r = await run(['--tools', 'read,teleport', 'go']);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('teleport');
    expect(server.requests).toHaveLength(0);
  });
});

describe('command rules', () => {
  test('a denied command is a tool error naming the rule; with --stop-on-deny the run ends policy_denied', async () => {
    await writeConfig(dirs, {
      shell: { commands: { deny: [{ id: 'docs.no-rm', executable: 'rm', args: ['-rf'], match: 'prefix' }] } },
    });
    await writeFile(join(dirs.workspace, 'keep.txt'), 'keep');
    server.script([{ toolCalls: [{ name: 'bash', arguments: { command: 'rm -rf keep.txt' } }] }, { text: 'adapted' }]);
    const soft = await run(['go']);
    expect(soft.code).toBe(0);
    expect(lastResult(1)).toContain('docs.no-rm');
    expect(existsSync(join(dirs.workspace, 'keep.txt'))).toBe(true);

    server.requests.length = 0;
    server.script([{ toolCalls: [{ name: 'bash', arguments: { command: 'rm -rf keep.txt' } }] }]);
    const hard = await run(['--json', '--stop-on-deny', 'go']);
    expect(hard.code).toBe(3);
    const env = JSON.parse(hard.stdout);
    expect(env.status).toBe('policy_denied');
    expect(env.rule).toBe('docs.no-rm');
    expect(existsSync(join(dirs.workspace, 'keep.txt'))).toBe(true);
  });

  test('an "ask" rule without a terminal denies and says so', async () => {
    await writeConfig(dirs, { shell: { commands: { default: 'ask' } } });
    server.script([{ toolCalls: [{ name: 'bash', arguments: { command: 'touch made.txt' } }] }, { text: 'ok' }]);
    const r = await run(['go']);
    expect(r.code).toBe(0);
    expect(lastResult(1)).toContain('terminal');
    expect(existsSync(join(dirs.workspace, 'made.txt'))).toBe(false);
  });

  test('an allow list refuses a pipeline it cannot prove, naming the construct', async () => {
    await writeConfig(dirs, {
      shell: { commands: { allow: [{ id: 'docs.echo', executable: 'echo', args: [], match: 'prefix' }] } },
    });
    server.script([{ toolCalls: [{ name: 'bash', arguments: { command: 'echo hi | tee out.txt' } }] }, { text: 'ok' }]);
    const r = await run(['go']);
    expect(r.code).toBe(0);
    expect(lastResult(1)).toContain('pipe');
    expect(existsSync(join(dirs.workspace, 'out.txt'))).toBe(false);
  });
});

describe('policy file', () => {
  test('a tool the policy denies stays denied under --unrestricted', async () => {
    const policy = join(dirs.home, 'policy.json');
    await writeFile(policy, JSON.stringify({ version: 1, tools: { deny: [{ id: 'p.no-write', name: 'write' }] } }));
    server.script([{ toolCalls: [{ name: 'write', arguments: { path: 'w.txt', content: 'x' } }] }, { text: 'ok' }]);
    const r = await run(['--unrestricted', '--policy', policy, 'go']);
    expect(r.code).toBe(0);
    expect(offered()).not.toContain('write');
    expect(lastResult(1)).toContain('p.no-write');
    expect(existsSync(join(dirs.workspace, 'w.txt'))).toBe(false);
  });

  test('a write root the policy denies stays denied under --unrestricted, for write and for the shell', async () => {
    const policy = join(dirs.home, 'policy.json');
    await writeFile(policy, JSON.stringify({ version: 1, write: { deny: [{ id: 'p.no-docs', glob: 'docs/**' }] } }));
    await Bun.write(join(dirs.workspace, 'docs', 'keep.md'), 'original');
    server.script([
      { toolCalls: [
        { name: 'write', arguments: { path: 'docs/new.md', content: 'x' } },
        { name: 'bash', arguments: { command: 'echo changed > docs/keep.md' } },
      ] },
      { text: 'ok' },
    ]);
    const r = await run(['--unrestricted', '--policy', policy, 'go']);
    expect(r.code).toBe(0);
    expect(r.stderr).toContain('stay sandboxed');
    const results = JSON.stringify(server.requests[1]!.body.messages.at(-1).content);
    expect(results).toContain('p.no-docs');
    expect(existsSync(join(dirs.workspace, 'docs', 'new.md'))).toBe(false);
    expect(await Bun.file(join(dirs.workspace, 'docs', 'keep.md')).text()).toBe('original');
  });

  test('an invalid policy file is a setup error naming the file and the rule, before any model call', async () => {
    const policy = join(dirs.home, 'bad-policy.json');
    await writeFile(policy, JSON.stringify({ version: 1, tools: { deny: [{ id: 'p.bad', tool: 'write' }] } }));
    const r = await run(['--policy', policy, 'go']);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('bad-policy.json');
    expect(r.stderr).toContain('p.bad');
    expect(server.requests).toHaveLength(0);
  });
});
