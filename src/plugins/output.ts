// Plugin code never writes to conch's stdout: that stream carries the answer, the one --json
// document or the ACP protocol. Whatever a plugin prints while it loads or runs (console.*, a direct
// process.stdout.write) goes to stderr instead, each line prefixed with the plugin's name. Which
// plugin is writing is known from an AsyncLocalStorage entered around its import and its execute,
// so it follows the plugin's timers and promises; conch's own writes are untouched.
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

/** Methods that print to stdout, and those that print to stderr (prefixed too, for one voice). */
const CONSOLE_METHODS = ['log', 'info', 'debug', 'dir', 'table', 'warn', 'error', 'trace'] as const;

function install(): void {
  if (installed) return;
  installed = true;
  const stderr = process.stderr;
  const stderrWrite = stderr.write.bind(stderr) as (chunk: string, ...rest: unknown[]) => boolean;
  // Lines of one plugin's raw writes may arrive in pieces: prefix only where a line starts.
  const midLine = new Set<string>();
  const prefixed = (name: string, text: string): string => {
    if (text === '') return text;
    const start = midLine.has(name) ? '' : `[${name}] `;
    if (text.endsWith('\n')) midLine.delete(name);
    else midLine.add(name);
    const body = text.endsWith('\n') ? text.slice(0, -1) : text;
    return `${start}${body.replaceAll('\n', `\n[${name}] `)}${text.endsWith('\n') ? '\n' : ''}`;
  };

  for (const method of CONSOLE_METHODS) {
    const original = console[method] as (...args: unknown[]) => void;
    console[method] = ((...args: unknown[]) => {
      const name = current.getStore();
      if (name === undefined) return original.apply(console, args);
      let text = formatWithOptions({ colors: false }, ...args);
      if (method === 'trace') text = `Trace: ${text}\n${(new Error().stack ?? '').split('\n').slice(2).join('\n')}`;
      if (midLine.has(name)) text = `\n${text}`;
      stderrWrite(prefixed(name, `${text}\n`));
    }) as never;
  }

  const stdout = process.stdout;
  const stdoutWrite = stdout.write;
  stdout.write = function (this: typeof stdout, chunk: unknown, ...rest: unknown[]) {
    const name = current.getStore();
    if (name === undefined) return (stdoutWrite as (...a: unknown[]) => boolean).call(this, chunk, ...rest);
    const encoding = typeof rest[0] === 'string' ? (rest[0] as BufferEncoding) : undefined;
    const text = typeof chunk === 'string' ? (encoding ? Buffer.from(chunk, encoding).toString() : chunk) : Buffer.from(chunk as Uint8Array).toString();
    return stderrWrite(prefixed(name, text), ...rest.filter((r) => typeof r === 'function'));
  } as typeof stdout.write;
}
