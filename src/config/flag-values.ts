// The command line's values, checked before anything that depends on them (so a typo is reported
// as itself) and turned into what config holds: limits, the variables passed to commands, and the
// flags' policy layer. Each refusal names the flag and the form it takes.
import { resolve } from 'node:path';
import { DEFAULT_LIMITS, DURATION_LIMITS, type Limits } from '../core/limits.ts';
import { checkDurationMs, parseDuration as parseDurationText } from '../core/duration.ts';
import { unknownProfile } from '../sandbox/profile-names.ts';
import type { PolicyLayer } from './layers.ts';
import type { CliFlags } from './types.ts';
import { ConfigError } from '../core/errors.ts';
import { plainDecimal, plainWhole } from '../core/numbers.ts';

/** --timeout: seconds as a number, or "90", "30s", "5m", "1h", "2d", "250ms"; null when refused. */
export function parseDuration(value: string | number): number | null {
  const d = parseDurationText(value);
  return d.ok ? d.ms : null;
}

/** --timeout as milliseconds, undefined when not given. */
export function timeoutFlag(flags: CliFlags): number | undefined {
  // Typed text is taken as typed: ' 5' is no duration a person means, though a config value may be padded.
  const padded = typeof flags.timeout === 'string' && flags.timeout.trim() !== flags.timeout;
  const timeout = flags.timeout === undefined ? undefined : padded ? { ok: false as const, problem: 'expected seconds or a duration such as 30s, 5m, 1h or 2d, without spaces' } : parseDurationText(flags.timeout);
  if (timeout && !timeout.ok) throw new ConfigError(`--timeout ${flags.timeout}: ${timeout.problem}.`, undefined, '--timeout');
  return timeout?.ms;
}

/** --max-turns, --max-tool-calls: a whole number of calls (0 = unlimited). */
export function count(flag: string, value: number | string | undefined): number | undefined {
  if (value === undefined) return undefined;
  const n = typeof value === 'number' ? value : /^\s*\d+\s*$/.test(value) ? Number(value) : NaN;
  if (!Number.isInteger(n) || n < 0) {
    throw new ConfigError(`${flag} ${value}: expected a whole number of calls (0 = unlimited).`, undefined, flag);
  }
  return n;
}

/** --env NAME=VALUE: only CONCH_TASK_* names reach commands. */
/** --no-plugins with a flag that names plugins to load: one of the two would be ignored in silence. */
export function checkPluginFlags(flags: CliFlags): void {
  if (flags.plugins !== false) return;
  const asked = [
    ...(flags.plugin ?? []).map((name) => `--plugin ${name}`),
    ...(flags.toolsDir ?? []).map((dir) => `--tools-dir ${dir}`),
    ...(flags.projectTools ? ['--project-tools'] : []),
  ];
  if (asked.length === 0) return;
  throw new ConfigError(`--no-plugins loads no plugin, so ${asked.join(', ')} would do nothing; give one or the other.`, undefined, '--no-plugins');
}

/**
 * Flags that shape the sandbox, beside --unrestricted, which runs commands outside it: the run would
 * go on without what they ask for (--unrestricted --no-network had the host's network).
 */
export function checkUnrestrictedFlags(flags: CliFlags): void {
  if (!flags.unrestricted) return;
  const asked = [
    ...(flags.network === false ? ['--no-network'] : []),
    ...(flags.allowNet ?? []).map((host) => `--allow-net ${host}`),
    ...(flags.profile !== undefined ? [`--profile ${flags.profile}`] : []),
  ];
  if (asked.length === 0) return;
  throw new ConfigError(
    `--unrestricted runs shell commands outside the sandbox, where ${asked.join(', ')} cannot hold; give one or the other.`,
    undefined,
    '--unrestricted',
  );
}

export function taskEnv(pairs: string[] | undefined): Record<string, string> {
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
    // A second value for one name would replace the first in silence: the values are secrets kept
    // out of the session, so name them by the variable only.
    if (Object.hasOwn(out, name)) throw new ConfigError(`--env ${name} was given more than once; give each variable once.`, undefined, '--env');
    out[name] = pair.slice(eq + 1);
  }
  return out;
}

/** The limits with a flag of their own beside --limit NAME=VALUE. */
const LIMIT_SHORTHANDS: [keyof Limits, string, (flags: CliFlags) => unknown][] = [
  ['deadline_ms', '--timeout', (f) => f.timeout],
  ['model_calls', '--max-turns', (f) => f.maxTurns],
  ['tool_calls', '--max-tool-calls', (f) => f.maxToolCalls],
  ['cost_usd', '--max-cost', (f) => f.maxCost],
];

/**
 * Each limit is set once on the command line: of `--max-turns 3 --limit model_calls=5` (or the same
 * --limit twice) one value would be dropped in silence, and which one is no rule a person guesses.
 */
export function checkLimitFlags(flags: CliFlags): void {
  const given = new Map<string, string>();
  for (const raw of flags.limit ?? []) {
    const name = raw.slice(0, raw.indexOf('='));
    const before = given.get(name);
    if (before !== undefined) throw new ConfigError(`--limit ${name} was given more than once (${before}, then --limit ${raw}); give it once.`, undefined, '--limit');
    given.set(name, `--limit ${raw}`);
  }
  for (const [name, flag, value] of LIMIT_SHORTHANDS) {
    const other = given.get(name);
    if (other !== undefined && value(flags) !== undefined) {
      throw new ConfigError(`${flag} ${value(flags)} and ${other} both set the limit ${name}; give one of them.`, undefined, flag);
    }
  }
}

/** --limit NAME=VALUE: every limit has a flag, not only the common three. */
export function limitOverrides(values: string[] | undefined): Partial<Limits> {
  const out: Partial<Limits> = {};
  for (const raw of values ?? []) {
    const eq = raw.indexOf('=');
    const name = raw.slice(0, eq) as keyof Limits;
    if (eq < 1 || !Object.hasOwn(DEFAULT_LIMITS, name)) {
      throw new ConfigError(`--limit ${raw}: expected NAME=VALUE with NAME one of ${Object.keys(DEFAULT_LIMITS).join(', ')}.`, undefined, '--limit');
    }
    // As typed: 0x10, 1e3 or ' 5' is no value a person means (core/numbers.ts).
    const value = name === 'cost_usd' ? plainDecimal(raw.slice(eq + 1)) : plainWhole(raw.slice(eq + 1));
    if (value === null) {
      const what = name === 'cost_usd' ? 'a number of US dollars ≥ 0, such as 0.50' : 'a whole number (bytes, milliseconds or a count)';
      throw new ConfigError(`--limit ${raw}: the value must be ${what}.`, undefined, '--limit');
    }
    const duration = DURATION_LIMITS.includes(name) ? checkDurationMs(value) : null;
    if (duration && !duration.ok) throw new ConfigError(`--limit ${raw}: ${name} ${duration.problem}.`, undefined, '--limit');
    out[name] = value;
  }
  return out;
}

/** The flags as the last policy layer: they only narrow (layers.ts). */
export function flagLayer(flags: CliFlags, cwd: string): PolicyLayer {
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
