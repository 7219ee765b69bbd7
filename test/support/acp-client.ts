// Drive `conch acp` the way an editor does: the official ACP SDK's client side, over the child's stdio.
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { Readable, Writable } from 'node:stream';
import {
  client,
  ndJsonStream,
  type ClientConnection,
  type RequestPermissionRequest,
  type RequestPermissionResponse,
  type SessionNotification,
} from '@agentclientprotocol/sdk';
import { CONCH, type Sandbox } from './cli.ts';

export interface AgentProcess {
  conn: ClientConnection;
  child: ChildProcessWithoutNullStreams;
  /** Every session/update received, in arrival order. */
  updates: SessionNotification[];
  /** Every permission request received, in arrival order. */
  permissions: RequestPermissionRequest[];
  stderr(): string;
  close(): Promise<void>;
}

export interface StartOptions {
  dirs: Sandbox;
  args: string[];
  env: Record<string, string>;
  /** Answer session/request_permission (default: reject). */
  onPermission?: (request: RequestPermissionRequest) => RequestPermissionResponse | Promise<RequestPermissionResponse>;
}

export function childEnv(dirs: Sandbox, extra: Record<string, string>): Record<string, string> {
  return {
    PATH: process.env.PATH ?? '/usr/bin:/bin',
    HOME: dirs.home,
    XDG_CONFIG_HOME: dirs.configHome,
    TMPDIR: process.env.TMPDIR ?? '/tmp',
    NO_COLOR: '1',
    ...extra,
  };
}

export function spawnAcp(dirs: Sandbox, args: string[], env: Record<string, string>): ChildProcessWithoutNullStreams {
  return spawn(CONCH, ['acp', ...args], { cwd: dirs.home, env: childEnv(dirs, env), stdio: 'pipe' });
}

export function startAgent(options: StartOptions): AgentProcess {
  const child = spawnAcp(options.dirs, options.args, options.env);
  let stderr = '';
  child.stderr.setEncoding('utf8');
  child.stderr.on('data', (chunk: string) => (stderr += chunk));
  const updates: SessionNotification[] = [];
  const permissions: RequestPermissionRequest[] = [];
  const app = client({ name: 'conch-test-editor' })
    .onNotification('session/update', ({ params }) => {
      updates.push(params);
    })
    .onRequest('session/request_permission', async ({ params }) => {
      permissions.push(params);
      if (options.onPermission) return options.onPermission(params);
      return { outcome: { outcome: 'selected', optionId: rejectOption(params) } };
    });
  const stream = ndJsonStream(
    Writable.toWeb(child.stdin) as WritableStream<Uint8Array>,
    Readable.toWeb(child.stdout) as unknown as ReadableStream<Uint8Array>,
  );
  const conn = app.connect(stream);
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  return {
    conn,
    child,
    updates,
    permissions,
    stderr: () => stderr,
    async close() {
      conn.close();
      child.stdin.end();
      const timer = setTimeout(() => child.kill('SIGKILL'), 5_000);
      await exited;
      clearTimeout(timer);
    },
  };
}

export function optionOfKind(request: RequestPermissionRequest, kind: string): string {
  const option = request.options.find((o) => o.kind === kind);
  if (!option) throw new Error(`no ${kind} option in ${JSON.stringify(request.options)}`);
  return option.optionId;
}

function rejectOption(request: RequestPermissionRequest): string {
  return optionOfKind(request, 'reject_once');
}

/** The updates of one session, without the session wrapper. */
export function updatesOf(agent: AgentProcess, sessionId: string) {
  return agent.updates.filter((n) => n.sessionId === sessionId).map((n) => n.update);
}

/** A raw line-level exchange, for input the SDK client would never send. */
export interface RawAgent {
  send(line: string): void;
  /** The next JSON message the agent writes whose `id` equals `id` (null for id-less errors). */
  response(id: number | string | null): Promise<any>;
  lines: string[];
  child: ChildProcessWithoutNullStreams;
  /** Ends stdin and resolves with the exit code (or the signal that killed it). */
  close(): Promise<number | string>;
}

export function startRaw(dirs: Sandbox, args: string[], env: Record<string, string>): RawAgent {
  const child = spawnAcp(dirs, args, env);
  const lines: string[] = [];
  const waiters: { id: number | string | null; resolve: (m: any) => void }[] = [];
  const taken = new Set<number>();
  let buffer = '';
  const settle = () => {
    for (const w of [...waiters]) {
      const index = lines.findIndex((l, i) => !taken.has(i) && JSON.parse(l).id === w.id && !('method' in JSON.parse(l)));
      if (index === -1) continue;
      taken.add(index);
      waiters.splice(waiters.indexOf(w), 1);
      w.resolve(JSON.parse(lines[index]!));
    }
  };
  child.stdout.setEncoding('utf8');
  child.stdout.on('data', (chunk: string) => {
    buffer += chunk;
    let nl;
    while ((nl = buffer.indexOf('\n')) !== -1) {
      lines.push(buffer.slice(0, nl));
      buffer = buffer.slice(nl + 1);
    }
    settle();
  });
  const exited = new Promise<number | string>((resolve) => child.once('exit', (code, signal) => resolve(code ?? String(signal))));
  return {
    lines,
    child,
    send: (line) => child.stdin.write(`${line}\n`),
    response(id) {
      return new Promise((resolve) => {
        waiters.push({ id, resolve });
        settle();
      });
    },
    async close() {
      child.stdin.end();
      const timer = setTimeout(() => child.kill('SIGKILL'), 5_000);
      const status = await exited;
      clearTimeout(timer);
      return status;
    },
  };
}
