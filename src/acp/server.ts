// `conch acp`: the Agent Client Protocol on stdio, for editors (Zed, JetBrains, Neovim, Emacs).
// The official SDK speaks the protocol; this file only wires its handlers to conch sessions.
// stdout carries nothing but protocol messages; every diagnostic goes to stderr.
import { stat } from 'node:fs/promises';
import { isAbsolute, resolve } from 'node:path';
import { agent, ndJsonStream, PROTOCOL_VERSION, RequestError, type InitializeResponse } from '@agentclientprotocol/sdk';
import pkg from '../../package.json' with { type: 'json' };
import type { CliFlags } from '../config/types.ts';
import { AcpSession } from './session.ts';
import { replayUpdates } from './replay.ts';
import { listStored } from './stored.ts';
import { AcpGuard, type HostWatchdog } from './guard.ts';
import { loadLibc, POLLERR, POLLHUP, POLLOUT } from '../process/libc.ts';
import { stdinIsTTY } from '../core/stdio.ts';

/** How often, once stdin has ended mid-request, conch checks that the editor still reads stdout. */
const WATCH_MS = 200;

/** Said when stdin is a terminal. */
export const TERMINAL_NOTE =
  'this is the Agent Client Protocol server for editors (JSON-RPC on stdin and stdout); it waits for an editor now, and Ctrl-C or Ctrl-D ends it. To run a task here: conch "what to do"; to set up an editor, see "Use conch in your editor" in the README.';

const log = (message: string) => {
  process.stderr.write(`conch acp: ${message}\n`);
};

/** What conch can honestly promise an editor. */
export function initializeResponse(): InitializeResponse {
  return {
    protocolVersion: PROTOCOL_VERSION,
    agentInfo: { name: 'conch', title: 'conch', version: pkg.version },
    agentCapabilities: {
      // Sessions are stored (src/sessions), so an editor can reopen one, started here or in the shell.
      loadSession: true,
      // Both providers carry images; linked and embedded text resources are passed on as text.
      promptCapabilities: { image: true, audio: false, embeddedContext: true },
      // MCP servers from session/new are started for the session (src/acp/mcp-servers.ts).
      mcpCapabilities: { http: true, sse: false },
      sessionCapabilities: { close: {}, list: {} },
    },
    authMethods: [],
  };
}

/**
 * Take fd 1 for the protocol. Anything else that writes to stdout (a plugin's console.log, a
 * stray process.stdout.write) would corrupt the stream, so those writes are sent to stderr.
 * `onGone` is called once when a write fails (EPIPE: the editor quit or crashed mid-prompt); without
 * it the error is thrown uncaught, ending conch with a stack trace and without stopping its runs.
 */
function claimStdout(onGone: (error: Error) => void): { output: WritableStream<Uint8Array>; lost: (error: Error) => void } {
  let gone = false;
  const lost = (error: Error) => {
    if (gone) return;
    gone = true;
    onGone(error);
  };
  process.stdout.on('error', lost);
  const write = process.stdout.write.bind(process.stdout) as (chunk: Uint8Array, cb: (error?: Error | null) => void) => boolean;
  const toStderr = ((chunk: unknown, ...rest: unknown[]) => (process.stderr.write as (...a: unknown[]) => boolean)(chunk, ...rest)) as typeof process.stdout.write;
  process.stdout.write = toStderr;
  console.log = console.error;
  console.info = console.error;
  console.debug = console.error;
  const output = new WritableStream<Uint8Array>({
    write: (chunk) =>
      new Promise<void>((resolve, reject) => {
        write(chunk, (error) => {
          if (!error) return resolve();
          lost(error);
          reject(error);
        });
      }),
  });
  return { output, lost };
}

/**
 * Whether nobody reads fd 1 any more (the editor quit or crashed). Asked only once stdin has ended
 * with requests running: a silent command writes nothing, so no EPIPE would tell.
 */
function stdoutUnread(): boolean {
  const libc = loadLibc();
  if (!libc) return false;
  const revents = libc.pollNow(1, POLLOUT);
  return revents > 0 && (revents & (POLLERR | POLLHUP)) !== 0;
}

async function checkCwd(cwd: string): Promise<void> {
  if (!isAbsolute(cwd)) {
    throw RequestError.invalidParams({ cwd }, `cwd must be an absolute path, got '${cwd}'; send the project directory as an absolute path`);
  }
  let info;
  try {
    info = await stat(cwd);
  } catch {
    throw RequestError.invalidParams({ cwd }, `cwd '${cwd}' does not exist; send an existing project directory`);
  }
  if (!info.isDirectory()) throw RequestError.invalidParams({ cwd }, `cwd '${cwd}' is not a directory`);
}

/**
 * Paths on the command line mean what they mean where `conch acp` was started, as for every other
 * command; left relative, each session would resolve them against its own workspace instead.
 */
export function anchorFlags(flags: CliFlags, base: string): CliFlags {
  const all = (list: string[] | undefined) => list?.map((p) => resolve(base, p));
  return {
    ...flags,
    ...(flags.policy !== undefined ? { policy: resolve(base, flags.policy) } : {}),
    ...(flags.toolsDir ? { toolsDir: all(flags.toolsDir) } : {}),
    ...(flags.allowWrite ? { allowWrite: all(flags.allowWrite) } : {}),
  };
}

export interface ServeOptions {
  ephemeral?: boolean;
  /** Starts the watchdog (cli/watchdog.ts) when a session first imports plugins. */
  watchdog?: () => Promise<HostWatchdog>;
}

