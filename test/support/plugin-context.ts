// A ToolContext for plugin tests: a real workspace and a real shell, unrestricted mode.
import { realpath } from 'node:fs/promises';
import { isAbsolute, relative, resolve } from 'node:path';
import { PolicyError, type ExecOptions, type ExecResult, type ToolContext, type WorkspaceAccess } from '../../src/tools/define.ts';

/** Minimal containment: enough for plugins that ask the workspace before touching a path. */
function workspaceAt(root: string): WorkspaceAccess {
  return {
    root,
    async resolve(path: string, _mode: 'read' | 'write') {
      const abs = resolve(root, path);
      const rel = relative(root, abs);
      if (rel.startsWith('..') || isAbsolute(rel)) throw new PolicyError('workspace.outside', `${path} is outside the workspace`);
      return abs;
    },
    display(abs: string) {
      const rel = relative(root, abs);
      return rel.startsWith('..') || isAbsolute(rel) ? abs : rel || '.';
    },
  };
}

/** Runs /bin/sh -c in its own process group so a kill takes the whole command down. */
async function shellExec(root: string, command: string, options: ExecOptions & { signal: AbortSignal }): Promise<ExecResult> {
  const started = performance.now();
  const proc = Bun.spawn(['setsid', '/bin/sh', '-c', command], {
    cwd: options.cwd ? resolve(root, options.cwd) : root,
    stdout: 'pipe',
    stderr: 'pipe',
  });
  let cancelled = false;
  let timedOut = false;
  const kill = () => {
    try {
      process.kill(-proc.pid, 'SIGKILL');
    } catch {
      proc.kill('SIGKILL');
    }
  };
  const onAbort = () => {
    cancelled = true;
    kill();
  };
  if (options.signal.aborted) onAbort();
  else options.signal.addEventListener('abort', onAbort, { once: true });
  const timer = setTimeout(() => {
    timedOut = true;
    kill();
  }, options.timeoutMs ?? 120_000);
  let output = '';
  const pump = async (stream: ReadableStream<Uint8Array>) => {
    const decoder = new TextDecoder();
    for await (const bytes of stream) {
      const chunk = decoder.decode(bytes, { stream: true });
      output += chunk;
      options.onOutput?.(chunk);
    }
  };
  await Promise.all([pump(proc.stdout), pump(proc.stderr)]);
  const exitCode = await proc.exited;
  clearTimeout(timer);
  options.signal.removeEventListener('abort', onAbort);
  const killed = cancelled || timedOut;
  return {
    exitCode: killed ? null : exitCode,
    signal: killed ? 'SIGKILL' : null,
    output,
    truncated: false,
    totalBytes: Buffer.byteLength(output),
    logPath: null,
    timedOut,
    cancelled,
    durationMs: performance.now() - started,
  };
}

export async function makeContext(dir: string, extra: { signal?: AbortSignal; runSignal?: AbortSignal } = {}): Promise<ToolContext> {
  const root = await realpath(dir);
  const signal = extra.signal ?? new AbortController().signal;
  return {
    cwd: root,
    signal,
    workspace: workspaceAt(root),
    exec: (command, options = {}) => shellExec(root, command, { ...options, signal: options.signal ?? signal }),
    update: () => {},
    callId: 'test-call',
    runSignal: extra.runSignal,
  };
}
