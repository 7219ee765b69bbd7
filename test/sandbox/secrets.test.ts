// Credential locations hidden by default (sandbox-profiles/secrets.json): the read tool refuses
// them naming the rule, a sandboxed command (real bwrap) sees them empty and is told so, config
// can add (read.deny ~/…) and take out (read.allowSecret, user config only) but never silently.
import { afterEach, beforeEach, describe, expect, test } from 'bun:test';
import { existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { openHistory } from '../../src/cli/history.ts';
import { join } from 'node:path';
import { loadConfig } from '../../src/config/load.ts';
import { ConfigError, PolicyError } from '../../src/core/errors.ts';
import { createExecutor } from '../../src/shell/exec.ts';
import { DEFAULT_LIMITS } from '../../src/core/limits.ts';
import { Workspace } from '../../src/workspace/paths.ts';
import { hiddenForCommands } from '../../src/workspace/read-hidden.ts';
import { canRun, fixture, sandboxed, type Fixture } from './harness.ts';

let fx: Fixture;
let home: string;
let xdg: string;
beforeEach(() => {
  fx = fixture();
  // Under /var/tmp (fx.outside): the host's /tmp is not visible inside the sandbox at all.
  home = join(fx.outside, 'home');
  xdg = join(home, '.config');
  mkdirSync(join(home, '.ssh'), { recursive: true });
  mkdirSync(join(home, '.aws'), { recursive: true });
  mkdirSync(join(xdg, 'conch'), { recursive: true });
  writeFileSync(join(home, '.ssh', 'id_ed25519'), 'PRIVATE-SSH-KEY\n');
  writeFileSync(join(home, '.ssh', 'id_ed25519.pub'), 'ssh-ed25519 PUBLIC\n');
  writeFileSync(join(home, '.ssh', 'known_hosts'), 'KNOWN-HOSTS\n');
  writeFileSync(join(home, '.aws', 'credentials'), 'AWS-SECRET\n');
  writeFileSync(join(home, '.netrc'), 'NETRC-PASSWORD\n');
  writeFileSync(join(home, '.npmrc'), 'NPM-TOKEN\n');
  writeFileSync(join(home, 'notes.txt'), 'PLAIN\n');
});
afterEach(() => fx.cleanup());

const load = (env: Record<string, string> = {}) => loadConfig({ cwd: fx.ws, env: { HOME: home, XDG_CONFIG_HOME: xdg, ...env }, flags: {} });
const userConfig = (value: unknown) => writeFileSync(join(xdg, 'conch', 'config.json'), JSON.stringify(value));

async function workspace(config: Awaited<ReturnType<typeof load>>) {
  return Workspace.open({ root: fx.ws, unrestricted: false, secrets: config.workspace.secrets, denied: config.policy.denied });
}

/** The bash tool's executor under `config`'s sandbox, with its secret locations hidden and named. */
async function secretsExecutor(config: Awaited<ReturnType<typeof load>>) {
  return createExecutor({
    workspace: await workspace(config),
    unrestricted: false,
    sandbox: { ...config.sandbox, hidden: await hiddenForCommands(config, fx.ws) },
    limits: DEFAULT_LIMITS,
    env: {},
    shellEnabled: true,
    tmpDir: fx.tmp,
    logDir: join(fx.root, 'logs'),
    secrets: config.workspace.secrets,
  });
}

async function refusal(ws: Workspace, path: string): Promise<PolicyError> {
  const error = await ws.resolve(path, 'read').then(() => null, (e: unknown) => e);
  expect(error).toBeInstanceOf(PolicyError);
  return error as PolicyError;
}

describe('secret locations and the read tool', () => {
  test('a built-in location is refused with a message naming the rule; known_hosts, public keys and other files stay readable', async () => {
    const ws = await workspace(await load());
    const ssh = await refusal(ws, join(home, '.ssh', 'id_ed25519'));
    expect(ssh.rule).toBe('read.secret:ssh');
    expect(ssh.message).toContain('hidden by policy');
    expect(ssh.message).toContain('read.secret:ssh');
    expect((await refusal(ws, join(home, '.aws', 'credentials'))).rule).toBe('read.secret:aws');
    expect((await refusal(ws, join(home, '.netrc'))).rule).toBe('read.secret:netrc');
    expect((await refusal(ws, join(xdg, 'conch', 'config.json'))).rule).toBe('read.secret:conch-config');
    for (const ok of ['.ssh/known_hosts', '.ssh/id_ed25519.pub', 'notes.txt']) {
      expect(await ws.resolve(join(home, ok), 'read')).toBe(join(home, ok));
    }
  });

  test('tokens other tools keep in the home (coding agents, Copilot, Vault, Terraform, Postgres, RubyGems, rclone) and shell histories are refused', async () => {
    const files: Record<string, string> = {
      claude: '.claude/.credentials.json',
      codex: '.codex/auth.json',
      'github-copilot': '.config/github-copilot/apps.json',
      'vault-token': '.vault-token',
      terraform: '.terraform.d/credentials.tfrc.json',
      pgpass: '.pgpass',
      'gem-credentials': '.gem/credentials',
      rclone: '.config/rclone/rclone.conf',
      'bash-history': '.bash_history',
      'zsh-history': '.zsh_history',
    };
    for (const rel of Object.values(files)) {
      mkdirSync(join(home, rel, '..'), { recursive: true });
      writeFileSync(join(home, rel), 'TOKEN\n');
    }
    const ws = await workspace(await load());
    for (const [name, rel] of Object.entries(files)) expect((await refusal(ws, join(home, rel))).rule).toBe(`read.secret:${name}`);
    // Their folders' other files stay readable (a coding agent's settings, say).
    writeFileSync(join(home, '.claude', 'settings.json'), '{}');
    expect(await ws.resolve(join(home, '.claude', 'settings.json'), 'read')).toBe(join(home, '.claude', 'settings.json'));
  });

  test('a symlink in the workspace to a secret is refused too', async () => {
    const { symlinkSync } = await import('node:fs');
    symlinkSync(join(home, '.aws', 'credentials'), join(fx.ws, 'creds'));
    expect((await refusal(await workspace(await load()), 'creds')).rule).toBe('read.secret:aws');
  });

  test('read.allowSecret in the user config takes one location out, by name or path, with a warning', async () => {
    userConfig({ read: { allowSecret: ['~/.npmrc', 'netrc'] } });
    const config = await load();
    const ws = await workspace(config);
    expect(await ws.resolve(join(home, '.npmrc'), 'read')).toBe(join(home, '.npmrc'));
    expect(await ws.resolve(join(home, '.netrc'), 'read')).toBe(join(home, '.netrc'));
    expect((await refusal(ws, join(home, '.ssh', 'id_ed25519'))).rule).toBe('read.secret:ssh');
    expect(config.warnings?.some((w) => w.includes('read.allowSecret makes ~/.npmrc (npmrc) readable'))).toBe(true);
    expect(config.warnings?.some((w) => w.includes('~/.netrc (netrc)'))).toBe(true);
  });

  test('a project config cannot take a location out (ignored with a warning)', async () => {
    mkdirSync(join(fx.ws, '.conch'), { recursive: true });
    writeFileSync(join(fx.ws, '.conch', 'config.json'), JSON.stringify({ read: { allowSecret: ['ssh'] } }));
    const config = await load();
    expect((await refusal(await workspace(config), join(home, '.ssh', 'id_ed25519'))).rule).toBe('read.secret:ssh');
    expect(config.warnings?.some((w) => w.includes('"read.allowSecret" ignored'))).toBe(true);
  });

  test('an unknown name in read.allowSecret is an error naming the key and the valid names', async () => {
    userConfig({ read: { allowSecret: ['~/.sshh'] } });
    const error = await load().then(() => null, (e: unknown) => e);
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as Error).message).toContain('read.allowSecret[0]');
    expect((error as Error).message).toContain('ssh, gnupg');
  });

  test('read.deny adds a location with a ~/ path', async () => {
    userConfig({ read: { deny: ['~/notes.txt'] } });
    const error = await refusal(await workspace(await load()), join(home, 'notes.txt'));
    expect(error.rule).toBe('user:read.deny[0]');
  });
});

