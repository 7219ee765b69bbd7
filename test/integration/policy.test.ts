// Capability flags, command rules and policy files, seen from outside: what the model is offered
// (recorded by the local model server) and what happens when it calls a tool anyway.
import { describe, expect, test } from 'bun:test';
import { existsSync } from 'node:fs';
import { mkdir, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { anthropicEnv, runConch, writeConfig, useHarness } from '../support/cli.ts';

const harness = useHarness();

const run = (args: string[]) =>
  runConch({ dirs: harness.dirs, args: ['--model', 'anthropic/test-model', ...args], env: anthropicEnv(harness.server.anthropicBaseUrl) });
const offered = (i = 0) => (harness.server.requests[i]!.body.tools ?? []).map((t: any) => t.name).sort();
const lastResult = (i: number) => JSON.stringify(harness.server.requests[i]!.body.messages.at(-1).content);

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
      harness.server.script([{ text: 'ok' }]);
      const r = await run([...flags, 'the task words']);
      expect(r.code).toBe(0);
      expect(offered()).toEqual(tools);
      // The task survives boolean flags placed before it.
      expect(JSON.stringify(harness.server.requests[0]!.body.messages)).toContain('the task words');
    });
  }

  test('a call to a tool the flags removed is refused with the reason', async () => {
    harness.server.script([{ toolCalls: [{ name: 'write', arguments: { path: 'x.txt', content: 'x' } }] }, { text: 'ok' }]);
    const r = await run(['--read-only', 'go']);
    expect(r.code).toBe(0);
    expect(lastResult(1)).toContain('read-only');
    expect(existsSync(join(harness.dirs.workspace, 'x.txt'))).toBe(false);
  });

  test('no usable sandbox: bash is not offered, a call to it is refused with the fix, and nothing runs', async () => {
    // A PATH with what bin/conch needs but no bwrap: the probe fails, restricted mode fails closed.
    const bin = join(harness.dirs.home, 'bin');
    await mkdir(bin);
    for (const tool of ['sh', 'dirname', 'readlink', 'find', 'head']) await symlink(Bun.which(tool)!, join(bin, tool));
    harness.server.script([{ toolCalls: [{ name: 'bash', arguments: { command: 'touch ran.txt' } }] }, { text: 'ok' }]);
    const r = await runConch({
      dirs: harness.dirs,
      args: ['--model', 'anthropic/test-model', 'go'],
      env: { ...anthropicEnv(harness.server.anthropicBaseUrl), PATH: bin },
    });
    expect(r.code).toBe(0);
    expect(r.stderr).toContain('no usable sandbox');
    expect(r.stderr).toContain('--unrestricted');
    expect(offered()).toEqual(['edit', 'read', 'write']);
    expect(lastResult(1)).toContain('no usable sandbox');
    expect(existsSync(join(harness.dirs.workspace, 'ran.txt'))).toBe(false);
  });

  test('--tools naming an unregistered tool is a setup error', async () => {
    const r = await run(['--tools', 'read,teleport', 'go']);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('teleport');
    expect(harness.server.requests).toHaveLength(0);
  });
});

describe('command rules', () => {
  test('a denied command is a tool error naming the rule; with --stop-on-deny the run ends policy_denied', async () => {
    await writeConfig(harness.dirs, {
      shell: { commands: { deny: [{ id: 'docs.no-rm', executable: 'rm', args: ['-rf'], match: 'prefix' }] } },
    });
    await writeFile(join(harness.dirs.workspace, 'keep.txt'), 'keep');
    harness.server.script([{ toolCalls: [{ name: 'bash', arguments: { command: 'rm -rf keep.txt' } }] }, { text: 'adapted' }]);
    const soft = await run(['go']);
    expect(soft.code).toBe(0);
    expect(lastResult(1)).toContain('docs.no-rm');
    expect(existsSync(join(harness.dirs.workspace, 'keep.txt'))).toBe(true);

    harness.server.requests.length = 0;
    harness.server.script([{ toolCalls: [{ name: 'bash', arguments: { command: 'rm -rf keep.txt' } }] }]);
    const hard = await run(['--json', '--stop-on-deny', 'go']);
    expect(hard.code).toBe(3);
    const env = JSON.parse(hard.stdout);
    expect(env.status).toBe('policy_denied');
    expect(env.rule).toBe('docs.no-rm');
    expect(existsSync(join(harness.dirs.workspace, 'keep.txt'))).toBe(true);
  });

  test('an "ask" rule without a terminal denies and says so', async () => {
    await writeConfig(harness.dirs, { shell: { commands: { default: 'ask' } } });
    harness.server.script([{ toolCalls: [{ name: 'bash', arguments: { command: 'touch made.txt' } }] }, { text: 'ok' }]);
    const r = await run(['go']);
    expect(r.code).toBe(0);
    expect(lastResult(1)).toContain('terminal');
    expect(existsSync(join(harness.dirs.workspace, 'made.txt'))).toBe(false);
  });

  test('an allow list refuses a pipeline it cannot prove, naming the construct', async () => {
    await writeConfig(harness.dirs, {
      shell: { commands: { allow: [{ id: 'docs.echo', executable: 'echo', args: [], match: 'prefix' }] } },
    });
    harness.server.script([{ toolCalls: [{ name: 'bash', arguments: { command: 'echo hi | tee out.txt' } }] }, { text: 'ok' }]);
    const r = await run(['go']);
    expect(r.code).toBe(0);
    expect(lastResult(1)).toContain('pipe');
    expect(existsSync(join(harness.dirs.workspace, 'out.txt'))).toBe(false);
  });
});

