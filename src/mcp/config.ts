// MCP server entries as users write them: "mcpServers" in ~/.config/conch/config.json, the project's
// .mcp.json in the shape Claude Code uses, or what an editor passes in ACP session/new. Turned into
// one closed spec per server; a malformed entry is a ConfigError naming the file and key.
import { Type, type TSchema } from '../core/typebox.ts';
import { ConfigError } from '../core/errors.ts';
import { firstProblem, keyPath } from '../config/schema.ts';
import { projectServers } from './gate.ts';
import { expandVars } from '../core/env-vars.ts';
import { MAX_DURATION_MS } from '../core/duration.ts';
import type { SecretValue } from '../core/secret-scrub.ts';

export { expandVars };

export const DEFAULT_STARTUP_TIMEOUT_MS = 10_000;
export const DEFAULT_TOOL_TIMEOUT_MS = 60_000;
/**
 * Bytes of one server's tool definitions (names, descriptions as sent, schemas) conch takes: they
 * go into every model request, and a list of thousands of tools was past limits.context_bytes.
 */
export const DEFAULT_TOOL_LIST_BYTES = 4 * 1024 * 1024;
/** Characters of a tool's description the model is given. */
export const MAX_DESCRIPTION = 4096;

const closed = { additionalProperties: false } as const;
const Strings = Type.Array(Type.String(), { description: 'a list of strings' });
const StringMap = Type.Record(Type.String(), Type.String(), { description: 'an object of string values' });
const Ms = Type.Integer({ minimum: 1, maximum: MAX_DURATION_MS, description: 'a positive number of milliseconds' });
const common = {
  enabledTools: Type.Optional(Strings),
  disabledTools: Type.Optional(Strings),
  startupTimeoutMs: Type.Optional(Ms),
  toolTimeoutMs: Type.Optional(Ms),
  toolListBytes: Type.Optional(Type.Integer({ minimum: 1, description: 'a positive number of bytes' })),
};

const StdioSchema = Type.Object(
  {
    type: Type.Optional(Type.Literal('stdio')),
    command: Type.String({ minLength: 1, description: 'a program name or path' }),
    args: Type.Optional(Strings),
    env: Type.Optional(StringMap),
    cwd: Type.Optional(Type.String({ minLength: 1 })),
    // conch's own keys: what the server may do inside the sandbox.
    workspace: Type.Optional(Type.Union([Type.Literal('read'), Type.Literal('write')])),
    network: Type.Optional(Type.Boolean({ description: 'true or false' })),
    ...common,
  },
  closed,
);

const HttpSchema = Type.Object(
  {
    type: Type.Optional(Type.Union([Type.Literal('http'), Type.Literal('streamable-http')])),
    url: Type.String({ minLength: 1, description: 'an http:// or https:// URL' }),
    headers: Type.Optional(StringMap),
    ...common,
  },
  closed,
);

interface Common {
  name: string;
  /** Where it was configured: a file path, or 'session/new'. */
  source: string;
  /** From the repository (.mcp.json): started only in a trusted workspace. */
  project: boolean;
  enabledTools: string[] | null;
  disabledTools: string[];
  startupTimeoutMs: number;
  toolTimeoutMs: number;
  toolListBytes: number;
  /** Set when the entry cannot be started as configured (an unset ${VAR}); reported, never started. */
  problem?: string;
}

export interface StdioSpec extends Common {
  transport: 'stdio';
  command: string;
  args: string[];
  /** Variables the config names for the server; all it gets besides the basic ones. */
  env: Record<string, string>;
  cwd: string | null;
  workspace: 'read' | 'write';
  /** null: the run's network policy. */
  network: boolean | null;
}

export interface HttpSpec extends Common {
  transport: 'http';
  url: string;
  headers: Record<string, string>;
}

export type ServerSpec = StdioSpec | HttpSpec;

export interface ParseContext {
  source: string;
  project: boolean;
  /** Where ${VAR} is looked up. */
  env: Record<string, string | undefined>;
  /** The key the servers sit under, for messages ('mcpServers'). */
  key?: string;
}

const SERVER_NAME = /^[A-Za-z0-9_-]{1,32}$/;