describe.skipIf(!canRun)('secret locations and shell commands (real bwrap)', () => {

  test('they read as empty inside the sandbox while other files of the home stay readable', async () => {
    const c = `cat "$H/.ssh/id_ed25519" "$H/.aws/credentials" "$H/.netrc"; echo "[$(ls -A "$H/.aws" | wc -l)]"; cat "$H/.ssh/known_hosts" "$H/notes.txt"`.replaceAll('$H', home);
    // Control: without the policy the same command reads every secret (the test can fail).
    const open = await sandboxed(fx, c);
    expect(open.stdout).toContain('PRIVATE-SSH-KEY');
    const config = await load();
    const result = await sandboxed(fx, c, { hidden: await hiddenForCommands(config, fx.ws) });
    expect(result.stdout).toBe('[0]\nKNOWN-HOSTS\nPLAIN\n');
  });

  test("coding agents' tokens and shell histories read as empty inside the sandbox", async () => {
    for (const rel of ['.claude/.credentials.json', '.codex/auth.json', '.bash_history']) {
      mkdirSync(join(home, rel, '..'), { recursive: true });
      writeFileSync(join(home, rel), 'AGENT-TOKEN\n');
    }
    const c = `cat "$H/.claude/.credentials.json" "$H/.codex/auth.json" "$H/.bash_history"; echo done`.replaceAll('$H', home);
    expect((await sandboxed(fx, c)).stdout).toContain('AGENT-TOKEN');
    const result = await sandboxed(fx, c, { hidden: await hiddenForCommands(await load(), fx.ws) });
    expect(result.stdout).toBe('done\n');
  });

  test('the prompt history stays hidden from a running command while another conch trims it (a rename over the file)', async () => {
    const config = await load({ XDG_STATE_HOME: join(home, 'state') });
    const file = config.history!.file;
    // A history one record short of its trim (keep 1: the third record trims), as a second conch process of the user's holds it.
    const other = openHistory(file, () => {}, 1);
    other.add('export TOKEN=PROMPT-SECRET-1');
    other.add('export TOKEN=PROMPT-SECRET-2');
    const before = statSync(file).ino;
    const ready = join(fx.ws, 'ready');
    const go = join(fx.ws, 'go');
    const c = `: > ${ready}; while [ ! -e ${go} ]; do sleep 0.05; done; cat "${file}"; echo "[done]"`;
    const running = sandboxed(fx, c, { hidden: await hiddenForCommands(config, fx.ws) });
    while (!existsSync(ready)) await Bun.sleep(20);
    // The second record trims: a new file renamed over the one the sandbox covered.
    other.add('export TOKEN=PROMPT-SECRET-3');
    expect(statSync(file).ino).not.toBe(before);
    expect(readFileSync(file, 'utf8')).toBe('"export TOKEN=PROMPT-SECRET-3"\n');
    writeFileSync(go, '');
    const result = await running;
    expect(result.stdout).toBe('[done]\n');
  });

  test("conch's config folder reads as empty but its skills/ (a skill's SKILL.md and scripts) do not; the note names the folder", async () => {
    mkdirSync(join(xdg, 'conch', 'skills', 'release', 'scripts'), { recursive: true });
    writeFileSync(join(xdg, 'conch', 'skills', 'release', 'scripts', 'check.sh'), 'echo SCRIPT-RAN\n');
    userConfig({ limits: { model_calls: 9 } });
    const config = await load();
    const c = `sh "${xdg}/conch/skills/release/scripts/check.sh"; cat "${xdg}/conch/config.json"; echo "[$?]"`;
    const result = await sandboxed(fx, c, { hidden: await hiddenForCommands(config, fx.ws) });
    expect(result.stdout).toBe('SCRIPT-RAN\n[0]\n');
    const exec = await secretsExecutor(config);
    const told = await exec(`cat ${xdg}/conch/config.json`, { signal: new AbortController().signal });
    expect(told.notes?.join('\n')).toContain('policy: ~/.config/conch is hidden by policy (rule read.secret:conch-config); commands see it empty except skills.');
  });

  test('a command that names a hidden location is told it is hidden by policy and by which rule', async () => {
    const config = await load();
    const exec = await secretsExecutor(config);
    const result = await exec(`cat ${home}/.ssh/id_ed25519; echo "[$?]"`, { signal: new AbortController().signal });
    expect(result.output).not.toContain('PRIVATE-SSH-KEY');
    expect(result.notes?.join('\n')).toContain('~/.ssh is hidden by policy (rule read.secret:ssh)');
  });
});
