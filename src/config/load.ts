// The resolved Config from: defaults → $XDG_CONFIG_HOME/conch/config.json (else
// ~/.config/conch/config.json) → ./.conch/config.json → --policy FILE → environment → flags.
//
// Policy (tools, paths, commands, network, sandbox) only ever narrows from layer to layer; see
// layers.ts. Provider, model, retry and limits override normally, with one exception: a project
// config is someone else's file, so it may only LOWER limits and retry settings (a cloned
// repository must not be able to lift your run deadline, call budget or retry count), may not
// carry API keys, may not redefine a provider you or conch define (its base URL would receive your
// key), may only name model servers on this machine (the model server decides which tools run),
// chooses the model or adds providers only in a workspace the user trusted (`conch trust`), and may not add plugin folders or switch on plugins (it may switch them off; a first-party name
// it lists is ignored with a warning). Flags and the environment are yours and override everything
// but policy. Unknown first-party plugin names (user config, --plugin) are errors.
import { statSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, isAbsolute, join, relative, resolve } from 'node:path';
import { DEFAULT_LIMITS, DURATION_LIMITS, type Limits } from '../core/limits.ts';
import { checkDurationMs, parseDuration as parseDurationText } from '../core/duration.ts';
import type { RetryPolicy } from './provider-config.ts';
import { effectiveProfile } from '../sandbox/effective-profile.ts';
import { unknownProfile } from '../sandbox/profile-names.ts';
import { type ConfigFile, fileLayer, readConfigFile } from './file.ts';
import { mergePolicy, type PolicyLayer } from './layers.ts';
import { canonical, isWithin } from '../core/paths.ts';
import { homeGuard } from './home.ts';
import { withModelOptions } from './model-options.ts';
import { secretPolicy } from './secrets.ts';
import { checkNetAllow } from './network.ts';
import { builtinProviders, DEFAULT_RETRY, type ModelChoice, type ProviderEntry, resolveProvider } from './model.ts';
import type { ShellRules } from './command-layer.ts';
import { type CliFlags, type Config } from './types.ts';
import { ConfigError } from '../core/errors.ts';

export { noModelMessage } from './model.ts';

type Env = Record<string, string | undefined>;

// model_calls and tool_calls use 0 for "unlimited", which is the highest value, not the lowest.
const ZERO_IS_UNLIMITED = new Set<keyof Limits>(['model_calls', 'tool_calls', 'cost_usd']);

function lower(key: keyof Limits, current: number, proposed: number): number {
  if (!ZERO_IS_UNLIMITED.has(key)) return Math.min(current, proposed);
  if (proposed === 0) return current;
  return current === 0 ? proposed : Math.min(current, proposed);
}

/** --timeout: seconds as a number, or "90", "30s", "5m", "1h", "2d", "250ms"; null when refused. */
export function parseDuration(value: string | number): number | null {
  const d = parseDurationText(value);
  return d.ok ? d.ms : null;
}

function count(flag: string, value: number | string | undefined): number | undefined {
  if (value === undefined) return undefined;
  const n = typeof value === 'number' ? value : /^\s*\d+\s*$/.test(value) ? Number(value) : NaN;
  if (!Number.isInteger(n) || n < 0) {
    throw new ConfigError(`${flag} ${value}: expected a whole number of calls (0 = unlimited).`, undefined, flag);
  }
  return n;
}

function taskEnv(pairs: string[] | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  for (const pair of pairs ?? []) {
    const eq = pair.indexOf('=');
    const name = eq === -1 ? pair : pair.slice(0, eq);
    if (eq === -1 || !/^CONCH_TASK_[A-Za-z0-9_]+$/.test(name)) {
      throw new ConfigError(
        `--env ${pair}: expected NAME=VALUE with a NAME beginning with CONCH_TASK_ (e.g. --env CONCH_TASK_TICKET=123); only those variables are passed to commands.`,
        undefined,
        '--env',
      );
    }
    out[name] = pair.slice(eq + 1);
  }
  return out;
}

/**
 * A directory flag typed now that names nothing is the user's to fix, now: a missing --allow-write
 * root makes every shell command of the run fail with a message only the model sees, and a missing
 * --tools-dir (a typo) ran without those tools, the one warning easy to miss above the answer.
 */