export async function serveAcp(given: CliFlags, options: ServeOptions = {}): Promise<void> {
  const flags = anchorFlags(given, process.cwd());
  // An editor talks over pipes; a person who typed `conch acp` to see what it does would otherwise
  // face a silent wait.
  if (stdinIsTTY()) log(TERMINAL_NOTE);
  // A signal the watchdog catches does what SIGTERM and SIGINT do here: close the connection.
  let stop = () => {};
  const guard = new AcpGuard(options.watchdog, () => stop());
  const { output, lost } = claimStdout((error) => {
    log(`the editor stopped reading (${(error as NodeJS.ErrnoException).code ?? error.message}); stopping every session`);
    stop();
  });
  const inflight = { count: 0, idle: Promise.resolve() as Promise<void>, wake: () => {} };
  const input = drainBeforeEnd(Bun.stdin.stream() as ReadableStream<Uint8Array>, inflight, () => {
    if (!stdoutUnread()) return false;
    lost(Object.assign(new Error('stdout closed'), { code: 'EPIPE' }));
    return true;
  });
  const sessions = new Map<string, AcpSession>();
  /** Count a request while it runs, so that stdin closing does not drop its answer. */
  const tracked = <A extends unknown[], R>(handler: (...args: A) => R | Promise<R>) => async (...args: A): Promise<R> => {
    if (inflight.count++ === 0) inflight.idle = new Promise((resolve) => (inflight.wake = resolve));
    try {
      return await handler(...args);
    } finally {
      // Let the SDK write the response before the stream may end.
      setTimeout(() => --inflight.count === 0 && inflight.wake(), 0);
    }
  };

  const find = (sessionId: string): AcpSession => {
    const session = sessions.get(sessionId);
    if (!session) {
      throw new RequestError(-32002, `unknown session '${sessionId}': create one with session/new first`, { sessionId });
    }
    return session;
  };

  const app = agent({ name: 'conch' })
    .onRequest('initialize', tracked(() => initializeResponse()))
    .onRequest('authenticate', () => {
      throw RequestError.invalidRequest(undefined, 'conch needs no authentication over ACP: it uses the API keys from its own config and environment');
    })
    .onRequest('session/new', tracked(async ({ params, client }) => {
      await checkCwd(params.cwd);
      const session = await AcpSession.open(params.cwd, flags, client, log, { ephemeral: options.ephemeral, mcpServers: params.mcpServers, guard });
      sessions.set(session.id, session);
      // After the response: the editor learns of the session before its commands.
      setTimeout(() => session.announceCommands(), 0);
      return { sessionId: session.id };
    }))
    .onRequest('session/load', tracked(async ({ params, client }) => {
      await checkCwd(params.cwd);
      if (sessions.has(params.sessionId)) {
        throw RequestError.invalidRequest({ sessionId: params.sessionId }, `session ${params.sessionId} is open already on this connection`);
      }
      const session = await AcpSession.open(params.cwd, flags, client, log, { load: params.sessionId, ephemeral: options.ephemeral, mcpServers: params.mcpServers, guard });
      sessions.set(session.id, session);
      // The whole history goes out as session/update notifications before the response.
      await session.send(replayUpdates(session.conversation));
      setTimeout(() => session.announceCommands(), 0);
      return {};
    }))
    .onRequest('session/list', tracked(({ params }) => ({ sessions: listStored(params.cwd ?? null) })))
    .onRequest('session/prompt', tracked(({ params, signal }) => find(params.sessionId).prompt(params.prompt, signal)))
    .onRequest('session/close', tracked(async ({ params }) => {
      const session = find(params.sessionId);
      sessions.delete(params.sessionId);
      await session.dispose();
      return {};
    }))
    .onNotification('session/cancel', ({ params }) => {
      const session = sessions.get(params.sessionId);
      if (session) session.cancel();
      else log(`session/cancel for unknown session '${params.sessionId}' ignored`);
    });

  const connection = app.connect(ndJsonStream(output, input));
  const onSignal = () => connection.close();
  stop = onSignal;
  process.on('SIGTERM', onSignal);
  process.on('SIGINT', onSignal);
  try {
    await connection.closed;
  } finally {
    process.off('SIGTERM', onSignal);
    process.off('SIGINT', onSignal);
    // The editor went away: stop every run (killing its processes) and remove per-session temp dirs.
    await Promise.all([...sessions.values()].map((s) => s.dispose().catch((e) => log(`closing a session failed: ${(e as Error).message}`))));
    sessions.clear();
  }
}

/**
 * stdin, except that its end waits until no request is running: a client that writes its requests
 * and closes its side (`printf … | conch acp`) still gets every answer.
 */
function drainBeforeEnd(
  source: ReadableStream<Uint8Array>,
  inflight: { count: number; idle: Promise<void> },
  readerGone: () => boolean,
): ReadableStream<Uint8Array> {
  const reader = source.getReader();
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      const { done, value } = await reader.read();
      if (!done) return controller.enqueue(value);
      // Requests read in this last chunk start on a later tick; give them that tick before counting.
      await new Promise((resolve) => setTimeout(resolve, 0));
      // A client that hung up entirely (stdout unread too) is gone: the running requests are stopped
      // through the connection closing, not waited for.
      while (inflight.count > 0 && !readerGone()) {
        await Promise.race([inflight.idle, new Promise((resolve) => setTimeout(resolve, WATCH_MS))]);
      }
      controller.close();
    },
    cancel: (reason) => reader.cancel(reason),
  });
}
