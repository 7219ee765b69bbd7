// Start one MCP server and hand back a connected SDK client with its tool list, or why it failed
// (command not found, timed out, crashed with the last lines of its stderr). A stdio server is a
// process conch starts for the user: in restricted mode it runs in the same sandbox as a shell
// command, read-only on the workspace unless its config says "workspace": "write", with a clean
// environment and the run's network unless its config grants its own.
import { dirname, isAbsolute, join, resolve } from 'node:path';
// The SDK is imported only after the servers were spawned, so they boot while it loads.
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { Tool as McpTool } from '@modelcontextprotocol/sdk/types.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { PipedTransport } from './transport.ts';
import { prepareSandboxed, type PlaceholderScope, type PreparedCommand, type SandboxSettings } from '../sandbox/index.ts';
import { effectiveProfile } from '../sandbox/effective-profile.ts';
import { cleanEnv } from '../process/spawn.ts';
import { spawnPiped, type PipedProcess } from '../process/piped.ts';
import { boundedFetch } from './http.ts';
import { connectionCode } from '../core/connection-error.ts';
import type { HttpSpec, ServerSpec, StdioSpec } from './config.ts';
import { listAll } from './tool-list.ts';

export interface ConnectSettings {
  /** Canonical workspace root. */
  workspace: string;
  /**
   * A new private temp dir for one server (its sandbox's /tmp and TMPDIR), apart from the shell
   * commands' and the other servers': what servers keep there (state, downloads, tokens) is theirs.
   */
  tmpDir: () => string;
  sandbox: SandboxSettings;
  /** No sandbox (--unrestricted). */
  unrestricted: boolean;
  placeholders?: PlaceholderScope;
  /** The parent environment, for the basic variables a server gets. */
  parentEnv: Record<string, string | undefined>;
  /** Time a server gets to exit after its stdin closes before it is killed. */
  stopGraceMs: number;
  clientVersion: string;
}

export interface Connection {
  client: Client;
  tools: McpTool[];
  /** Tools it listed that are no valid MCP tool (an inputSchema that is not an object schema), each with why. */
  refused: string[];
  close(): Promise<void>;
  /** How a server whose connection closed ended ("it exited with code 9", its last stderr lines), or ''. */
  ended(): Promise<{ how: string; stderr: string }>;
}

export type Connected = { ok: true; connection: Connection } | { ok: false; reason: string };

export async function connect(spec: ServerSpec, settings: ConnectSettings): Promise<Connected> {
  if (spec.problem) return { ok: false, reason: spec.problem };
  let child: PipedProcess | null = null;
  let prepared: PreparedCommand | null = null;
  let transport: Transport;
  let piped: PipedTransport | null = null;
  if (spec.transport === 'stdio') {
    const started = await startStdio(spec, settings);
    if (!started.ok) return started;
    ({ child, prepared } = started);
    const { PipedTransport } = await import('./transport.ts');
    transport = piped = new PipedTransport(child, settings.stopGraceMs);
  } else {
    transport = await httpTransport(spec);
  }
  const { Client } = await import('@modelcontextprotocol/sdk/client/index.js');
  const client = new Client({ name: 'conch', version: settings.clientVersion }, { capabilities: {} });
  const close = async () => {
    await client.close().catch(() => {});
    if (child) await child.stop(settings.stopGraceMs);
    await prepared?.release().catch(() => {});
  };
  // A child that dies during the handshake fails it at once, not at the timeout.
  const died = child?.exited.then((code) => ({ died: code })) ?? new Promise<never>(() => {});
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timedOut = new Promise<'timeout'>((done) => (timer = setTimeout(() => done('timeout'), spec.startupTimeoutMs)));
  const handshake = (async () => {
    await client.connect(transport, { timeout: spec.startupTimeoutMs });
    return await listAll(client, spec);
  })();
  try {
    const first = await Promise.race([handshake, died, timedOut]);
    if (first === 'timeout') {
      await close();
      return { ok: false, reason: `timed out: no answer within ${spec.startupTimeoutMs} ms (startupTimeoutMs)${strayLines(piped)}${stderrLines(child)}` };
    }
    if ('died' in first) {
      await close();
      return { ok: false, reason: exitReason(spec, first.died, child!) };
    }
    const ended = async () => {
      if (!child) return { how: '', stderr: '' };
      // The pipe can close a moment before the exit is reaped.
      const code = await Promise.race([child.exited, Bun.sleep(200).then(() => undefined)]);
      const how = code === undefined ? '' : code === null ? 'it was killed by a signal' : `it exited with code ${code}`;
      return { how, stderr: stderrLines(child) };
    };
    return { ok: true, connection: { client, tools: first.tools, refused: first.refused, close, ended } };
  } catch (error) {
    // The handshake failed while the child may be dying: let its exit code tell what happened.
    const code = child ? await Promise.race([child.exited, Bun.sleep(100).then(() => undefined)]) : undefined;
    await close();
    if (code !== undefined) return { ok: false, reason: exitReason(spec, code, child!) };
    // fetch's own words ("Unable to connect. Is the computer able to access the url?") name no
    // address; the origin is named, not the whole URL, which may carry a token in its path or query.
    const refused = spec.transport === 'http' && connectionCode(error);
    if (refused) return { ok: false, reason: `connection to ${new URL(spec.url).origin} failed (${refused})` };
    return { ok: false, reason: `${(error as Error).message}${stderrLines(child)}` };
  } finally {
    clearTimeout(timer);
    handshake.catch(() => {});
  }
}