function checkDirFlag(flag: '--allow-write' | '--tools-dir', dirs: string[] | undefined, cwd: string): void {
  for (const dir of dirs ?? []) {
    const abs = resolve(cwd, dir);
    const st = statSync(abs, { throwIfNoEntry: false });
    if (st?.isDirectory()) continue;
    const what = st ? 'is not a directory' : 'does not exist';
    throw new ConfigError(`${flag} ${dir}: ${abs} ${what}; create the directory first, or leave the flag out.`, undefined, flag);
  }
}

function flagLayer(flags: CliFlags, cwd: string): PolicyLayer {
  const unknown = flags.profile === undefined ? null : unknownProfile(flags.profile);
  if (unknown) throw new ConfigError(`--profile ${flags.profile}: ${unknown}.`, undefined, '--profile');
  let toolsAllow: PolicyLayer['toolsAllow'];
  if (flags.tools !== undefined) {
    const names = String(flags.tools).split(',').map((s) => s.trim()).filter(Boolean);
    if (names.length === 0) throw new ConfigError('--tools needs a comma-separated list of tool names, e.g. --tools read,bash.', undefined, '--tools');
    toolsAllow = { names, rule: 'flag:--tools' };
  }
  return {
    kind: 'flags',
    source: 'command-line flags',
    toolsAllow,
    toolsDeny: [],
    shellEnabled: flags.shell === false ? false : undefined,
    filesystem: flags.filesystem === false ? false : undefined,
    readOnly: flags.readOnly === true ? true : undefined,
    network: flags.network === false ? false : undefined,
    ...(flags.allowNet?.length ? { netAllow: flags.allowNet } : {}),
    profile: flags.profile,
    writableRoots: flags.allowWrite?.length ? flags.allowWrite.map((r) => resolve(cwd, r)) : undefined,
    writeDeny: [],
    readDeny: [],
  };
}

/** Redefinitions are refused whether or not `useProject` (trust) lets the project's providers count. */
function providersFrom(files: ConfigFile[], env: Env, useProject: boolean): Map<string, ProviderEntry> {
  const providers = builtinProviders(env);
  const builtins = new Set(providers.keys());
  const userNames = new Set<string>();
  for (const { kind, file, value } of files) {
    for (const [name, p] of Object.entries(value.providers ?? {})) {
      if (kind === 'project' && (builtins.has(name) || userNames.has(name))) {
        throw new ConfigError(
          `${file}: "providers.${name}" redefines a provider ${builtins.has(name) ? 'built into conch' : 'from your user config'}; a project config may only add new providers. Rename it (e.g. "${name}-project").`,
          file,
          `providers.${name}`,
        );
      }
      if (kind === 'user') userNames.add(name);
      else if (!useProject) continue;
      const before = providers.get(name);
      // The environment's base URL for a built-in outranks the file (env is the later layer).
      const envUrl = builtins.has(name) ? before?.baseUrl : undefined;
      providers.set(name, {
        type: p.type,
        baseUrl: envUrl ?? p.baseUrl,
        apiKey: p.apiKey ?? (before?.type === p.type ? before.apiKey : undefined),
        apiKeyFile: p.apiKey !== undefined ? file : before?.apiKeyFile,
      });
    }
  }
  return providers;
}

export interface LoadInput {
  cwd: string;
  env: Env;
  flags: CliFlags;
  /**
   * Whether the user trusted this workspace (`conch trust`, plugins/trust.ts). Only then may the
   * project config choose the model or add providers. Absent: never trusted.
   */
  isTrusted?: (configDir: string, cwd: string) => Promise<boolean>;
}

