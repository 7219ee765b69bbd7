// Plugin code never prints to conch's stdout: that stream carries the answer, the one --json
// document or the ACP protocol. What a plugin logs with console.* while it loads or runs goes to
// stderr instead, each line prefixed with the plugin's name. Which plugin is logging is known from an
// AsyncLocalStorage entered around its import and its execute, so it follows the plugin's timers and
// promises; conch's own console calls are untouched.
//
// A plugin's process.stdout.write goes the same way. Wrapping it creates Bun's stdout stream (a few
// ms, and O_NONBLOCK on a piped stdout, see core/stdio.ts), so that happens only once a plugin is
// about to load (jiti's loading creates it anyway), and stdout's flags are put back as conch exits,
// for whoever writes to that pipe next. Only what writes to fd 1 itself (fs.writeSync(1), Bun.write(Bun.stdout)) is not caught.
import { AsyncLocalStorage } from 'node:async_hooks';
import { basename, dirname, extname } from 'node:path';
import type { formatWithOptions as FormatWithOptions } from 'node:util';
import { stderr } from '../core/stdio.ts';
import { loadLibc } from '../process/libc.ts';

const current = new AsyncLocalStorage<string>();
let installed = false;
/** Plugins whose last process.stdout.write left a line open: a line written in pieces gets one prefix. */
const midLine = new Set<string>();

/** Run `work` (and everything it schedules) as the plugin `name`. */
export function runAsPlugin<T>(name: string, work: () => T): T {
  install();
  return current.run(name, work);
}

const derived = new WeakMap<AbortSignal, Map<string, AbortSignal>>();

/**
 * `signal` as plugin `name` sees it. An abort listener runs inside conch's abort() call, outside the
 * plugin's context, so what it logged reached conch's stdout (a --json document with a line in
 * front); this signal is aborted as the plugin. One per signal and plugin, so a signal kept as a key
 * (the jobs plugin's runSignal) stays the same object across calls.
 */
export function pluginSignal(name: string, signal: AbortSignal): AbortSignal {
  // A context made by hand (a test, a host of the plugin's own) may have none to derive from.
  if (!(signal instanceof AbortSignal)) return signal;
  let byName = derived.get(signal);
  if (!byName) derived.set(signal, (byName = new Map()));
  let own = byName.get(name);
  if (own) return own;
  const controller = new AbortController();
  own = controller.signal;
  byName.set(name, own);
  if (signal.aborted) controller.abort(signal.reason);
  else signal.addEventListener('abort', () => current.run(name, () => controller.abort(signal.reason)), { once: true });
  return own;
}

/** A plugin's name for people: its file name, or its folder's for `name/index.ts`. */
export function pluginLabel(path: string): string {
  const file = basename(path, extname(path));
  return file === 'index' ? basename(dirname(path)) : file;
}

const CONSOLE_METHODS = ['log', 'info', 'debug', 'dir', 'table', 'warn', 'error', 'trace'] as const;

/** Before any plugin machinery (jiti itself creates Bun's stdout stream): stdout's flags as they are now. */
export function install(): void {
  if (installed) return;
  installed = true;
  // Required here, not imported: a run without plugins evaluates this module, and loading node:util costs 1.7 MiB.
  const formatWithOptions = (require('node:util') as { formatWithOptions: typeof FormatWithOptions }).formatWithOptions;
  // Bun's console.error writes to fd 2 without creating the process.stderr stream.
  const toStderr = console.error.bind(console);
  redirectStdoutWrites();
  for (const method of CONSOLE_METHODS) {
    const original = console[method] as (...args: unknown[]) => void;
    console[method] = ((...args: unknown[]) => {
      const name = current.getStore();
      if (name === undefined) return original.apply(console, args);
      let text = formatWithOptions({ colors: false }, ...args);
      if (method === 'trace') text = `Trace: ${text}\n${(new Error().stack ?? '').split('\n').slice(2).join('\n')}`;
      // A console line after an unfinished stdout write starts a line of its own.
      const open = midLine.delete(name) ? '\n' : '';
      toStderr(open + text.replace(/^/gm, `[${name}] `));
    }) as never;
  }
}

/** process.stdout.write from plugin code: to stderr, each line under the plugin's name. */
function redirectStdoutWrites(): void {
  const libc = loadLibc();
  const flags = libc?.statusFlags(1) ?? -1;
  const out = process.stdout;
  if (libc && flags >= 0) process.once('exit', () => libc.setStatusFlags(1, flags));
  const original = out.write as (...args: unknown[]) => boolean;
  out.write = function (this: typeof out, chunk: unknown, ...rest: unknown[]): boolean {
    const name = current.getStore();
    if (name === undefined) return original.apply(this, [chunk, ...rest]);
    const encoding = typeof rest[0] === 'string' ? (rest[0] as BufferEncoding) : undefined;
    const text = typeof chunk === 'string' ? (encoding ? Buffer.from(chunk, encoding).toString() : chunk) : Buffer.from(chunk as Uint8Array).toString();
    if (text) {
      const open = midLine.has(name);
      stderr.write(text.replace(/(^|\n)(?=.)/g, (match, newline: string, offset: number) => (offset === 0 && open ? match : `${newline}[${name}] `)));
      if (text.endsWith('\n')) midLine.delete(name);
      else midLine.add(name);
    }
    const done = rest.find((r) => typeof r === 'function') as ((error?: Error | null) => void) | undefined;
    if (done) queueMicrotask(() => done(null));
    return true;
  } as typeof out.write;
}