type Started = { ok: true; child: PipedProcess; prepared: PreparedCommand | null } | { ok: false; reason: string };

async function startStdio(spec: StdioSpec, settings: ConnectSettings): Promise<Started> {
  const cwd = spec.cwd ? (isAbsolute(spec.cwd) ? spec.cwd : resolve(settings.workspace, spec.cwd)) : settings.workspace;
  // Only the basic variables and what the server's config names: never the parent's API keys.
  const tmpDir = settings.tmpDir();
  const env = { ...cleanEnv(settings.parentEnv, {}, { tmpDir }), ...spec.env };
  // Looked up before the start: where a PATH entry cannot be searched (another user's bin folder),
  // the sandbox's shell says "Permission denied" (126) for a program that simply is not there.
  if (!spec.command.includes('/') && !Bun.which(spec.command, { PATH: env.PATH ?? '' })) {
    return { ok: false, reason: `command not found: ${spec.command}` };
  }
  const argv = [spec.command, ...spec.args];
  let prepared: PreparedCommand | null = null;
  if (!settings.unrestricted) {
    try {
      prepared = await prepareSandboxed({
        ...settings.sandbox,
        // A toolchain cache of the servers' own: shell commands write theirs, and npx, uvx and bunx
        // run what a cache holds, so a command could have its code run as the server next time.
        ...(settings.sandbox.cacheDir ? { cacheDir: serverCache(settings.sandbox.cacheDir) } : {}),
        profile: effectiveProfile({ chosen: [settings.sandbox.profile], readOnly: spec.workspace !== 'write' }),
        // The repository's server may take the network away, never give back what the run turned
        // off (--no-network, a config's network: false): that is the user's say, not .mcp.json's.
        network: spec.project && !settings.sandbox.network ? false : (spec.network ?? settings.sandbox.network),
        command: '',
        argv,
        cwd,
        workspace: settings.workspace,
        tmpDir,
        ...(settings.placeholders ? { placeholders: settings.placeholders } : {}),
        // The program and the files its config names, wherever they live (a checkout under /tmp too).
        readOnlyPaths: [resolveProgram(spec.command, cwd, env.PATH), ...spec.args.filter(isAbsolute)],
      });
    } catch (error) {
      // Fail closed: a server that cannot be sandboxed does not start.
      return { ok: false, reason: `not started: ${(error as Error).message}` };
    }
  }
  try {
    const child = spawnPiped({ argv: prepared?.argv ?? argv, cwd, env, extraFds: prepared?.extraFds ?? [] });
    return { ok: true, child, prepared };
  } catch (error) {
    await prepared?.release().catch(() => {});
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') return { ok: false, reason: `command not found: ${spec.command}` };
    return { ok: false, reason: `could not start ${spec.command}: ${(error as Error).message}` };
  }
}

/** Beside the commands' cache (<cache>/sandbox), where no command can write: <cache>/mcp. */
function serverCache(commandsCache: string): string {
  return join(dirname(commandsCache), 'mcp');
}

/** The host path the shell inside will run for `command` (as it finds it on PATH), or the name. */
function resolveProgram(command: string, cwd: string, path: string | undefined): string {
  if (command.includes('/')) return resolve(cwd, command);
  return Bun.which(command, { PATH: path ?? '' }) ?? command;
}

async function httpTransport(spec: HttpSpec): Promise<Transport> {
  const { StreamableHTTPClientTransport } = await import('@modelcontextprotocol/sdk/client/streamableHttp.js');
  const { STDIO_DEFAULT_MAX_BUFFER_SIZE } = await import('@modelcontextprotocol/sdk/shared/stdio.js');
  const fetch = boundedFetch(spec.name, STDIO_DEFAULT_MAX_BUFFER_SIZE);
  return new StreamableHTTPClientTransport(new URL(spec.url), { requestInit: { headers: spec.headers }, fetch });
}

function exitReason(spec: ServerSpec, code: number | null, child: PipedProcess): string {
  // The sandbox runs the server through `sh -c 'exec "$@"'`: 127 is the shell's "not found".
  if (code === 127 && spec.transport === 'stdio') return `command not found: ${spec.command}${stderrLines(child)}`;
  return `crashed during start-up (${code === null ? 'killed by a signal' : `exit code ${code}`})${stderrLines(child)}`;
}

/** The commonest reason a server never answers: it logs to stdout, where only the protocol may go. */
function strayLines(transport: PipedTransport | null): string {
  const lines = transport?.strayOutput() ?? [];
  return lines.length ? `; it wrote to stdout what is not MCP (JSON-RPC), which a server must keep for the protocol (log to stderr instead):\n  ${lines.join('\n  ')}` : '';
}

function stderrLines(child: PipedProcess | null, count = 5): string {
  const lines = (child?.stderrTail() ?? '').trimEnd().split('\n').filter(Boolean).slice(-count);
  return lines.length ? `; its stderr ended with:\n  ${lines.join('\n  ')}` : '';
}
