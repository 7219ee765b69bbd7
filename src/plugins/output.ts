// Plugin code never prints to conch's stdout: that stream carries the answer, the one --json
// document or the ACP protocol. What a plugin logs with console.* while it loads or runs goes to
// stderr instead, each line prefixed with the plugin's name. Which plugin is logging is known from an
// AsyncLocalStorage entered around its import and its execute, so it follows the plugin's timers and
// promises; conch's own console calls are untouched.
//
// A direct process.stdout.write is not redirected: replacing it would create Bun's stdout stream,
// which costs ~15 ms per start and leaves a piped stdout non-blocking for whoever writes next
// (see core/stdio.ts). Plugins print with console.* or return their output.
import { AsyncLocalStorage } from 'node:async_hooks';
import { basename, dirname, extname } from 'node:path';
import { formatWithOptions } from 'node:util';

const current = new AsyncLocalStorage<string>();
let installed = false;

/** Run `work` (and everything it schedules) as the plugin `name`. */
export function runAsPlugin<T>(name: string, work: () => T): T {
  install();
  return current.run(name, work);
}

/** A plugin's name for people: its file name, or its folder's for `name/index.ts`. */
export function pluginLabel(path: string): string {
  const file = basename(path, extname(path));
  return file === 'index' ? basename(dirname(path)) : file;
}

const CONSOLE_METHODS = ['log', 'info', 'debug', 'dir', 'table', 'warn', 'error', 'trace'] as const;

function install(): void {
  if (installed) return;
  installed = true;
  // Bun's console.error writes to fd 2 without creating the process.stderr stream.
  const toStderr = console.error.bind(console);
  for (const method of CONSOLE_METHODS) {
    const original = console[method] as (...args: unknown[]) => void;
    console[method] = ((...args: unknown[]) => {
      const name = current.getStore();
      if (name === undefined) return original.apply(console, args);
      let text = formatWithOptions({ colors: false }, ...args);
      if (method === 'trace') text = `Trace: ${text}\n${(new Error().stack ?? '').split('\n').slice(2).join('\n')}`;
      toStderr(text.replace(/^/gm, `[${name}] `));
    }) as never;
  }
}
