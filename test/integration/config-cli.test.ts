// Config files through the real CLI: where a syntax error is, and what a repository's config may choose.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { existsSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { anthropicEnv, CONCH, conchEnv, runConch, useHarness, writeConfig } from '../support/cli.ts';
import { hasTmux, openTerminal } from '../support/tty.ts';
import { startModelServer, type ModelServer } from '../support/model-server.ts';

const harness = useHarness();
// The repository's server: a second one, so that the test sees which server a run talked to.
let theirs: ModelServer;
beforeAll(async () => {
  theirs = await startModelServer();
});
afterAll(() => theirs.close());

describe('a config file with a syntax error', () => {
  test('is a setup error naming the file, the line and the column', async () => {
    const file = join(harness.dirs.configHome, 'conch', 'config.json');
    await writeFile(file, '{\n  "limits": {\n    "model_calls": 3,\n  }\n}\n');
    const r = await runConch({ dirs: harness.dirs, args: ['go'], env: anthropicEnv(harness.server.anthropicBaseUrl) });
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(`${file}: not valid JSON at line 4, column 3`);
    expect(r.stderr).toContain('fix the JSON there, or empty or remove the file for the defaults.');
    expect(r.stderr).not.toMatch(/\n\s+at /);
    expect(harness.server.requests).toHaveLength(0);
  });

  test('an empty one (0 bytes, or only whitespace) is read as {}, a user or a project file', async () => {
    const user = join(harness.dirs.configHome, 'conch', 'config.json');
    const project = join(harness.dirs.workspace, '.conch', 'config.json');
    await mkdir(join(harness.dirs.workspace, '.conch'), { recursive: true });
    for (const [file, text] of [[user, ''], [user, ' \n\t\r\n'], [user, '\uFEFF'], [project, '\n']] as const) {
      await writeFile(file, text);
      harness.server.script([{ text: 'fine' }]);
      const r = await runConch({ dirs: harness.dirs, args: ['--model', 'anthropic/test-model', 'go'], env: anthropicEnv(harness.server.anthropicBaseUrl) });
      expect(r.stderr).toBe('');
      expect(r.code).toBe(0);
      expect(r.stdout).toBe('fine\n');
      await writeFile(file, '{}');
    }
    // Whitespace around something that is not JSON is still an error.
    await writeFile(user, '\n  {"limits": \n');
    const r = await runConch({ dirs: harness.dirs, args: ['--model', 'anthropic/test-model', 'go'], env: anthropicEnv(harness.server.anthropicBaseUrl) });
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(`${user}: not valid JSON at line 3, column 1, at the end of the file`);
  });

  test('that starts with a byte-order mark is read', async () => {
    await writeFile(join(harness.dirs.configHome, 'conch', 'config.json'), `\uFEFF${JSON.stringify({ limits: { model_calls: 5 } })}`);
    harness.server.script([{ text: 'fine' }]);
    const r = await runConch({ dirs: harness.dirs, args: ['--model', 'anthropic/test-model', 'go'], env: anthropicEnv(harness.server.anthropicBaseUrl) });
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(r.stdout).toBe('fine\n');
  });
});

