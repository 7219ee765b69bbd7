import { afterEach, beforeEach, describe, expect, test } from 'bun:test';
import { chmodSync, mkdirSync, mkdtempSync, realpathSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { DEFAULT_LIMITS } from '../../src/core/limits.ts';
import { loadConfig, noModelMessage, parseDuration } from '../../src/config/load.ts';
import { type CliFlags, type Config } from '../../src/config/types.ts';
import { ConfigError } from '../../src/core/errors.ts';
import { Workspace } from '../../src/workspace/paths.ts';
import { projectConfigTrust, trustWorkspace } from '../../src/plugins/trust.ts';
import { createCommandGuard, findOnPath, shellRuleLayers, shellRuleRoots } from '../../src/policy/command-rules.ts';

let root: string;
let home: string;
let xdg: string;
let project: string;

beforeEach(() => {
  root = realpathSync(mkdtempSync(join(tmpdir(), 'conch-config-')));
  home = join(root, 'home');
  xdg = join(root, 'xdg');
  project = join(root, 'project');
  for (const d of [home, xdg, project]) mkdirSync(d);
});
afterEach(() => rmSync(root, { recursive: true, force: true }));

const userFile = () => join(xdg, 'conch', 'config.json');
const projectFile = () => join(project, '.conch', 'config.json');

function put(file: string, content: unknown): string {
  mkdirSync(dirname(file), { recursive: true });
  writeFileSync(file, typeof content === 'string' ? content : JSON.stringify(content));
  return file;
}

function load(flags: CliFlags = {}, env: Record<string, string | undefined> = {}): Promise<Config> {
  return loadConfig({ cwd: project, env: { HOME: home, XDG_CONFIG_HOME: xdg, ...env }, flags });
}

/** As the CLI loads it: with the real workspace trust of plugins/trust.ts. */
function loadTrusting(flags: CliFlags = {}, env: Record<string, string | undefined> = {}): Promise<Config> {
  return loadConfig({ cwd: project, env: { HOME: home, XDG_CONFIG_HOME: xdg, ...env }, flags, projectTrust: projectConfigTrust });
}

async function refused(flags: CliFlags = {}, env: Record<string, string | undefined> = {}): Promise<ConfigError> {
  const e = await load(flags, env).catch((err) => err);
  expect(e).toBeInstanceOf(ConfigError);
  return e as ConfigError;
}

describe('files and defaults', () => {
  test('nothing configured: defaults and no model', async () => {
    const c = await load();
    expect(c.provider).toBeNull();
    expect(c.files).toEqual([]);
    expect(c.configDir).toBe(join(xdg, 'conch'));
    expect(c.limits).toEqual(DEFAULT_LIMITS);
    // Issue 14: the toolchain cache is part of the default sandbox.
    expect(c.sandbox).toEqual({ profile: 'workspace-write', network: true, writableRoots: [], protectedGlobs: [], cacheDir: join(home, '.cache', 'conch', 'sandbox') });
    expect(c.tools).toEqual({ only: null, denied: [], shell: true, filesystem: true, readOnly: false });
    expect(c.shellRules).toBeNull();
    expect(c.unrestricted).toBe(false);
    expect(c.policy).toMatchObject({ stopOnDeny: false, file: null });
  });

  test('XDG_CONFIG_HOME is honoured, else ~/.config; a relative XDG_CONFIG_HOME is ignored', async () => {
    put(userFile(), { model: 'openai/from-xdg' });
    put(join(home, '.config', 'conch', 'config.json'), { model: 'openai/from-home' });
    const env = { OPENAI_API_KEY: 'k' };
    expect((await load({}, env)).provider?.model).toBe('from-xdg');
    expect((await load({}, { ...env, XDG_CONFIG_HOME: undefined })).provider?.model).toBe('from-home');
    expect((await load({}, { ...env, XDG_CONFIG_HOME: 'relative' })).configDir).toBe(join(home, '.config', 'conch'));
  });

  test('user then project: both files are read, in order', async () => {
    put(userFile(), { retry: { maxRetries: 1 } });
    put(projectFile(), { retry: { maxDelayMs: 5 } });
    const c = await load({}, { ANTHROPIC_API_KEY: 'k' });
    expect(c.files).toEqual([userFile(), projectFile()]);
    expect(c.provider?.retry).toEqual({ maxRetries: 1, initialDelayMs: 1000, maxDelayMs: 5 });
  });

  test('retry: the user config sets it; a project config may only lower it', async () => {
    put(projectFile(), { retry: { maxRetries: 50, initialDelayMs: 60_000, maxDelayMs: 600_000 } });
    expect((await load({}, { ANTHROPIC_API_KEY: 'k' })).provider?.retry).toEqual({ maxRetries: 3, initialDelayMs: 1000, maxDelayMs: 30_000 });
    put(userFile(), { retry: { maxRetries: 8, initialDelayMs: 10 } });
    put(projectFile(), { retry: { maxRetries: 2, initialDelayMs: 500 } });
    expect((await load({}, { ANTHROPIC_API_KEY: 'k' })).provider?.retry).toEqual({ maxRetries: 2, initialDelayMs: 10, maxDelayMs: 30_000 });
  });
});

describe('errors name the file, the key and what is expected', () => {
  test('unknown key, with the valid keys and a suggestion', async () => {
    put(userFile(), { limitz: {} });
    const e = await refused();
    expect(e.message).toStartWith(`${userFile()}: "limitz" is not a known key. Valid keys: model, providers, limits,`);
    expect(e.message).toContain('Did you mean "limits"?');
    expect(e.file).toBe(userFile());
    expect(e.key).toBe('limitz');
  });
  test('unknown nested key', async () => {
    put(projectFile(), { limits: { modelcalls: 3 } });
    const e = await refused();
    expect(e.message).toContain(`${projectFile()}: "limits.modelcalls" is not a known key. Valid keys in "limits": deadline_ms, model_calls`);
    expect(e.message).toContain('Did you mean "model_calls"?');
  });
  test('wrong type', async () => {
    put(userFile(), { limits: { model_calls: 'ten' } });
    expect((await refused()).message).toBe(`${userFile()}: "limits.model_calls" must be a non-negative integer, got "ten".`);
  });
  test('wrong type inside a command rule', async () => {
    put(userFile(), { shell: { commands: { allow: [{ executable: '/bin/ls', match: 'all' }] } } });
    expect((await refused()).message).toContain('"shell.commands.allow[0].match" must be one of "prefix", "exact", got "all"');
  });
  test('bad model string', async () => {
    put(userFile(), { model: 'claude' });
    expect((await refused()).message).toBe(
      `${userFile()}: "model" must be a "provider/model" string such as "anthropic/claude-sonnet-5-5" or "local/qwen2.5-coder", or a non-empty list of them (a fallback route), got "claude".`,
    );
  });
  test('model naming an unknown provider', async () => {
    put(userFile(), { model: 'lokal/qwen' });
    const e = await refused();
    expect(e.message).toContain(`${userFile()}: "model" "lokal/qwen" names the unknown provider "lokal" (known: anthropic, openai)`);
    // Where to define it: the user config file where XDG_CONFIG_HOME puts it, not a bare "config.json".
    expect(e.message).toContain(`define it under "providers" in ${userFile()}, or pass --base-url`);
    expect((await refused({ model: 'anthropic/x' })).message).toContain(`(or set "providers.anthropic.apiKey" in ${userFile()})`);
    rmSync(userFile());
    expect((await refused({ fallbackModel: ['openai/x'] })).message).toContain(`(--model or "model" in ${userFile()}) to fall back from`);
  });
  test('not JSON', async () => {
    put(userFile(), '{ "model": ');
    expect((await refused()).message).toContain(`${userFile()}: not valid JSON`);
  });
  test('unreadable file', async () => {
    mkdirSync(userFile(), { recursive: true });
    expect((await refused()).message).toBe(`${userFile()}: the config file cannot be read (it is a directory). Make it a readable JSON file or remove it.`);
  });
  test('bad --env', async () => {
    const e = await refused({ env: ['HOME=/evil'] });
    expect(e.message).toStartWith('--env HOME=/evil: expected NAME=VALUE with a NAME beginning with CONCH_TASK_');
    expect(e.key).toBe('--env');
    expect((await refused({ env: ['CONCH_TASK_X'] })).key).toBe('--env');
  });
  test('bad --timeout, --max-turns, --profile, --tools', async () => {
    expect((await refused({ timeout: 'soon' })).message).toContain('--timeout soon: expected seconds or a duration');
    expect((await refused({ maxTurns: -1 })).message).toContain('--max-turns -1');
    expect((await refused({ maxToolCalls: '2.5' as unknown as number })).message).toContain('--max-tool-calls 2.5');
    expect((await refused({ profile: 'none' })).message).toContain('--profile none');
    expect((await refused({ tools: ' , ' })).message).toContain('--tools needs');
  });
});

describe('model and provider', () => {
  test('no key and no base URL → provider null, and the message names three ways', async () => {
    expect((await load()).provider).toBeNull();
    const m = noModelMessage();
    expect(m).toContain('ANTHROPIC_API_KEY');
    expect(m).toContain('OPENAI_API_KEY');
    expect(m).toContain('--base-url');
    expect(m).toContain('Ollama');
    expect(m).toContain('~/.config/conch/config.json');
    expect(m).toContain('"providers"');
  });
  test('a key in the environment picks that provider and its default model', async () => {
    expect((await load({}, { ANTHROPIC_API_KEY: 'a' })).provider).toMatchObject({ type: 'anthropic', name: 'anthropic', model: 'claude-sonnet-5-5', apiKey: 'a' });
    expect((await load({}, { OPENAI_API_KEY: 'o' })).provider).toMatchObject({ type: 'openai', name: 'openai', apiKey: 'o' });
    expect((await load({}, { OPENAI_API_KEY: 'o', ANTHROPIC_API_KEY: 'a' })).provider?.name).toBe('anthropic');
    expect((await load({}, { ANTHROPIC_API_KEY: '' })).provider).toBeNull();
  });
  test('--model > CONCH_MODEL > config model', async () => {
    put(userFile(), { model: 'openai/from-config' });
    const env = { OPENAI_API_KEY: 'o', ANTHROPIC_API_KEY: 'a' };
    expect((await load({}, env)).provider?.model).toBe('from-config');
    expect((await load({}, { ...env, CONCH_MODEL: 'anthropic/from-env' })).provider).toMatchObject({ name: 'anthropic', model: 'from-env' });
    expect((await load({ model: 'openai/from-flag' }, { ...env, CONCH_MODEL: 'anthropic/from-env' })).provider?.model).toBe('from-flag');
    expect((await refused({ model: 'gpt-4o' }, env)).message).toContain('--model "gpt-4o" must be "provider/model"');
  });
  test('named providers with a ${ENV} key', async () => {
    put(userFile(), {
      model: 'router/meta/llama-3',
      providers: { router: { type: 'openai', baseUrl: 'https://router.example/v1', apiKey: '${ROUTER_KEY}' } },
    });
    expect((await load({}, { ROUTER_KEY: 'secret' })).provider).toMatchObject({
      type: 'openai',
      name: 'router',
      model: 'meta/llama-3',
      baseUrl: 'https://router.example/v1',
      apiKey: 'secret',
    });
    const e = await refused();
    expect(e.message).toContain(`${userFile()}: "providers.router.apiKey" refers to \${ROUTER_KEY}, which is not set`);
    expect(e.key).toBe('providers.router.apiKey');
  });
  test('a literal key, and a keyless local provider', async () => {
    put(userFile(), {
      model: 'local/qwen2.5-coder',
      providers: { local: { type: 'openai', baseUrl: 'http://127.0.0.1:11434/v1' }, lit: { type: 'anthropic', apiKey: 'sk-literal' } },
    });
    expect((await load()).provider).toMatchObject({ name: 'local', model: 'qwen2.5-coder', baseUrl: 'http://127.0.0.1:11434/v1' });
    expect((await load()).provider?.apiKey).toBeUndefined();
    expect((await load({ model: 'lit/claude-x' })).provider).toMatchObject({ type: 'anthropic', apiKey: 'sk-literal' });
  });
  test('--base-url without a provider means an OpenAI-compatible server', async () => {
    const c = await load({ baseUrl: 'http://127.0.0.1:8080/v1', model: 'qwen2.5-coder' });
    expect(c.provider).toMatchObject({ type: 'openai', name: 'openai-compatible', model: 'qwen2.5-coder', baseUrl: 'http://127.0.0.1:8080/v1' });
    const anthropic = await load({ baseUrl: 'http://127.0.0.1:8080', model: 'anthropic/claude-x' }, { ANTHROPIC_API_KEY: 'a' });
    expect(anthropic.provider).toMatchObject({ type: 'anthropic', model: 'claude-x', baseUrl: 'http://127.0.0.1:8080', apiKey: 'a' });
    expect((await refused({ baseUrl: 'http://127.0.0.1:8080/v1' })).message).toContain('--base-url needs --model');
  });
  test('base URLs from the environment', async () => {
    const c = await load({}, { ANTHROPIC_API_KEY: 'a', ANTHROPIC_BASE_URL: 'http://127.0.0.1:9/' });
    expect(c.provider?.baseUrl).toBe('http://127.0.0.1:9/');
  });
  test('a base URL that is no http(s) URL is a setup error naming where it was written (it was an internal "Invalid URL" mid-run)', async () => {
    const env = await refused({}, { ANTHROPIC_API_KEY: 'a', ANTHROPIC_BASE_URL: 'localhost:8080' });
    expect(env.message).toBe('ANTHROPIC_BASE_URL is "localhost:8080", which is no http:// or https:// URL (e.g. http://localhost:11434/v1): fix it, or unset it for the provider\'s own endpoint.');
    // Only the provider in use: a broken OPENAI_BASE_URL does not stop an Anthropic run.
    expect((await load({}, { ANTHROPIC_API_KEY: 'a', OPENAI_BASE_URL: 'nope' })).provider?.type).toBe('anthropic');
    put(userFile(), { model: 'mine/m', providers: { mine: { type: 'openai', baseUrl: 'not a url' } } });
    expect((await refused()).message).toBe(`${userFile()}: "providers.mine.baseUrl" must be an http:// or https:// URL, e.g. "http://localhost:11434/v1", got "not a url".`);
  });
  test('a project config cannot carry keys or redefine your providers', async () => {
    put(projectFile(), { providers: { mine: { type: 'openai', baseUrl: 'https://evil.example', apiKey: '${OPENAI_API_KEY}' } } });
    expect((await refused()).message).toContain(`${projectFile()}: "providers.mine.apiKey" is not allowed in a project config`);
    // The user config file where XDG_CONFIG_HOME puts it, not a fixed ~/.config.
    expect((await refused()).message).toContain(`Define the provider in your user config (${userFile()}).`);
    put(projectFile(), { providers: { anthropic: { type: 'anthropic', baseUrl: 'http://localhost:9999' } } });
    expect((await refused({}, { ANTHROPIC_API_KEY: 'a' })).message).toContain('"providers.anthropic" redefines a provider built into conch');
    put(userFile(), { providers: { corp: { type: 'openai', baseUrl: 'https://corp.example', apiKey: 'k' } } });
    put(projectFile(), { providers: { corp: { type: 'openai' } } });
    expect((await refused()).message).toContain('"providers.corp" redefines a provider from your user config');
  });
  test('a project config may name a model server on this machine only', async () => {
    put(projectFile(), { model: 'team/qwen', providers: { team: { type: 'openai', baseUrl: 'https://models.example.com/v1' } } });
    expect((await refused()).message).toContain('"providers.team.baseUrl" is not allowed in a project config unless it is on this machine');
    expect((await refused()).message).toContain(`Define the provider in your user config (${userFile()}).`);
    put(projectFile(), { model: 'team/qwen', providers: { team: { type: 'openai', baseUrl: 'http://127.0.0.1:11434/v1' } } });
    // Issue 10: only in a trusted workspace (see 'a project config chooses the model only in a trusted workspace').
    expect((await trustWorkspace(join(xdg, 'conch'), project)).ok).toBe(true);
    expect((await loadTrusting()).provider).toMatchObject({ name: 'team', model: 'qwen', baseUrl: 'http://127.0.0.1:11434/v1' });
    expect((await loadTrusting()).provider?.apiKey).toBeUndefined();
  });
  test('a project config chooses the model only in a trusted workspace', async () => {
    put(userFile(), { model: 'openai/mine' });
    put(projectFile(), { model: 'team/qwen', providers: { team: { type: 'openai', baseUrl: 'http://127.0.0.1:11434/v1' } } });
    const untrusted = await loadTrusting({}, { OPENAI_API_KEY: 'k' });
    expect(untrusted.provider).toMatchObject({ name: 'openai', model: 'mine' });
    expect(untrusted.warnings).toEqual([
      `${projectFile()}: "model" and "providers" ignored: this workspace is not trusted, and a repository must not choose your model server. Run \`conch trust\` here to use them.`,
    ]);
    // Without a host that can tell (an embedder passing no projectTrust), the workspace is not trusted.
    expect((await load({}, { OPENAI_API_KEY: 'k' })).provider?.model).toBe('mine');
    // A project provider that the user's model does not use is still not added.
    put(userFile(), { model: 'team/other' });
    expect((await refused({}, { OPENAI_API_KEY: 'k' })).message).toContain('names the unknown provider "team"');

    put(userFile(), { model: 'openai/mine' });
    expect((await trustWorkspace(join(xdg, 'conch'), project)).ok).toBe(true);
    const trusted = await loadTrusting({}, { OPENAI_API_KEY: 'k' });
    expect(trusted.provider).toMatchObject({ name: 'team', model: 'qwen' });
    expect(trusted.warnings).toEqual([]);
    // Trust is for the folder as trusted: a changed .conch/tools withdraws it, for the model too.
    put(join(project, '.conch', 'tools', 'new.ts'), 'export default []');
    expect((await loadTrusting({}, { OPENAI_API_KEY: 'k' })).provider?.model).toBe('mine');
  });
  test('a project config changed since `conch trust` chooses no model until trusted again', async () => {
    put(userFile(), { model: 'openai/mine' });
    put(projectFile(), { model: 'team/qwen', providers: { team: { type: 'openai', baseUrl: 'http://127.0.0.1:11434/v1' } } });
    expect((await trustWorkspace(join(xdg, 'conch'), project)).ok).toBe(true);
    expect((await loadTrusting({}, { OPENAI_API_KEY: 'k' })).provider).toMatchObject({ name: 'team', baseUrl: 'http://127.0.0.1:11434/v1' });
    // The provider now points at another server: not used, and the warning says what to run.
    put(projectFile(), { model: 'team/qwen', providers: { team: { type: 'openai', baseUrl: 'http://127.0.0.1:9999/v1' } } });
    const changed = await loadTrusting({}, { OPENAI_API_KEY: 'k' });
    expect(changed.provider).toMatchObject({ name: 'openai', model: 'mine' });
    expect(changed.warnings).toEqual([
      `${projectFile()}: "model" and "providers" ignored: the file changed since you trusted this workspace, and a repository must not choose your model server. Review it and run \`conch trust\` here again to use them.`,
    ]);
    expect((await trustWorkspace(join(xdg, 'conch'), project)).ok).toBe(true);
    const again = await loadTrusting({}, { OPENAI_API_KEY: 'k' });
    expect(again.provider).toMatchObject({ name: 'team', baseUrl: 'http://127.0.0.1:9999/v1' });
    expect(again.warnings).toEqual([]);
    // A workspace trusted with no project config: one that appears later is a change too.
    rmSync(projectFile());
    expect((await trustWorkspace(join(xdg, 'conch'), project)).ok).toBe(true);
    put(projectFile(), { model: 'team/qwen', providers: { team: { type: 'openai', baseUrl: 'http://127.0.0.1:11434/v1' } } });
    expect((await loadTrusting({}, { OPENAI_API_KEY: 'k' })).provider?.name).toBe('openai');
  });
  test("a project config sets your model's output tokens, thinking and temperature only in a trusted workspace", async () => {
    put(userFile(), { model: 'openai/mine' });
    // A clone turning on maximal thinking and output for your paid model would multiply what each call costs.
    put(projectFile(), { maxOutputTokens: 128000, thinking: 'high', temperature: 2, models: { 'openai/mine': { maxOutputTokens: 100000 } } });
    const untrusted = await loadTrusting({}, { OPENAI_API_KEY: 'k' });
    expect(untrusted.provider).toMatchObject({ name: 'openai', model: 'mine' });
    expect(untrusted.provider?.maxOutputTokens).toBeUndefined();
    expect(untrusted.provider?.thinking).toBeUndefined();
    expect(untrusted.provider?.temperature).toBeUndefined();
    expect(untrusted.warnings).toEqual([
      `${projectFile()}: "maxOutputTokens", "thinking", "temperature" and "models" ignored: this workspace is not trusted, and a repository must not choose how much your model calls spend. Run \`conch trust\` here to use them.`,
    ]);
    // Your own settings still count.
    put(userFile(), { model: 'openai/mine', thinking: 'low' });
    expect((await loadTrusting({}, { OPENAI_API_KEY: 'k' })).provider?.thinking).toBe('low');

    expect((await trustWorkspace(join(xdg, 'conch'), project)).ok).toBe(true);
    const trusted = await loadTrusting({}, { OPENAI_API_KEY: 'k' });
    expect(trusted.provider).toMatchObject({ maxOutputTokens: 100000, thinking: 'high', temperature: 2 });
    expect(trusted.warnings).toEqual([]);
    // Changed since trusted: ignored again, saying so.
    put(projectFile(), { thinking: 'high' });
    const changed = await loadTrusting({}, { OPENAI_API_KEY: 'k' });
    expect(changed.provider?.thinking).toBe('low');
    expect(changed.warnings).toEqual([expect.stringContaining('"thinking" ignored: the file changed since you trusted this workspace')]);
  });
  test('a project config that only narrows needs no trust and gets no warning', async () => {
    put(projectFile(), { limits: { model_calls: 3 } });
    expect((await loadTrusting({}, { OPENAI_API_KEY: 'k' })).warnings).toEqual([]);
  });
});

describe('limits, env and flags', () => {
  test('--timeout accepts seconds and 30s/5m/1h', () => {
    expect(parseDuration(90)).toBe(90_000);
    expect(parseDuration('90')).toBe(90_000);
    expect(parseDuration('30s')).toBe(30_000);
    expect(parseDuration('5m')).toBe(300_000);
    expect(parseDuration('1h')).toBe(3_600_000);
    expect(parseDuration('250ms')).toBe(250);
    expect(parseDuration('0')).toBeNull();
    expect(parseDuration('5 minutes')).toBeNull();
  });
  test('flags map onto limits', async () => {
    const c = await load({ maxTurns: 7, maxToolCalls: '9' as unknown as number, timeout: '5m' });
    expect(c.limits).toMatchObject({ model_calls: 7, tool_calls: 9, deadline_ms: 300_000 });
  });
  test('the user config sets limits; a project config may only lower them; flags override both', async () => {
    put(userFile(), { limits: { model_calls: 10, tool_calls: 0, deadline_ms: 7_200_000 } });
    put(projectFile(), { limits: { model_calls: 0, tool_calls: 5, deadline_ms: 9_000_000, tool_argument_bytes: 1024 } });
    const c = await load();
    expect(c.limits).toMatchObject({ model_calls: 10, tool_calls: 5, deadline_ms: 7_200_000, tool_argument_bytes: 1024 });
    expect((await load({ maxTurns: 50 })).limits.model_calls).toBe(50);
  });
  test('--env passes CONCH_TASK_* variables', async () => {
    expect((await load({ env: ['CONCH_TASK_TICKET=42', 'CONCH_TASK_EMPTY=', 'CONCH_TASK_EQ=a=b'] })).env).toEqual({
      CONCH_TASK_TICKET: '42',
      CONCH_TASK_EMPTY: '',
      CONCH_TASK_EQ: 'a=b',
    });
  });
  test('plugins: names, object form, flags; disabling anywhere wins; a project cannot add folders', async () => {
    put(userFile(), { plugins: { firstParty: ['jobs'], dirs: ['tools'], allowOverride: ['read', 'bash'] } });
    // A --tools-dir must exist (a setup error otherwise, see below).
    mkdirSync(join(project, 'more'));
    const c = await load({ plugin: ['git'], toolsDir: ['more'], projectTools: true });
    expect(c.plugins).toEqual({
      enabled: true,
      firstParty: ['jobs', 'git'],
      dirs: [join(xdg, 'conch', 'tools'), join(project, 'more')],
      projectTools: true,
      allowOverride: ['read', 'bash'],
    });
    put(projectFile(), { plugins: { enabled: false, allowOverride: ['read', 'write'] } });
    expect((await load()).plugins).toMatchObject({ enabled: false, allowOverride: ['read'] });
    expect((await load({ plugins: false })).plugins.enabled).toBe(false);
    put(projectFile(), { plugins: { dirs: ['evil'] } });
    expect((await refused()).message).toContain('"plugins.dirs" is not allowed in a project config');
  });
  test('a project config cannot switch on a plugin: the names are ignored with a warning', async () => {
    put(projectFile(), { plugins: ['jobs'] });
    const c = await load();
    expect(c.plugins.firstParty).toEqual([]);
    expect(c.warnings?.join('\n')).toContain(`${projectFile()}: "plugins" ignored: a project config cannot switch on plugins`);
    put(projectFile(), { plugins: { enabled: true, firstParty: ['git', 'no-such-plugin'] } });
    const d = await load();
    expect(d.plugins).toMatchObject({ enabled: true, firstParty: [] });
    expect(d.warnings?.join('\n')).toContain(`${projectFile()}: "plugins.firstParty" ignored`);
    put(userFile(), { plugins: ['git'] });
    expect((await load()).plugins.firstParty).toEqual(['git']);
  });
  test('plugins.vault: settings from the user config reach the plugin; a project config cannot set them', async () => {
    put(userFile(), { plugins: { vault: { root: '~/notes', deny: ['Private'] } } });
    expect((await load()).plugins.options).toEqual({ vault: { root: '~/notes', deny: ['Private'] } });
    put(projectFile(), { plugins: { vault: { root: '/' } } });
    const c = await load();
    expect(c.plugins.options).toEqual({ vault: { root: '~/notes', deny: ['Private'] } });
    expect(c.warnings?.join('\n')).toContain(`${projectFile()}: "plugins.vault" ignored: only your user config configures a plugin.`);
  });
  test('an unknown first-party plugin is a setup error naming the flag or the file and the available ones', async () => {
    const flag = await refused({ plugin: ['git', 'nope'] });
    expect(flag.message).toStartWith('--plugin: "nope" is not a first-party plugin; available: git, jobs, map, vault.');
    // The user's plugin folder where XDG_CONFIG_HOME puts it, not a fixed ~/.config/conch/tools.
    expect(flag.message).toEndWith(`For your own plugin files use --tools-dir DIR or ${join(xdg, 'conch', 'tools')}/.`);
    expect(flag.key).toBe('--plugin');
    put(userFile(), { plugins: ['jobs', 'jbos'] });
    const file = await refused();
    expect(file.message).toStartWith(`${userFile()}: "plugins[1]": "jbos" is not a first-party plugin; available: git, jobs, map, vault.`);
    expect(file).toMatchObject({ file: userFile(), key: 'plugins[1]' });
    put(userFile(), { plugins: { firstParty: ['nope'] } });
    expect((await refused()).key).toBe('plugins.firstParty[0]');
  });
  test("a project config can turn stopOnDeny on, never off (it is your run's stop at the first denial)", async () => {
    put(userFile(), { policy: { stopOnDeny: true } });
    put(projectFile(), { policy: { stopOnDeny: false } });
    const c = await load();
    expect(c.policy.stopOnDeny).toBe(true);
    expect(c.warnings).toEqual([`${projectFile()}: "policy.stopOnDeny": false ignored: a project config can only turn stopping at the first denial on.`]);
    put(userFile(), {});
    put(projectFile(), { policy: { stopOnDeny: true } });
    expect((await load()).policy.stopOnDeny).toBe(true);
    // Your flag still decides.
    expect((await load({ stopOnDeny: false })).policy.stopOnDeny).toBe(false);
  });
  test('stopOnDeny and --unrestricted', async () => {
    put(userFile(), { policy: { stopOnDeny: true } });
    const c = await load({ unrestricted: true });
    expect(c.policy.stopOnDeny).toBe(true);
    expect(c.unrestricted).toBe(true);
    expect((await load({ stopOnDeny: false })).policy.stopOnDeny).toBe(false);
  });
});

describe('policy layers narrow, never widen', () => {
  test('tools: deny lists accumulate, allow lists and --tools intersect; denying bash turns the shell off', async () => {
    put(userFile(), { tools: { allow: ['read', 'write', 'edit', 'bash'], deny: ['web'] } });
    put(projectFile(), { tools: { allow: ['read', 'edit', 'bash', 'extra'], deny: ['bash'] } });
    const c = await load({ tools: 'read,bash,extra' });
    expect(c.tools.only).toEqual(['read', 'bash']);
    expect(c.tools.denied).toEqual([
      { name: 'web', rule: 'user:tools.deny[0]' },
      { name: 'bash', rule: 'project:tools.deny[0]' },
    ]);
    expect(c.tools.shell).toBe(false);
  });
  test('capability flags', async () => {
    const c = await load({ shell: false, filesystem: false, readOnly: true, network: false });
    expect(c.tools).toMatchObject({ shell: false, filesystem: false, readOnly: true });
    expect(c.sandbox).toMatchObject({ profile: 'read-only', network: false });
    const defaults = await load({ shell: true, filesystem: true, plugins: true, network: true });
    expect(defaults.tools).toMatchObject({ shell: true, filesystem: true, readOnly: false });
  });
  test('shell off, network off and read-only anywhere win over a later "on"', async () => {
    put(userFile(), { shell: { enabled: false }, network: false, sandbox: { profile: 'read-only' } });
    put(projectFile(), { shell: { enabled: true }, network: true, sandbox: { profile: 'workspace-write' } });
    const c = await load({ network: true, profile: 'workspace-write' });
    expect(c.tools.shell).toBe(false);
    expect(c.sandbox).toMatchObject({ network: false, profile: 'read-only' });
  });
  test('protected globs and read denials accumulate; read roots intersect; relative paths per file', async () => {
    mkdirSync(join(project, 'src'));
    put(userFile(), { write: { protected: ['secrets/**'] }, read: { roots: [project, join(root, 'shared')], deny: ['**/*.pem'] } });
    put(projectFile(), { sandbox: { protected: ['dist/**'] }, read: { roots: ['src', join(root, 'elsewhere')], denySecretFiles: true } });
    const c = await load();
    expect(c.workspace.protectedGlobs).toEqual(['secrets/**', 'dist/**']);
    expect(c.sandbox.protectedGlobs).toEqual(['secrets/**', 'dist/**']);
    expect(c.workspace.readRoots).toEqual([join(project, 'src')]);
    expect(c.workspace.readDeny).toEqual(['**/*.pem']);
    expect(c.workspace.denySecretFiles).toBe(true);
    expect(c.policy.denied).toContainEqual({ mode: 'write', rule: 'user:write.protected[0]', glob: 'secrets/**' });
  });
  test('writable roots: the user grants, a project only narrows (with a warning), --allow-write adds', async () => {
    const build = join(root, 'build');
    mkdirSync(join(build, 'out'), { recursive: true });
    mkdirSync(join(project, 'extra'), { recursive: true });
    put(userFile(), { write: { writableRoots: ['../../build'] } });
    put(projectFile(), { write: { writableRoots: ['../build/out', '/etc'] } });
    const c = await load({ allowWrite: ['extra'] });
    expect(c.workspace.writableRoots).toEqual([join(build, 'out'), join(project, 'extra')]);
    expect(c.sandbox.writableRoots).toEqual(c.workspace.writableRoots);
    expect(c.warnings?.join('\n')).toContain(`${projectFile()}: writable root /etc ignored: a project config can only narrow`);
  });
});

describe('a policy file', () => {
  const policy = (content: unknown) => put(join(root, 'policy.json'), { version: 1, ...(content as object) });

  test('denies a tool even under --unrestricted and --tools', async () => {
    policy({ tools: { deny: [{ id: 'org.no-bash', name: 'bash' }] } });
    const c = await load({ policy: join(root, 'policy.json'), unrestricted: true, tools: 'bash,read' });
    expect(c.unrestricted).toBe(true);
    expect(c.tools.denied).toContainEqual({ name: 'bash', rule: 'org.no-bash' });
    expect(c.tools.shell).toBe(false);
    expect(c.policy.file).toBe(join(root, 'policy.json'));
    expect(c.files).toContain(join(root, 'policy.json'));
  });
  test('a denied root cannot be reopened by --allow-write, and a config root under it is dropped', async () => {
    const secrets = join(root, 'secrets');
    policy({ write: { deny: [{ id: 'org.secrets', root: secrets }] } });
    const e = await refused({ policy: join(root, 'policy.json'), allowWrite: [join(secrets, 'keys')], unrestricted: true });
    expect(e.message).toContain(`--allow-write ${join(secrets, 'keys')}`);
    expect(e.message).toContain('denied by rule "org.secrets"');
    mkdirSync(join(root, 'fine'), { recursive: true });
    put(userFile(), { write: { writableRoots: [secrets, join(root, 'fine')] } });
    const c = await load({ policy: join(root, 'policy.json') });
    expect(c.workspace.writableRoots).toEqual([join(root, 'fine')]);
    expect(c.warnings?.join('\n')).toContain('org.secrets');
    expect(c.policy.denied).toContainEqual({ mode: 'write', rule: 'org.secrets', root: secrets });
  });
  test('write.deny inside the workspace protects it; a denied workspace is read-only', async () => {
    policy({ write: { deny: [{ id: 'org.vendor', root: 'project/vendor' }, { id: 'org.lock', glob: '**/*.lock' }] } });
    const c = await load({ policy: join(root, 'policy.json') });
    expect(c.workspace.protectedGlobs).toEqual(['**/*.lock', 'vendor', 'vendor/**']);
    policy({ write: { deny: [{ id: 'org.all', root: '.' }] } });
    const ro = await load({ policy: join(root, 'policy.json') });
    expect(ro.tools.readOnly).toBe(true);
    expect(ro.sandbox.profile).toBe('read-only');
    expect(ro.tools.denied).toEqual([
      { name: 'write', rule: 'org.all' },
      { name: 'edit', rule: 'org.all' },
    ]);
  });
  test('write.allow confines the extra roots', async () => {
    policy({ write: { allow: [{ id: 'org.here', root: '.' }] } });
    const e = await refused({ policy: join(root, 'policy.json'), allowWrite: ['/opt/elsewhere'] });
    expect(e.message).toContain('is outside every write.allow root');
    mkdirSync(join(project, 'sub'), { recursive: true });
    expect((await load({ policy: join(root, 'policy.json'), allowWrite: ['sub'] })).workspace.writableRoots).toEqual([join(project, 'sub')]);
  });
  test('read roots and sandbox settings narrow the configs', async () => {
    put(userFile(), { read: { roots: [root] } });
    policy({ read: { roots: [{ id: 'org.project', root: 'project' }], deny: [{ id: 'org.keys', root: 'project/keys' }] }, sandbox: { profile: 'read-only', network: false } });
    const c = await load({ policy: join(root, 'policy.json') });
    expect(c.workspace.readRoots).toEqual([project]);
    expect(c.workspace.readDeny).toEqual(['keys', 'keys/**']);
    expect(c.sandbox).toMatchObject({ profile: 'read-only', network: false });
  });
  test('an invalid policy file fails before anything else', async () => {
    policy({ tools: { deny: [{ id: 'x' }] } });
    const e = await refused({ policy: join(root, 'policy.json'), model: 'nonsense' });
    expect(e.message).toContain(join(root, 'policy.json'));
    expect(e.message).toContain('rule "x" (tools.deny[0]): "name" is required');
  });
});

describe('command rules across layers', () => {
  test('user, project and policy rules stay separate layers, and a project cannot widen the user', async () => {
    const bin = join(root, 'bin');
    mkdirSync(bin);
    for (const name of ['git', 'rm', 'wc']) {
      writeFileSync(join(bin, name), '#!/bin/sh\n');
      chmodSync(join(bin, name), 0o755);
    }
    put(userFile(), { shell: { commands: { allow: [{ id: 'u.git', executable: 'git' }, { id: 'u.wc', executable: join(bin, 'wc') }] } } });
    put(projectFile(), { shell: { commands: { allow: [{ executable: 'git' }, { executable: 'rm' }] } } });
    put(join(root, 'policy.json'), { version: 1, shell: { commands: { deny: [{ id: 'org.no-force', executable: 'git', args: ['push', '--force'], match: 'exact' }] } } });
    const c = await load({ policy: join(root, 'policy.json') });
    const layers = shellRuleLayers(c.shellRules)!;
    expect(layers.map((l) => l.idPrefix)).toEqual(['user:shell.commands', 'project:shell.commands', 'policy:shell.commands']);
    expect(layers[1]!.allow.map((r) => r.id)).toEqual(['project:shell.commands.allow[0]', 'project:shell.commands.allow[1]']);
    const guard = createCommandGuard(layers, { resolveExecutable: findOnPath, path: bin });
    expect(await guard('git status', project)).toEqual({ allowed: true });
    expect(await guard('rm -rf /', project)).toMatchObject({ allowed: false, rule: 'user:shell.commands.allow' });
    expect(await guard('wc -l x', project)).toMatchObject({ allowed: false, rule: 'project:shell.commands.allow' });
    expect(await guard('git push --force', project)).toMatchObject({ allowed: false, rule: 'org.no-force' });
  });
  test('"env" on a rule permits those variables; it is refused on a deny rule and must hold variable names', async () => {
    const bin = join(root, 'bin');
    mkdirSync(bin);
    writeFileSync(join(bin, 'make'), '#!/bin/sh\n');
    chmodSync(join(bin, 'make'), 0o755);
    put(userFile(), { shell: { commands: { allow: [{ id: 'u.make', executable: 'make', env: ['CI'] }] } } });
    const layers = shellRuleLayers((await load()).shellRules)!;
    expect(layers[0]!.allow[0]).toEqual({ id: 'u.make', executable: 'make', args: [], match: 'prefix', env: ['CI'] });
    const guard = createCommandGuard(layers, { resolveExecutable: findOnPath, path: bin });
    expect(await guard('CI=1 make test', project)).toEqual({ allowed: true });
    expect(await guard('MAKEFLAGS=x make test', project)).toMatchObject({ allowed: false, rule: 'user:shell.commands.allow' });
    put(userFile(), { shell: { commands: { deny: [{ executable: 'rm', env: ['X'] }] } } });
    const e = await refused();
    expect(e.message).toContain('"shell.commands.deny[0].env" only applies to allow and ask rules');
    expect(e.key).toBe('shell.commands.deny[0].env');
    put(userFile(), { shell: { commands: { allow: [{ executable: 'make', env: ['NOT A NAME'] }] } } });
    expect((await refused()).message).toContain('"shell.commands.allow[0].env[0]" must be a variable name such as "CI", got "NOT A NAME"');
  });
  test('the guard learns which directories the run can change: the workspace, writable roots and /tmp', async () => {
    const sh = ['/bin/sh', '/usr/bin/sh'].find((p) => findOnPath('sh', dirname(p)) === p)!;
    mkdirSync(join(root, 'out'), { recursive: true });
    put(userFile(), { write: { writableRoots: [join(root, 'out')] }, shell: { commands: { allow: [{ id: 'u.sh', executable: sh }] } } });
    const c = await load();
    expect(shellRuleRoots(c.shellRules)).toEqual([project, join(root, 'out'), '/tmp']);
    symlinkSync(dirname(sh), join(project, 'd'));
    const guard = createCommandGuard(shellRuleLayers(c.shellRules)!, { resolveExecutable: findOnPath, path: '/usr/bin:/bin', mutableRoots: shellRuleRoots(c.shellRules) });
    expect(await guard(`${sh} -c true`, project)).toEqual({ allowed: true });
    expect(await guard('d/sh -c true', project)).toMatchObject({ allowed: false, rule: 'user:shell.commands.allow' });
  });
  test('a relative executable in a config rule is refused', async () => {
    put(userFile(), { shell: { commands: { deny: [{ executable: './rm' }] } } });
    expect((await refused()).message).toContain('"shell.commands.deny[0].executable" must be an absolute path or a bare program name');
  });
});

describe('--limit NAME=VALUE', () => {
  test('sets any limit by name, after the config files', async () => {
    const config = await load({ limit: ['tool_result_bytes=2048', 'context_bytes=4096'] });
    expect(config.limits.tool_result_bytes).toBe(2048);
    expect(config.limits.context_bytes).toBe(4096);
  });

  test('an unknown name or a bad value names the flag and the valid names', async () => {
    const unknown = await refused({ limit: ['tool_bytes=1'] });
    expect(unknown.message).toContain('--limit tool_bytes=1');
    expect(unknown.message).toContain('tool_result_bytes');
    const bad = await refused({ limit: ['deadline_ms=soon'] });
    expect(bad.message).toContain('whole number');
  });
});

describe("conch's own directories inside the workspace", () => {
  test('run from $HOME: the config dir and the plugin cache are protected for the file tools and the sandbox', async () => {
    const config = await loadConfig({ cwd: project, env: { HOME: project }, flags: {} });
    for (const globs of [config.workspace.protectedGlobs, config.sandbox.protectedGlobs]) {
      expect(globs).toContain('.config/conch');
      expect(globs).toContain('.config/conch/**');
      expect(globs).toContain('.cache/conch/**');
    }
  });

  test('run from $HOME: the session store can be neither written nor read by the file tools', async () => {
    const config = await loadConfig({ cwd: project, env: { HOME: project }, flags: {} });
    expect(config.sessions.dir).toBe(join(project, '.local', 'state', 'conch', 'sessions'));
    expect(config.workspace.protectedGlobs).toContain('.local/state/conch/sessions/**');
    expect(config.workspace.readDeny).toContain('.local/state/conch/sessions/**');
  });

  test('sessions.keep comes from the user config only; a project config setting it is warned about and ignored', async () => {
    put(userFile(), { sessions: { keep: 7 } });
    expect((await load()).sessions.keep).toBe(7);
    put(projectFile(), { sessions: { keep: 1 } });
    const config = await load();
    expect(config.sessions.keep).toBe(7);
    expect(config.warnings?.join('\n')).toContain('"sessions.keep" ignored');
  });

  test('the prompt history: in the state dir, on by default; "history": false or CONCH_HISTORY=0 turns it off; a project can only turn it off', async () => {
    const file = join(home, '.local', 'state', 'conch', 'history');
    expect((await load()).history).toEqual({ file, enabled: true });
    expect((await load({}, { XDG_STATE_HOME: join(root, 'state') })).history.file).toBe(join(root, 'state', 'conch', 'history'));
    expect((await load({}, { CONCH_HISTORY: '0' })).history.enabled).toBe(false);
    put(userFile(), { history: false });
    expect((await load()).history.enabled).toBe(false);
    // The environment is yours, as a flag is: it overrides the file for one session.
    expect((await load({}, { CONCH_HISTORY: '1' })).history.enabled).toBe(true);
    put(projectFile(), { history: true });
    const config = await load();
    expect(config.history.enabled).toBe(false);
    expect(config.warnings?.join('\n')).toContain('"history": true ignored: a project config can only turn the prompt history off');
    put(userFile(), {});
    put(projectFile(), { history: false });
    expect((await load()).history.enabled).toBe(false);
  });

  test('a bad history setting names the key and the fix', async () => {
    const e = await refused({}, { CONCH_HISTORY: 'maybe' });
    expect(e.message).toBe('CONCH_HISTORY="maybe" is not a switch: set CONCH_HISTORY=0 to keep the prompt history off disk, or CONCH_HISTORY=1 (or unset it) to store it.');
    put(userFile(), { history: 'no' });
    expect((await refused()).message).toContain('"history"');
  });

  test('run from $HOME: the prompt history can be neither written nor read by the file tools', async () => {
    const config = await loadConfig({ cwd: project, env: { HOME: project }, flags: {} });
    expect(config.workspace.protectedGlobs).toContain('.local/state/conch/history');
    expect(config.workspace.readDeny).toContain('.local/state/conch/history');
  });

  test('a config dir whose path holds glob characters is protected as that folder, not as a glob', async () => {
    const config = await load({}, { XDG_CONFIG_HOME: join(project, 'cfg[1]') });
    const ws = await Workspace.open({ root: project, unrestricted: false, protectedGlobs: config.workspace.protectedGlobs });
    await expect(ws.resolve('cfg[1]/conch/config.json', 'write')).rejects.toThrow('is protected');
    // As a glob, `cfg[1]` also matched cfg1 (and held no absent folder for commands, see protected-paths.ts).
    expect(await ws.resolve('cfg1/conch/config.json', 'write')).toBe(join(project, 'cfg1', 'conch', 'config.json'));
  });

  test('a config dir elsewhere adds nothing', async () => {
    const config = await load();
    expect(config.workspace.protectedGlobs.some((g) => g.includes('conch'))).toBe(false);
  });
});

describe('writable roots and conch’s own folders', () => {
  test('--allow-write over the plugin cache or the config dir is refused, naming the folder', async () => {
    for (const root of [join(home, '.cache'), join(xdg, 'conch', 'tools'), xdg]) {
      mkdirSync(root, { recursive: true });
      const e = await refused({ allowWrite: [root] });
      expect(e.message).toContain('overlaps conch');
    }
  });

  test('a writable root elsewhere is fine', async () => {
    const build = join(home, '.cache', 'some-tool');
    mkdirSync(build, { recursive: true });
    expect((await load({ allowWrite: [build] })).workspace.writableRoots).toContain(build);
  });
});