describe('policy file', () => {
  test('a tool the policy denies stays denied under --unrestricted', async () => {
    const policy = join(harness.dirs.home, 'policy.json');
    await writeFile(policy, JSON.stringify({ version: 1, tools: { deny: [{ id: 'p.no-write', name: 'write' }] } }));
    harness.server.script([{ toolCalls: [{ name: 'write', arguments: { path: 'w.txt', content: 'x' } }] }, { text: 'ok' }]);
    const r = await run(['--unrestricted', '--policy', policy, 'go']);
    expect(r.code).toBe(0);
    expect(offered()).not.toContain('write');
    expect(lastResult(1)).toContain('p.no-write');
    expect(existsSync(join(harness.dirs.workspace, 'w.txt'))).toBe(false);
  });

  test('a write root the policy denies stays denied under --unrestricted, for write and for the shell', async () => {
    const policy = join(harness.dirs.home, 'policy.json');
    await writeFile(policy, JSON.stringify({ version: 1, write: { deny: [{ id: 'p.no-docs', glob: 'docs/**' }] } }));
    await Bun.write(join(harness.dirs.workspace, 'docs', 'keep.md'), 'original');
    harness.server.script([
      { toolCalls: [
        { name: 'write', arguments: { path: 'docs/new.md', content: 'x' } },
        { name: 'bash', arguments: { command: 'echo changed > docs/keep.md' } },
      ] },
      { text: 'ok' },
    ]);
    const r = await run(['--unrestricted', '--policy', policy, 'go']);
    expect(r.code).toBe(0);
    expect(r.stderr).toContain('stay sandboxed');
    const results = JSON.stringify(harness.server.requests[1]!.body.messages.at(-1).content);
    expect(results).toContain('p.no-docs');
    expect(existsSync(join(harness.dirs.workspace, 'docs', 'new.md'))).toBe(false);
    expect(await Bun.file(join(harness.dirs.workspace, 'docs', 'keep.md')).text()).toBe('original');
  });

  test('a policy file inside the workspace cannot be rewritten by the run it constrains', async () => {
    // Else a model could lift its own command rules: the next run (`conch -c` applies the recorded
    // --policy file again) would obey what it wrote.
    const text = JSON.stringify({ version: 1, shell: { commands: { deny: [{ id: 'c.no-curl', executable: 'curl' }] } } });
    await mkdir(join(harness.dirs.workspace, 'pol'));
    await writeFile(join(harness.dirs.workspace, 'pol', 'policy.json'), text);
    const loose = JSON.stringify({ version: 1 });
    harness.server.script([
      { toolCalls: [
        { name: 'write', arguments: { path: 'pol/policy.json', content: loose } },
        { name: 'edit', arguments: { path: 'pol/policy.json', edits: [{ old_text: 'c.no-curl', new_text: 'c.fine' }] } },
        { name: 'bash', arguments: { command: `printf '%s' '${loose}' > pol/policy.json` } },
        { name: 'bash', arguments: { command: 'mv pol/policy.json pol/old.json' } },
        { name: 'bash', arguments: { command: `mv pol pol2; mkdir -p pol; printf '%s' '${loose}' > pol/policy.json` } },
      ] },
      { text: 'ok' },
    ]);
    const r = await run(['--policy', 'pol/policy.json', 'go']);
    expect(r.code).toBe(0);
    expect(await Bun.file(join(harness.dirs.workspace, 'pol', 'policy.json')).text()).toBe(text);
    const results = JSON.stringify(harness.server.requests[1]!.body.messages.at(-1).content);
    expect(results.match(/is protected/g)).toHaveLength(2);
    expect(results.match(/Read-only file system|Device or resource busy/g)).toHaveLength(4);
  });

  test('so is one in a writable root, under the name given and the file a link there leads to', async () => {
    const root = join(harness.dirs.home, 'shared');
    await mkdir(root);
    const text = JSON.stringify({ version: 1, tools: { deny: [{ id: 't.no-edit', name: 'edit' }] } });
    await writeFile(join(root, 'real.json'), text);
    await symlink('real.json', join(root, 'policy.json'));
    harness.server.script([
      { toolCalls: [
        { name: 'write', arguments: { path: join(root, 'real.json'), content: '{"version":1}' } },
        { name: 'bash', arguments: { command: `ln -sf /dev/null ${join(root, 'policy.json')}; echo '{"version":1}' > ${join(root, 'real.json')}` } },
      ] },
      { text: 'ok' },
    ]);
    const r = await run(['--allow-write', root, '--policy', join(root, 'policy.json'), 'go']);
    expect(r.code).toBe(0);
    expect(await Bun.file(join(root, 'policy.json')).text()).toBe(text);
    expect(await Bun.file(join(root, 'real.json')).text()).toBe(text);
  });

  test('an invalid policy file is a setup error naming the file and the rule, before any model call', async () => {
    const policy = join(harness.dirs.home, 'bad-policy.json');
    await writeFile(policy, JSON.stringify({ version: 1, tools: { deny: [{ id: 'p.bad', tool: 'write' }] } }));
    const r = await run(['--policy', policy, 'go']);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('bad-policy.json');
    expect(r.stderr).toContain('p.bad');
    expect(harness.server.requests).toHaveLength(0);
  });
});
