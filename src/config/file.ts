// One config file: read it, validate it against the closed schema, apply the rules that depend on
// whose file it is, and turn its policy part into a layer. Relative paths in the user config are
// relative to its directory; in the project config (./.conch/config.json) to the project root,
// the directory holding .conch, which is where people think of them from.
import { homedir } from 'node:os';
import { isAbsolute, join, resolve } from 'node:path';
import type { Static } from '../core/typebox.ts';
import type { CommandLayer, CommandRule } from './command-layer.ts';
import type { PathRule, PolicyLayer } from './layers.ts';
import type { ConfigFileSchema } from './schema.ts';
import { ConfigError } from '../core/errors.ts';
import { DURATION_LIMITS } from '../core/limits.ts';
import { checkDurationMs } from '../core/duration.ts';
import { readSmallFile } from '../workspace/small-file.ts';
import { parseJsonText } from './json-text.ts';
import { isBuiltinProvider } from './model.ts';
import { isHttpUrl } from '../core/http-url.ts';

export type ConfigFileValue = Static<typeof ConfigFileSchema>;

export interface ConfigFile {
  kind: 'user' | 'project';
  file: string;
  /** Relative paths in the file resolve against this directory. */
  base: string;
  value: ConfigFileValue;
  /** The file's text as read: trust pins a project file to it (plugins/trust.ts). */
  text: string;
}

/** Deeper than any real config; validation recurses, so a hostile file must not. */
export const MAX_DEPTH = 64;

/** Nesting depth of a parsed JSON value, measured without recursion. */
export function depthOf(value: unknown): number {
  let deepest = 0;
  const stack: [unknown, number][] = [[value, 1]];
  while (stack.length > 0) {
    const [node, depth] = stack.pop()!;
    if (depth > MAX_DEPTH) return depth;
    deepest = Math.max(deepest, depth);
    if (node && typeof node === 'object') for (const child of Object.values(node)) stack.push([child, depth + 1]);
  }
  return deepest;
}

/** Far above any real config; a bound so that a link to /dev/zero cannot fill memory. */
const CONFIG_MAX_BYTES = 4 * 1024 * 1024;

const fail = (file: string, key: string, text: string): never => {
  throw new ConfigError(`${file}: "${key}" ${text}`, file, key);
};

/**
 * The file's validated content, or null when it does not exist. `userFile` is the user config file as
 * messages name it (XDG_CONFIG_HOME moves it): where a project's refused setting belongs instead.
 */
export async function readConfigFile(kind: 'user' | 'project', file: string, base: string, userFile: string): Promise<ConfigFile | null> {
  let text: string;
  try {
    const read = await readSmallFile(file, CONFIG_MAX_BYTES);
    if (!read) return null;
    if (read.truncated) {
      throw new ConfigError(`${file}: the config file is larger than ${CONFIG_MAX_BYTES / 1024 / 1024} MiB. A config file is one small JSON object.`, file);
    }
    text = read.bytes.toString('utf8');
  } catch (e) {
    if (e instanceof ConfigError) throw e;
    const code = (e as NodeJS.ErrnoException).code;
    const why =
      code === 'EACCES' ? 'permission denied' : code === 'EISDIR' ? 'it is a directory' : code === 'ENOTREG' ? 'it is not a regular file' : (code ?? String(e));
    throw new ConfigError(`${file}: the config file cannot be read (${why}). Make it a readable JSON file or remove it.`, file);
  }
  // An empty file is an empty config (`touch config.json` before filling it in), as {} would be.
  const parsed = isBlank(text) ? { ok: true as const, value: {} } : parseJsonText(text);
  if (!parsed.ok) {
    throw new ConfigError(`${file}: ${parsed.message}. A config file is one JSON object, e.g. {"model": "anthropic/claude-sonnet-5-5"}: fix the JSON there, or empty or remove the file for the defaults.`, file);
  }
  const value = parsed.value;
  if (depthOf(value) > MAX_DEPTH) {
    throw new ConfigError(`${file}: the JSON is nested more than ${MAX_DEPTH} levels deep; a config file is a shallow object.`, file);
  }
  // Loaded only when a file exists: most runs have no config file and need no schema compiler.
  const { ConfigFileSchema, firstProblem, keyPath } = await import('./schema.ts');
  const problem = firstProblem(ConfigFileSchema, value);
  if (problem) fail(file, keyPath(problem.path), problem.text);
  const config: ConfigFile = { kind, file, base, value: value as ConfigFileValue, text };
  checkFile(config, userFile);
  return config;
}

/** Nothing but whitespace (and the byte-order mark an editor may write). */
function isBlank(text: string): boolean {
  return /^\uFEFF?\s*$/.test(text);
}

/** Shared with the policy file: `env` permits variables, which a deny rule has no use for. */
export const DENY_ENV = 'only applies to allow and ask rules (the variables a matching command may set); a deny rule matches whatever variables a command sets. Remove it.';

const PROVIDER_NAME = /^[A-Za-z0-9_.-]+$/;

function isLoopback(url: string): boolean {
  try {
    const host = new URL(url).hostname;
    return host === 'localhost' || host === '[::1]' || /^127\.\d+\.\d+\.\d+$/.test(host);
  } catch {
    return false;
  }
}