export async function loadConfig(input: LoadInput): Promise<Config> {
  const { env, flags } = input;
  const cwd = resolve(input.cwd);
  const xdg = env.XDG_CONFIG_HOME;
  const home = env.HOME || homedir();
  const configDir = xdg && isAbsolute(xdg) ? join(xdg, 'conch') : join(home, '.config', 'conch');

  const userPath = join(configDir, 'config.json');
  const files = [
    await readConfigFile('user', userPath, dirname(userPath)),
    await readConfigFile('project', join(cwd, '.conch', 'config.json'), cwd),
  ].filter((f): f is ConfigFile => f !== null);
  const chooser = await untrustedModelChoice(files, configDir, cwd, input.isTrusted);
  const policyLayer = flags.policy ? await (await import('./policy-file.ts')).loadPolicyFile(flags.policy, cwd) : undefined;

  // Flags are checked before anything that depends on them, so a typo is reported as itself.
  const env_ = taskEnv(flags.env);
  const flagsLayer = flagLayer(flags, cwd);
  const timeout = flags.timeout === undefined ? undefined : parseDurationText(flags.timeout);
  if (timeout && !timeout.ok) throw new ConfigError(`--timeout ${flags.timeout}: ${timeout.problem}.`, undefined, '--timeout');
  const deadline = timeout?.ms;
  const modelCalls = count('--max-turns', flags.maxTurns);
  const toolCalls = count('--max-tool-calls', flags.maxToolCalls);
  const limitFlags = limitOverrides(flags.limit);

  const limits: Limits = { ...DEFAULT_LIMITS };
  const retry: RetryPolicy = { ...DEFAULT_RETRY };
  const warnings: string[] = chooser ? [chooser.warning] : [];
  const named: PluginNames[] = [];
  let model: ModelChoice | undefined;
  let route: ModelChoice[] = [];
  const prices: Config['prices'] = {};
  let stopOnDeny = false;
  let sessionsKeep = DEFAULT_SESSIONS_KEEP;
  let pluginsEnabled = flags.plugins !== false;
  const firstParty = new Set<string>();
  const dirs: string[] = [];
  let allowOverride: string[] = [];
  const pluginOptions: Record<string, Record<string, unknown>> = {};
  for (const { kind, file, base, value } of files) {
    for (const [key, n] of Object.entries(value.limits ?? {}) as [keyof Limits, number | undefined][]) {
      if (n !== undefined) limits[key] = kind === 'project' ? lower(key, limits[key], n) : n;
    }
    for (const [key, n] of Object.entries(value.retry ?? {}) as [keyof RetryPolicy, number | undefined][]) {
      if (n !== undefined) retry[key] = kind === 'project' ? Math.min(retry[key], n) : n;
    }
    if (value.model && !(kind === 'project' && chooser)) {
      const [first, ...rest] = Array.isArray(value.model) ? value.model : [value.model];
      model = { value: first!, source: file, file };
      route = rest.map((m) => ({ value: m, source: file, file }));
    }
    // A cloned repository must not be able to price your models at 0 and so lift --max-cost.
    if (kind === 'project' && value.prices) warnings.push(`${file}: "prices" ignored: only your user config sets model prices.`);
    else Object.assign(prices, value.prices ?? {});
    if (value.policy?.stopOnDeny !== undefined) stopOnDeny = value.policy.stopOnDeny;
    if (value.sessions?.keep !== undefined) {
      // A cloned repository must not be able to delete the user's sessions of other projects.
      if (kind === 'project') warnings.push(`${file}: "sessions.keep" ignored: only your user config decides how many sessions are kept.`);
      else sessionsKeep = value.sessions.keep;
    }
    const plugins = Array.isArray(value.plugins) ? { firstParty: value.plugins } : value.plugins;
    if (plugins?.enabled === false) pluginsEnabled = false;
    const names = plugins?.firstParty ?? [];
    const key = Array.isArray(value.plugins) ? 'plugins' : 'plugins.firstParty';
    if (kind === 'project' && names.length) {
      // Plugins run unsandboxed in conch: a cloned repository may switch them off, never on.
      warnings.push(
        `${file}: "${key}" ignored: a project config cannot switch on plugins, only disable them ("plugins": { "enabled": false }). To use ${names.join(', ')}, add ${names.length > 1 ? 'them' : 'it'} to your user config or pass --plugin ${names[0]}.`,
      );
    } else {
      for (const name of names) firstParty.add(name);
      if (names.length) named.push({ names, where: (i) => ({ label: `${file}: "${key}[${i}]"`, file, key: `${key}[${i}]` }) });
    }
    dirs.push(...(plugins?.dirs ?? []).map((d) => resolve(base, d)));
    for (const name of FIRST_PARTY_WITH_OPTIONS) {
      const options = plugins && !Array.isArray(plugins) ? (plugins as Record<string, unknown>)[name] : undefined;
      if (options === undefined) continue;
      // Plugin settings say where a plugin reads and writes (the vault's root): a repository must not point them elsewhere.
      if (kind === 'project') warnings.push(`${file}: "plugins.${name}" ignored: only your user config configures a plugin.`);
      else pluginOptions[name] = options as Record<string, unknown>;
    }
    if (plugins?.allowOverride) {
      allowOverride = kind === 'user' ? [...plugins.allowOverride] : allowOverride.filter((n) => plugins.allowOverride!.includes(n));
    }
  }
  if (deadline !== undefined) limits.deadline_ms = deadline;
  if (modelCalls !== undefined) limits.model_calls = modelCalls;
  if (toolCalls !== undefined) limits.tool_calls = toolCalls;
  Object.assign(limits, limitFlags);
  for (const name of flags.plugin ?? []) firstParty.add(name);
  if (flags.plugin?.length) named.push({ names: flags.plugin, where: () => ({ label: '--plugin', key: '--plugin' }) });
  if (named.length) await checkPluginNames(named);
  checkDirFlag('--tools-dir', flags.toolsDir, cwd);
  dirs.push(...(flags.toolsDir ?? []).map((d) => resolve(cwd, d)));
  if (flags.stopOnDeny !== undefined) stopOnDeny = flags.stopOnDeny;

  if (flags.maxCost !== undefined) limits.cost_usd = flags.maxCost;

  // A model named in the environment or on the command line replaces the configured route.
  if (set(env.CONCH_MODEL)) [model, route] = [{ value: env.CONCH_MODEL!, source: 'CONCH_MODEL' }, []];
  if (flags.model !== undefined) [model, route] = [{ value: flags.model, source: flags.modelSource ?? '--model' }, []];
  route.push(...(flags.fallbackModel ?? []).map((m) => ({ value: m, source: '--fallback-model' })));
  const baseUrl = flags.baseUrl === undefined || flags.baseUrl === '' ? undefined : flags.baseUrl;
  const known = providersFrom(files, env, !chooser);
  const resolved = resolveProvider({ providers: known, model, baseUrl, env, retry });
  if (!resolved && route.length > 0) throw new ConfigError('--fallback-model needs a first model (--model or "model" in config.json) to fall back from.', undefined, '--fallback-model');
  const fallbacks = resolved
    ? route.map((choice) => {
        if (!choice.value.includes('/')) throw new ConfigError(`${choice.source} "${choice.value}" must be "provider/model", e.g. "openai/gpt-5.4".`, choice.file, choice.file ? 'model' : choice.source);
        return withModelOptions(resolveProvider({ providers: known, model: choice, baseUrl: undefined, env, retry })!, files, flags);
      })
    : [];
  const provider = resolved && withModelOptions(resolved, files, flags);

  const layers = [...files.map((f) => fileLayer(f, home)), ...(policyLayer ? [policyLayer] : []), flagsLayer];
  const policy = mergePolicy(layers, cwd);
  checkNetAllow(files, flags.allowNet);
  // conch's own config and plugin cache hold code conch runs unsandboxed at the next start: when the
  // workspace contains them (conch run from $HOME), nothing in the run may write them.
  // The session store holds the user's conversations: when the workspace contains it, the tools may
  // neither write nor read it (and the sandbox hides it from commands, see read-hidden.ts).
  const sessionsDir = join(stateHome(env, home), 'conch', 'sessions');
  const ownDirs = [configDir, join(cacheHome(env, home), 'conch'), sessionsDir];
  const own = ownDirGlobs(cwd, ownDirs);
  policy.workspace.protectedGlobs.push(...own);
  policy.sandbox.protectedGlobs.push(...own);
  policy.workspace.readDeny.push(...ownDirGlobs(cwd, [sessionsDir]));
  refuseOwnDirRoots(policy.workspace.writableRoots, ownDirs);
  // After the policy's own verdict on the roots, which names the rule.
  if (!flags.unrestricted) checkDirFlag('--allow-write', flags.allowWrite, cwd);
  const homeRun = homeGuard(cwd, home, flags);
  if (homeRun) {
    for (const globs of [policy.workspace.protectedGlobs, policy.sandbox.protectedGlobs]) {
      globs.push(...homeRun.globs.filter((g) => !globs.includes(g)));
    }
    warnings.push(homeRun.warning);
    if (homeRun.readOnlyWhy) {
      const took = flags.profile !== undefined && flags.profile === policy.sandbox.profile;
      policy.tools.readOnly = true;
      policy.sandbox.profile = effectiveProfile({ chosen: [policy.sandbox.profile], readOnly: policy.tools.readOnly });
      if (took && flags.profile !== policy.sandbox.profile) {
        warnings.push(`--profile ${flags.profile} ignored: ${homeRun.readOnlyWhy}, so shell commands run under the "${policy.sandbox.profile}" profile (--allow-home-writes lets the run write).`);
      }
    }
  }
  policy.sandbox.cacheDir = join(cacheHome(env, home), 'conch', 'sandbox');
  policy.workspace.secrets = secretPolicy(files, configDir, home, cwd, warnings);
  // Command rules need to know where commands can swap a directory for a link (command-rules.ts).
  const shellRules: ShellRules | null = policy.shellRules && { layers: policy.shellRules, mutableRoots: [cwd, ...policy.sandbox.writableRoots, '/tmp'] };
  return {
    files: [...files.map((f) => f.file), ...(flags.policy ? [resolve(cwd, flags.policy)] : [])],
    configDir,
    // The provider bounds raw response bytes from the model-output limit.
    provider: provider && { ...provider, modelOutputBytes: limits.model_output_bytes, prices },
    fallbacks: fallbacks.map((p) => ({ ...p, modelOutputBytes: limits.model_output_bytes, prices })),
    prices,
    limits,
    unrestricted: flags.unrestricted === true,
    ...(homeRun?.readOnlyWhy && { readOnlyWhy: homeRun.readOnlyWhy }),
    sandbox: policy.sandbox,
    workspace: policy.workspace,
    tools: policy.tools,
    plugins: { enabled: pluginsEnabled, dirs, firstParty: [...firstParty], projectTools: flags.projectTools === true, allowOverride, ...(Object.keys(pluginOptions).length > 0 && { options: pluginOptions }) },
    shellRules,
    policy: { stopOnDeny, file: flags.policy ? resolve(cwd, flags.policy) : null, denied: policy.denied },
    mcp: { enabled: flags.mcp !== false, user: userMcp(files) },
    env: env_,
    sessions: { dir: sessionsDir, keep: sessionsKeep },
    ...(flags.skill?.length && { invokeSkills: [...new Set(flags.skill)] }),
    warnings: [...warnings, ...policy.warnings],
  };
}