/** Every server in an `mcpServers` object. */
export function parseServers(value: unknown, ctx: ParseContext): ServerSpec[] {
  const key = ctx.key ?? 'mcpServers';
  const fail = (path: string, text: string): never => {
    throw new ConfigError(`${ctx.source}: "${path}" ${text}`, ctx.source, path);
  };
  if (value === undefined) return [];
  if (!value || typeof value !== 'object' || Array.isArray(value)) fail(key, 'must be an object of servers by name, e.g. { "github": { "command": "…" } }.');
  const servers: ServerSpec[] = [];
  for (const [name, entry] of Object.entries(value as Record<string, unknown>)) {
    const at = `${key}.${name}`;
    if (!SERVER_NAME.test(name)) fail(at, 'is not a valid server name: use up to 32 letters, digits, "_" or "-" (it becomes part of each tool name).');
    if (!entry || typeof entry !== 'object' || Array.isArray(entry)) fail(at, 'must be an object with "command" (stdio) or "url" (HTTP).');
    const raw = entry as Record<string, unknown>;
    // An .mcp.json shared with other clients may list an SSE server beside the rest: that one is
    // not started, saying why, as a server that fails to start; the others, and the run, go on.
    if (raw.type === 'sse') {
      servers.push({
        name,
        source: ctx.source,
        project: ctx.project,
        enabledTools: null,
        disabledTools: [],
        startupTimeoutMs: DEFAULT_STARTUP_TIMEOUT_MS,
        toolTimeoutMs: DEFAULT_TOOL_TIMEOUT_MS,
        toolListBytes: DEFAULT_TOOL_LIST_BYTES,
        transport: 'http',
        url: typeof raw.url === 'string' ? raw.url : '',
        headers: {},
        problem: `its "type" is "sse" (${at} in ${ctx.source}), which conch does not speak; give the server's Streamable HTTP endpoint instead ("type": "http")`,
      });
      continue;
    }
    const isHttp = raw.url !== undefined || raw.type === 'http' || raw.type === 'streamable-http';
    const schema: TSchema = isHttp ? HttpSchema : StdioSchema;
    const problem = firstProblem(schema, raw);
    if (problem) fail(keyPath([...at.split('.'), ...problem.path]), problem.text);
    const base = {
      name,
      source: ctx.source,
      project: ctx.project,
      enabledTools: (raw.enabledTools as string[] | undefined) ?? null,
      disabledTools: (raw.disabledTools as string[] | undefined) ?? [],
      startupTimeoutMs: (raw.startupTimeoutMs as number | undefined) ?? DEFAULT_STARTUP_TIMEOUT_MS,
      toolTimeoutMs: (raw.toolTimeoutMs as number | undefined) ?? DEFAULT_TOOL_TIMEOUT_MS,
      toolListBytes: (raw.toolListBytes as number | undefined) ?? DEFAULT_TOOL_LIST_BYTES,
    };
    const missing = new Set<string>();
    const expand = (text: string) => expandVars(text, ctx.env, missing);
    const expandMap = (map: unknown) => Object.fromEntries(Object.entries((map ?? {}) as Record<string, string>).map(([k, v]) => [k, expand(v)]));
    let spec: ServerSpec;
    if (isHttp) {
      const url = raw.url as string;
      if (!/^https?:\/\//i.test(url)) fail(`${at}.url`, `must be an http:// or https:// URL, got ${JSON.stringify(url)}.`);
      spec = { ...base, transport: 'http', url, headers: expandMap(raw.headers) };
    } else {
      spec = {
        ...base,
        transport: 'stdio',
        command: raw.command as string,
        args: ((raw.args as string[] | undefined) ?? []).map(expand),
        env: expandMap(raw.env),
        cwd: (raw.cwd as string | undefined) ?? null,
        workspace: (raw.workspace as 'read' | 'write' | undefined) ?? 'read',
        network: (raw.network as boolean | undefined) ?? null,
      };
    }
    if (missing.size) {
      const names = [...missing];
      spec.problem = `${names.map((n) => `\${${n}}`).join(', ')} ${names.length > 1 ? 'are' : 'is'} not set (${at} in ${ctx.source}); export ${names.length > 1 ? 'them' : 'it'} or give a default as \${NAME:-value}`;
    }
    servers.push(spec);
  }
  return servers;
}

/** Whether enabledTools and disabledTools leave the server's tool `name` in. */
export function selects(spec: ServerSpec, name: string): boolean {
  return (spec.enabledTools === null || spec.enabledTools.includes(name)) && !spec.disabledTools.includes(name);
}

/**
 * What a server's entry hands it that must not reach a trace or a session file: every env value
 * and header value (an Authorization header, an API token), as expanded. A header value with a
 * scheme (`Bearer TOKEN`) hides the credential alone as well, should a server echo just that.
 */
export function specSecrets(specs: ServerSpec[]): SecretValue[] {
  const out: SecretValue[] = [];
  for (const spec of specs) {
    const values = spec.transport === 'http' ? spec.headers : spec.env;
    const kind = spec.transport === 'http' ? 'header' : 'env';
    for (const [key, value] of Object.entries(values)) {
      const name = `MCP server ${spec.name} ${kind} ${key}`;
      out.push({ name, value });
      const credential = kind === 'header' ? /^\S+ +(\S+)$/.exec(value)?.[1] : undefined;
      if (credential) out.push({ name, value: credential });
    }
  }
  return out;
}

/** What `conch trust` shows of one server of a .mcp.json: what it runs or reaches, and what of the user's environment it is given. */
export interface ServerSummary {
  name: string;
  /** The command and its arguments, or the URL, as written (before ${VAR} expansion). */
  runs: string;
  /** The ${VAR} names anywhere in its entry: their values go to that program or URL. */
  vars: string[];
  /** What its entry grants past a read-only, same-folder server: workspace writes, another folder to run in. */
  grants: string[];
}

/** The servers of a .mcp.json text, as written; [] for text that is not one (conch would not start it). */
export function summarizeServers(text: string): ServerSummary[] {
  const servers = projectServers(text);
  if (!servers || typeof servers !== 'object' || Array.isArray(servers)) return [];
  return Object.entries(servers as Record<string, unknown>).flatMap(([name, entry]) => {
    if (!entry || typeof entry !== 'object' || Array.isArray(entry)) return [];
    const raw = entry as { command?: unknown; args?: unknown; url?: unknown; workspace?: unknown; cwd?: unknown };
    const args = Array.isArray(raw.args) ? raw.args.map(String) : [];
    const runs = typeof raw.url === 'string' ? raw.url : typeof raw.command === 'string' ? [raw.command, ...args].join(' ') : '(neither a command nor a url)';
    const vars = [...new Set([...JSON.stringify(entry).matchAll(/\$\{([A-Za-z_][A-Za-z0-9_]*)/g)].map((m) => m[1]!))];
    // A relative command runs from its cwd: `./server` there may be no workspace file at all.
    const grants = [
      ...(raw.workspace === 'write' ? ['it may write the workspace'] : []),
      ...(typeof raw.cwd === 'string' && raw.cwd !== '' ? [`it runs in ${raw.cwd}`] : []),
    ];
    return [{ name, runs, vars, grants }];
  });
}