describe("a repository's config choosing the model", () => {
  async function setUp(): Promise<void> {
    await writeConfig(harness.dirs, { model: 'mine/my-model', providers: { mine: { type: 'openai', baseUrl: harness.server.openaiBaseUrl } } });
    await mkdir(join(harness.dirs.workspace, '.conch'), { recursive: true });
    const project = { model: 'team/their-model', providers: { team: { type: 'openai', baseUrl: theirs.openaiBaseUrl } } };
    await writeFile(join(harness.dirs.workspace, '.conch', 'config.json'), JSON.stringify(project));
    theirs.requests.length = 0;
    harness.server.script([{ text: 'from my server' }]);
    theirs.script([{ text: 'from their server' }]);
  }

  test('is ignored in a workspace that is not trusted, saying so in one line', async () => {
    await setUp();
    const r = await runConch({ dirs: harness.dirs, args: ['go'] });
    expect(r.code).toBe(0);
    expect(r.stdout).toBe('from my server\n');
    expect(harness.server.requests).toHaveLength(1);
    expect(harness.server.requests[0]!.body.model).toBe('my-model');
    expect(theirs.requests).toHaveLength(0);
    const lines = r.stderr.trim().split('\n');
    expect(lines).toEqual([
      `conch: ${join(harness.dirs.workspace, '.conch', 'config.json')}: "model" and "providers" ignored: this workspace is not trusted, and a repository must not choose your model server. Run \`conch trust\` here to use them.`,
    ]);
  });

  test('applies after `conch trust`', async () => {
    await setUp();
    const trust = await runConch({ dirs: harness.dirs, args: ['trust'] });
    expect(trust.code).toBe(0);
    const r = await runConch({ dirs: harness.dirs, args: ['go'] });
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(r.stdout).toBe('from their server\n');
    expect(theirs.requests).toHaveLength(1);
    expect(theirs.requests[0]!.body.model).toBe('their-model');
    expect(harness.server.requests).toHaveLength(0);
  });

  test('changed after `conch trust` (its provider pointed at another server): not used until trusted again, saying so', async () => {
    await setUp();
    expect((await runConch({ dirs: harness.dirs, args: ['trust'] })).code).toBe(0);
    // A pull (or anything that writes the workspace) repoints the trusted provider.
    const other = await startModelServer();
    try {
      const file = join(harness.dirs.workspace, '.conch', 'config.json');
      await writeFile(file, JSON.stringify({ model: 'team/their-model', providers: { team: { type: 'openai', baseUrl: other.openaiBaseUrl } } }));
      other.script([{ text: 'from the other server' }]);
      const r = await runConch({ dirs: harness.dirs, args: ['go'] });
      expect(r.code).toBe(0);
      expect(r.stdout).toBe('from my server\n');
      expect(other.requests).toHaveLength(0);
      expect(theirs.requests).toHaveLength(0);
      expect(r.stderr.trim().split('\n')).toEqual([
        `conch: ${file}: "model" and "providers" ignored: the file changed since you trusted this workspace, and a repository must not choose your model server. Review it and run \`conch trust\` here again to use them.`,
      ]);

      expect((await runConch({ dirs: harness.dirs, args: ['trust'] })).code).toBe(0);
      const again = await runConch({ dirs: harness.dirs, args: ['go'] });
      expect(again.stderr).toBe('');
      expect(again.stdout).toBe('from the other server\n');
      expect(other.requests).toHaveLength(1);
    } finally {
      other.close();
    }
  });

  test.skipIf(!hasTmux)('changed after `conch trust`: interactive mode says so too and talks to my server', async () => {
    await setUp();
    expect((await runConch({ dirs: harness.dirs, args: ['trust'] })).code).toBe(0);
    const file = join(harness.dirs.workspace, '.conch', 'config.json');
    await writeFile(file, JSON.stringify({ model: 'team/other-model', providers: { team: { type: 'openai', baseUrl: theirs.openaiBaseUrl } } }));
    const t = await openTerminal([CONCH], { cwd: harness.dirs.workspace, env: { ...conchEnv(harness.dirs), TERM: 'xterm-256color' } });
    try {
      await t.waitFor((s) => s.includes('/help lists commands') && s.trimEnd().endsWith('›'), 'the prompt');
      t.type('go');
      t.keys('Enter');
      const screen = await t.waitFor((s) => s.includes('from my server'), 'the answer');
      // Broken between words at the terminal's width.
      expect(screen.replaceAll('\n  ', ' ')).toContain(`${file}: "model" and "providers" ignored: the file changed since you trusted this workspace`);
      expect(screen).toContain('run `conch trust` here again');
      expect(theirs.requests).toHaveLength(0);
    } finally {
      await t.close();
    }
  }, 120_000);
});

describe('a configured writable root that does not exist', () => {
  test('is dropped with a warning naming the config file and key; shell commands still run', async () => {
    const gone = join(harness.dirs.home, 'no-such-build-dir');
    await writeConfig(harness.dirs, { write: { writableRoots: [gone] } });
    harness.server.script([{ toolCalls: [{ name: 'bash', arguments: { command: 'echo hi' } }] }, { text: 'done' }]);
    const r = await runConch({ dirs: harness.dirs, args: ['--model', 'anthropic/test-model', 'go'], env: anthropicEnv(harness.server.anthropicBaseUrl) });
    expect(r.code).toBe(0);
    const result = JSON.stringify(harness.server.requests[1]!.body.messages.at(-1).content);
    expect(result).toContain('hi');
    expect(result).not.toContain('does not exist');
    expect(r.stderr).toContain(`writable root ${gone} dropped: it does not exist`);
    expect(r.stderr).toContain('remove it from write.writableRoots');
    expect(r.stderr).toContain(join(harness.dirs.configHome, 'conch'));
  });
});