function userMcp(files: ConfigFile[]): Config['mcp']['user'] {
  const user = files.find((f) => f.kind === 'user' && f.value.mcpServers !== undefined);
  return user ? { file: user.file, value: user.value.mcpServers } : null;
}

/**
 * A project config that chooses the model or adds providers, in a workspace the user has not
 * trusted: the repository would pick which server drives the tools (and, on a 401, conch would
 * advise putting a key into the repository's provider). Those keys are then ignored, saying so.
 */
async function untrustedModelChoice(
  files: ConfigFile[],
  configDir: string,
  cwd: string,
  isTrusted: LoadInput['isTrusted'],
): Promise<{ warning: string } | null> {
  const project = files.find((f) => f.kind === 'project');
  if (!project) return null;
  const keys = [
    ...(project.value.model !== undefined ? ['"model"'] : []),
    ...(Object.keys(project.value.providers ?? {}).length ? ['"providers"'] : []),
  ];
  if (keys.length === 0 || (await isTrusted?.(configDir, cwd))) return null;
  return {
    warning: `${project.file}: ${keys.join(' and ')} ignored: this workspace is not trusted, and a repository must not choose your model server. Run \`conch trust\` here to use ${keys.length > 1 ? 'them' : 'it'}.`,
  };
}

/** First-party plugins that take settings of their own, as config plugins.NAME (each a key in schema.ts). */
const FIRST_PARTY_WITH_OPTIONS = ['vault'] as const;