function checkFile({ kind, file, value }: ConfigFile, userFile: string): void {
  for (const key of DURATION_LIMITS) {
    const n = value.limits?.[key];
    const d = n === undefined ? null : checkDurationMs(n);
    if (d && !d.ok) fail(file, `limits.${key}`, `${d.problem}.`);
  }
  for (const key of ['initialDelayMs', 'maxDelayMs'] as const) {
    const n = value.retry?.[key];
    const d = n === undefined ? null : checkDurationMs(n, { zero: true });
    if (d && !d.ok) fail(file, `retry.${key}`, `${d.problem}.`);
  }
  for (const [name, p] of Object.entries(value.providers ?? {})) {
    if (!PROVIDER_NAME.test(name)) fail(file, `providers.${name}`, 'is not a valid provider name; use letters, digits, "_", "." or "-".');
    if (p.type === undefined && !isBuiltinProvider(name)) {
      fail(file, `providers.${name}.type`, 'is required; expected one of "anthropic", "openai" (only the built-in "anthropic" and "openai" entries may leave it out).');
    }
    if (p.baseUrl !== undefined && !isHttpUrl(p.baseUrl)) {
      fail(file, `providers.${name}.baseUrl`, `must be an http:// or https:// URL, e.g. "http://localhost:11434/v1", got ${JSON.stringify(p.baseUrl)}.`);
    }
    if (kind === 'project' && p.apiKey !== undefined) {
      fail(file, `providers.${name}.apiKey`, `is not allowed in a project config: a repository could send your key to any server. Define the provider in your user config (${userFile}).`);
    }
    // The model server decides which tools run: a repository must not point conch at a server it
    // controls. A project may still name a server on this machine (a team's local Ollama setup).
    if (kind === 'project' && p.baseUrl !== undefined && !isLoopback(p.baseUrl)) {
      fail(file, `providers.${name}.baseUrl`, `is not allowed in a project config unless it is on this machine (localhost, 127.0.0.1, [::1]), got "${p.baseUrl}": the server a repository names would drive the tools. Define the provider in your user config (${userFile}).`);
    }
  }
  if (kind === 'project' && value.mcpServers !== undefined) {
    fail(file, 'mcpServers', "is not read from a project's .conch/config.json: put the project's servers in .mcp.json at the workspace root (started after `conch trust`), or yours in your user config.");
  }
  if (kind === 'project' && !Array.isArray(value.plugins) && value.plugins?.dirs) {
    fail(file, 'plugins.dirs', 'is not allowed in a project config: a repository cannot load code into conch. Use --tools-dir, --project-tools or your user config.');
  }
  for (const list of ['allow', 'deny', 'ask'] as const) {
    for (const [i, rule] of (value.shell?.commands?.[list] ?? []).entries()) {
      if (!isAbsolute(rule.executable) && rule.executable.includes('/')) {
        fail(file, `shell.commands.${list}[${i}].executable`, `must be an absolute path or a bare program name looked up on PATH, got "${rule.executable}".`);
      }
      if (list === 'deny' && rule.env !== undefined) fail(file, `shell.commands.deny[${i}].env`, DENY_ENV);
    }
  }
}

/** A string that is an absolute path names a root; anything else is a workspace-relative glob. */
function pathRules(entries: string[] | undefined, rule: (i: number) => string, home: string = homedir()): PathRule[] {
  // ~/… is the home directory, as in the built-in secret locations (read.deny adds to those).
  return (entries ?? []).map((e, i) =>
    e === '~' || e.startsWith('~/') ? { rule: rule(i), root: join(home, e.slice(1)) }
    : isAbsolute(e) ? { rule: rule(i), root: e }
    : { rule: rule(i), glob: e },
  );
}

export function commandLayer(source: string, idPrefix: string, commands: NonNullable<NonNullable<ConfigFileValue['shell']>['commands']>): CommandLayer {
  const rules = (list: 'allow' | 'deny' | 'ask'): CommandRule[] =>
    (commands[list] ?? []).map((r, i) => ({
      id: r.id ?? `${idPrefix}.${list}[${i}]`,
      executable: r.executable,
      args: r.args ?? [],
      match: r.match ?? 'prefix',
      ...(r.env && { env: r.env }),
    }));
  return { source, idPrefix, default: commands.default, allow: rules('allow'), deny: rules('deny'), ask: rules('ask') };
}

export function fileLayer({ kind, file, base, value }: ConfigFile, home: string = homedir()): PolicyLayer {
  const source = `${kind} config ${file}`;
  const id = (key: string) => `${kind}:${key}`;
  const w = value.write;
  const s = value.sandbox;
  const writable = w?.writableRoots || s?.writableRoots ? [...(w?.writableRoots ?? []), ...(s?.writableRoots ?? [])] : undefined;
  return {
    kind,
    source,
    toolsAllow: value.tools?.allow ? { names: value.tools.allow, rule: id('tools.allow') } : undefined,
    toolsDeny: (value.tools?.deny ?? []).map((name, i) => ({ name, rule: id(`tools.deny[${i}]`) })),
    shellEnabled: value.shell?.enabled,
    commands: value.shell?.commands ? commandLayer(source, id('shell.commands'), value.shell.commands) : undefined,
    writableRoots: writable?.map((r) => resolve(base, r)),
    writeDeny: [
      ...pathRules(w?.protected, (i) => id(`write.protected[${i}]`)),
      ...pathRules(s?.protected, (i) => id(`sandbox.protected[${i}]`)),
    ],
    readRoots: value.read?.roots?.map((r, i) => ({ root: resolve(base, r), rule: id(`read.roots[${i}]`) })),
    readDeny: pathRules(value.read?.deny, (i) => id(`read.deny[${i}]`), home),
    denySecretFiles: value.read?.denySecretFiles,
    network: value.network === false || s?.network === 'off' ? false : value.network,
    ...(typeof s?.network === 'object' ? { netAllow: s.network.allow } : {}),
    profile: s?.profile,
  };
}