describe('--profile that a configured profile overrides', () => {
  const file = () => join(harness.dirs.configHome, 'conch', 'config.json');
  const said = () => `conch: --profile workspace-write ignored: sandbox.profile "read-only" in user config ${file()} wins (a command line cannot widen a configured profile).`;

  test('a run says so in one line naming the config file and key, and stays read-only', async () => {
    await writeConfig(harness.dirs, { sandbox: { profile: 'read-only' } });
    harness.server.script([{ toolCalls: [{ name: 'bash', arguments: { command: 'touch made-here; echo "rc=$?"' } }] }, { text: 'done' }]);
    const r = await runConch({ dirs: harness.dirs, args: ['--model', 'anthropic/test-model', '--profile', 'workspace-write', 'go'], env: anthropicEnv(harness.server.anthropicBaseUrl) });
    expect(r.code).toBe(0);
    expect(r.stderr.trim().split('\n')).toEqual([said()]);
    expect(JSON.stringify(harness.server.requests[1]!.body.messages.at(-1).content)).not.toContain('rc=0');
    expect(existsSync(join(harness.dirs.workspace, 'made-here'))).toBe(false);
  });

  test('conch sandbox run says so too, and runs under the configured profile', async () => {
    await writeConfig(harness.dirs, { sandbox: { profile: 'read-only' } });
    const r = await runConch({ dirs: harness.dirs, args: ['sandbox', 'run', '--profile', 'workspace-write', '--', 'sh', '-c', 'touch made-here; echo "rc=$?"'] });
    expect(r.stderr).toContain(said());
    expect(r.stdout).not.toContain('rc=0');
    expect(existsSync(join(harness.dirs.workspace, 'made-here'))).toBe(false);
  });

  test('a run in the home directory names that as the reason', async () => {
    harness.server.script([{ text: 'done' }]);
    const env = { ...anthropicEnv(harness.server.anthropicBaseUrl), HOME: harness.dirs.workspace };
    const r = await runConch({ dirs: harness.dirs, args: ['--model', 'anthropic/test-model', '--profile', 'workspace-write', 'go'], env });
    expect(r.code).toBe(0);
    expect(r.stderr).toContain('conch: --profile workspace-write ignored: the workspace is your home directory, so shell commands run under the "read-only" profile (--allow-home-writes lets the run write).');
  });
});

describe('a base URL in the environment and no model', () => {
  test('says the model is what is missing, and the advice works', async () => {
    const env = { OPENAI_BASE_URL: harness.server.openaiBaseUrl };
    const r = await runConch({ dirs: harness.dirs, args: ['go'], env });
    expect(r.code).toBe(2);
    expect(r.stderr).toBe(`conch: OPENAI_BASE_URL is set (${harness.server.openaiBaseUrl}) but no model is named: give a model the server serves, with CONCH_MODEL=openai/NAME (e.g. export CONCH_MODEL=openai/qwen2.5-coder) or --model openai/NAME.\n`);
    expect(harness.server.requests).toHaveLength(0);
    harness.server.script([{ text: 'served' }]);
    const ok = await runConch({ dirs: harness.dirs, args: ['go'], env: { ...env, CONCH_MODEL: 'openai/qwen2.5-coder' } });
    expect(ok.code).toBe(0);
    expect(ok.stdout).toBe('served\n');
    expect(harness.server.requests[0]!.body.model).toBe('qwen2.5-coder');
  });
});

describe('a built-in provider without its key', () => {
  test('says to set providers.NAME.apiKey in the user config file (where XDG_CONFIG_HOME puts it), and the advice works: a built-in entry needs no "type"', async () => {
    const r = await runConch({ dirs: harness.dirs, args: ['--model', 'openai/gpt-5.4', 'go'], env: { OPENAI_BASE_URL: '' } });
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(`(or set "providers.openai.apiKey" in ${join(harness.dirs.configHome, 'conch', 'config.json')})`);
    // As the message says: the key (and here a server) under the built-in's name, nothing more.
    await writeConfig(harness.dirs, { model: 'openai/gpt-5.4', providers: { openai: { apiKey: '${MY_OPENAI_KEY}', baseUrl: harness.server.openaiBaseUrl } } });
    harness.server.script([{ text: 'served' }]);
    const ok = await runConch({ dirs: harness.dirs, args: ['go'], env: { MY_OPENAI_KEY: 'sk-from-config' } });
    expect(ok.stderr).toBe('');
    expect(ok.code).toBe(0);
    expect(ok.stdout).toBe('served\n');
    expect(harness.server.requests[0]!.headers.authorization).toBe('Bearer sk-from-config');
    // A provider of your own still needs its type: nothing says which protocol it speaks.
    await writeConfig(harness.dirs, { model: 'work/m', providers: { work: { apiKey: 'k', baseUrl: harness.server.openaiBaseUrl } } });
    const own = await runConch({ dirs: harness.dirs, args: ['go'] });
    expect(own.code).toBe(2);
    expect(own.stderr).toContain('"providers.work.type" is required; expected one of "anthropic", "openai"');
    expect(own.stderr).not.toMatch(/\n\s+at /);
  });
});