/** First-party plugin names as one file or flag gave them; `where(i)` locates the i-th for a message. */
interface PluginNames {
  names: string[];
  where: (i: number) => { label: string; file?: string; key: string };
}

/** Unknown first-party plugin names are setup errors, named where they were written. */
async function checkPluginNames(lists: PluginNames[]): Promise<void> {
  const { availableFirstParty } = await import('./first-party.ts');
  const available = await availableFirstParty();
  for (const { names, where } of lists) {
    const i = names.findIndex((n) => !available.includes(n));
    if (i === -1) continue;
    const { label, file, key } = where(i);
    throw new ConfigError(
      `${label}: "${names[i]}" is not a first-party plugin; available: ${available.join(', ') || '(none)'}. For your own plugin files use --tools-dir DIR or ~/.config/conch/tools/.`,
      file,
      key,
    );
  }
}

function set(v: string | undefined): boolean {
  return v !== undefined && v !== '';
}

/** --limit NAME=VALUE: every limit has a flag, not only the common three. */
function limitOverrides(values: string[] | undefined): Partial<Limits> {
  const out: Partial<Limits> = {};
  for (const raw of values ?? []) {
    const eq = raw.indexOf('=');
    const name = raw.slice(0, eq) as keyof Limits;
    const value = Number(raw.slice(eq + 1));
    if (eq < 1 || !(name in DEFAULT_LIMITS)) {
      throw new ConfigError(`--limit ${raw}: expected NAME=VALUE with NAME one of ${Object.keys(DEFAULT_LIMITS).join(', ')}.`, undefined, '--limit');
    }
    if (name === 'cost_usd' ? !Number.isFinite(value) || value < 0 || raw.slice(eq + 1).trim() === '' : !Number.isInteger(value) || value < 0) {
      const what = name === 'cost_usd' ? 'a number of US dollars ≥ 0, such as 0.50' : 'a whole number (bytes, milliseconds or a count)';
      throw new ConfigError(`--limit ${raw}: the value must be ${what}.`, undefined, '--limit');
    }
    const duration = DURATION_LIMITS.includes(name) ? checkDurationMs(value) : null;
    if (duration && !duration.ok) throw new ConfigError(`--limit ${raw}: ${name} ${duration.problem}.`, undefined, '--limit');
    out[name] = value;
  }
  return out;
}

