// The config files' settings other than policy, merged layer over layer (user, then project). They
// override normally, except that a project config is someone else's file: it may only LOWER limits
// and retry settings (a cloned repository must not lift your run deadline, call budget or retry
// count), chooses the model only in a trusted workspace, can turn policy.stopOnDeny on but not off,
// and cannot set prices, sessions.keep, plugin settings or switch plugins on (each ignored with a
// warning). Policy merges in layers.ts.
import { resolve } from 'node:path';
import { DEFAULT_LIMITS, type Limits } from '../core/limits.ts';
import type { ConfigFile } from './file.ts';
import type { ModelChoice } from './model.ts';
import type { PluginNames } from './plugin-names.ts';
import { DEFAULT_RETRY } from './model.ts';
import type { RetryPolicy } from './provider-config.ts';
import type { Config } from './types.ts';

/** Sessions kept at most (config sessions.keep; 0 = no cap): the oldest go when a new one starts. */
export const DEFAULT_SESSIONS_KEEP = 500;

/** First-party plugins that take settings of their own, as config plugins.NAME (each a key in schema.ts). */
const FIRST_PARTY_WITH_OPTIONS = ['vault'] as const;

// model_calls and tool_calls use 0 for "unlimited", which is the highest value, not the lowest.
const ZERO_IS_UNLIMITED = new Set<keyof Limits>(['model_calls', 'tool_calls', 'cost_usd']);

function lower(key: keyof Limits, current: number, proposed: number): number {
  if (!ZERO_IS_UNLIMITED.has(key)) return Math.min(current, proposed);
  if (proposed === 0) return current;
  return current === 0 ? proposed : Math.min(current, proposed);
}

export interface FileSettings {
  limits: Limits;
  retry: RetryPolicy;
  /** The files' model and the rest of their route (the later file's choice wins). */
  model: ModelChoice | undefined;
  route: ModelChoice[];
  prices: Config['prices'];
  stopOnDeny: boolean;
  sessionsKeep: number;
  /** The prompt history is stored (config history); any file's false turns it off. */
  history: boolean;
  plugins: { enabled: boolean; firstParty: Set<string>; dirs: string[]; allowOverride: string[]; options: Record<string, Record<string, unknown>> };
  /** First-party names the files switched on, for checkPluginNames. */
  named: PluginNames[];
  /** What a project file tried and was not allowed, in file order. */
  warnings: string[];
}

export function mergeFileSettings(files: ConfigFile[], opts: { projectModelIgnored: boolean; pluginsEnabled: boolean }): FileSettings {
  const limits: Limits = { ...DEFAULT_LIMITS };
  const retry: RetryPolicy = { ...DEFAULT_RETRY };
  const warnings: string[] = [];
  const named: PluginNames[] = [];
  let model: ModelChoice | undefined;
  let route: ModelChoice[] = [];
  const prices: Config['prices'] = {};
  let stopOnDeny = false;
  let sessionsKeep = DEFAULT_SESSIONS_KEEP;
  let history = true;
  let pluginsEnabled = opts.pluginsEnabled;
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
    if (value.model && !(kind === 'project' && opts.projectModelIgnored)) {
      const [first, ...rest] = Array.isArray(value.model) ? value.model : [value.model];
      model = { value: first!, source: file, file };
      route = rest.map((m) => ({ value: m, source: file, file }));
    }
    // A cloned repository must not be able to price your models at 0 and so lift --max-cost.
    if (kind === 'project' && value.prices) warnings.push(`${file}: "prices" ignored: only your user config sets model prices.`);
    else Object.assign(prices, value.prices ?? {});
    // Stopping at the first denial is a protection: a cloned repository may ask for it, not lift yours.
    if (kind === 'project' && value.policy?.stopOnDeny === false) {
      if (stopOnDeny) warnings.push(`${file}: "policy.stopOnDeny": false ignored: a project config can only turn stopping at the first denial on.`);
    } else if (value.policy?.stopOnDeny !== undefined) stopOnDeny = value.policy.stopOnDeny;
    if (value.sessions?.keep !== undefined) {
      // A cloned repository must not be able to delete the user's sessions of other projects.
      if (kind === 'project') warnings.push(`${file}: "sessions.keep" ignored: only your user config decides how many sessions are kept.`);
      else sessionsKeep = value.sessions.keep;
    }
    // Prompts may hold secrets: a project may keep them off disk, never put yours back on it.
    if (value.history === false) history = false;
    else if (value.history === true && kind === 'project' && !history) warnings.push(`${file}: "history": true ignored: a project config can only turn the prompt history off.`);
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
  return {
    limits,
    retry,
    model,
    route,
    prices,
    stopOnDeny,
    sessionsKeep,
    history,
    plugins: { enabled: pluginsEnabled, firstParty, dirs, allowOverride, options: pluginOptions },
    named,
    warnings,
  };
}