/** $XDG_STATE_HOME, else ~/.local/state (a relative XDG value is invalid and ignored, as the spec says). */
export function stateHome(env: Env, home: string): string {
  return env.XDG_STATE_HOME && isAbsolute(env.XDG_STATE_HOME) ? env.XDG_STATE_HOME : join(home, '.local', 'state');
}

/** Sessions kept at most (config sessions.keep; 0 = no cap): the oldest go when a new one starts. */
export const DEFAULT_SESSIONS_KEEP = 500;

function cacheHome(env: Env, home: string): string {
  return env.XDG_CACHE_HOME && isAbsolute(env.XDG_CACHE_HOME) ? env.XDG_CACHE_HOME : join(home, '.cache');
}

/** conch's cache folder, $XDG_CACHE_HOME/conch (default ~/.cache/conch): where plugins keep rebuildable indexes. */
export function conchCacheDir(env: Env = process.env): string {
  return join(cacheHome(env, env.HOME || homedir()), 'conch');
}

/** Workspace-relative protected globs for the given directories that lie inside the workspace. */
function ownDirGlobs(cwd: string, dirs: string[]): string[] {
  const root = canonical(cwd);
  const globs: string[] = [];
  for (const dir of dirs.map(canonical)) {
    if (dir !== root && isWithin(dir, root)) globs.push(relative(root, dir), `${relative(root, dir)}/**`);
  }
  return globs;
}

/**
 * A writable root that contains (or lies in) conch's config or plugin cache would let a sandboxed
 * command plant code that the next start runs unsandboxed. Refuse it, naming a way out.
 */
function refuseOwnDirRoots(roots: string[], ownDirs: string[]): void {
  for (const root of roots) {
    const r = canonical(root);
    const hit = ownDirs.map(canonical).find((dir) => isWithin(dir, r) || isWithin(r, dir));
    if (hit) {
      throw new ConfigError(
        `writable root ${root} overlaps conch's own folder ${hit} (config, plugins, their cache or sessions), which holds code conch runs outside the sandbox or your conversations. Allow a narrower folder instead (e.g. a tool's own cache under it).`,
        undefined,
        '--allow-write',
      );
    }
  }
}
