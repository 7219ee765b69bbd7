// Importing one plugin file with jiti: TypeScript without a build step, `conch` and `typebox` mapped to
// conch's own module instances wherever the file lives, transpiled output cached on disk.
import { mkdirSync } from 'node:fs';
import { createRequire, isBuiltin } from 'node:module';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Jiti, JitiOptions } from 'jiti';
import { startTimer, type Timer } from '../core/duration.ts';
import { thrownText } from '../core/errors.ts';
import { confineTo, REFUSED_CODE, type Confinement } from './confine.ts';
import { jitiFile } from './bundled-copies.ts';
import { pluginTransform } from './transform.ts';
import { transpiledMs } from './transpiling.ts';

/** Every entry point typebox 1.x exports; a plugin may import any of them. */
const TYPEBOX_ENTRIES = ['', '/compile', '/error', '/format', '/guard', '/schema', '/system', '/type', '/value'];

const importers = new Map<string, Promise<Jiti>>();
const MAX_CONFINED = 4;

/**
 * One jiti instance per cache folder (and per confinement root), created on first use so a start
 * without plugins never pays for loading jiti. `cacheDir: false` turns the disk cache off
 * (benchmarks of the first run). With `confine` (a snapshot folder's real path), every import is
 * held inside that folder (confine.ts): the instance for project plugins.
 */
export function getImporter(cacheDir: string | false, confine?: string): Promise<Jiti> {
  const key = `${cacheDir === false ? '' : cacheDir}\0${confine ?? ''}`;
  let importer = importers.get(key);
  if (!importer) {
    importer = createImporter(cacheDir, confine);
    importers.set(key, importer);
    // Every edit of a project folder is a new snapshot: a long-lived host keeps only the latest few.
    const confined = [...importers.keys()].filter((k) => !k.endsWith('\0'));
    for (const stale of confined.slice(0, -MAX_CONFINED)) importers.delete(stale);
  }
  return importer;
}

async function createImporter(cacheDir: string | false, confine: string | undefined): Promise<Jiti> {
  const conch = await import('../tools/api.ts');
  const require = createRequire(import.meta.url);
  // Virtual modules rather than path aliases: the plugin gets the very module instances conch uses
  // (one TypeBox, one PolicyError class), resolved from conch's node_modules, not the plugin's folder.
  const virtualModules: Record<string, unknown> = { conch };
  for (const entry of TYPEBOX_ENTRIES) {
    Object.defineProperty(virtualModules, `typebox${entry}`, { enumerable: true, get: () => require(`typebox${entry}`) });
  }
  if (cacheDir !== false) {
    try {
      mkdirSync(cacheDir, { recursive: true, mode: 0o700 });
    } catch {
      cacheDir = false; // an unwritable cache only costs speed
    }
  }
  const options: JitiOptions = {
    // Bun's native import would run a plugin once natively and, when that throws (e.g. on the 'conch'
    // import it cannot resolve), a second time through jiti: side effects twice. Always transform.
    tryNative: false,
    // The cache is the transform's (transform.ts): one folder per transpiler.
    fsCache: false,
    transform: pluginTransform(cacheDir) as JitiOptions['transform'],
    // Re-evaluate on every load so an edited plugin is picked up by a long-lived host.
    moduleCache: false,
    // We read `default` ourselves; jiti's merging proxy would blur "no default export".
    interopDefault: false,
    virtualModules,
  };
  if (confine === undefined) return createGuardedJiti(options);
  const confinement = confineTo(confine, fileURLToPath(import.meta.url), virtualModules);
  // JITI_ALIAS, JITI_TSCONFIG_PATHS and JITI_NATIVE_MODULES from the environment would add ways out.
  return createGuardedJiti(
    { ...options, virtualModules: confinement.virtualModules, alias: {}, tsconfigPaths: false, nativeModules: [], transformModules: [] },
    confinement,
  );
}

type JitiCore = (id: string, options: JitiOptions, runtime: { onError: (e: unknown) => never; nativeImport: (id: string | URL) => Promise<unknown>; createRequire: typeof createRequire }) => Jiti;

/**
 * jiti, built like its own entry (jiti/lib/jiti.mjs) builds it, except for one thing: when its
 * resolver cannot find a bare package it falls back to Bun's require.resolve, and Bun then tries to
 * *install the package from npm* when no node_modules is above the plugin (auto-install). A plugin's
 * `import 'x'` must never download and run code at startup, so bare names go no further than jiti's
 * own node_modules lookup. A confinement replaces that guard with its stricter one.
 */
function createGuardedJiti(options: JitiOptions, confinement?: Confinement): Jiti {
  const require = createRequire(import.meta.url);
  const core = require(jitiFile('core', 'jiti.cjs')) as JitiCore;
  const guardedRequire = ((id: string | URL) => {
    const real = createRequire(id);
    const resolve = ((request: string, opts?: { paths?: string[] }) => {
      if (isBare(request)) {
        throw Object.assign(new Error(`Cannot find module '${request}' (conch plugins get only 'conch', 'typebox' and packages in a node_modules next to them)`), { code: 'MODULE_NOT_FOUND' });
      }
      return real.resolve(request, opts);
    }) as NodeJS.RequireResolve;
    resolve.paths = real.resolve.paths;
    return Object.assign((request: string) => real(request), real, { resolve });
  }) as typeof createRequire;
  return core(import.meta.url, options, {
    onError: (error) => {
      throw error;
    },
    nativeImport: confinement?.nativeImport ?? ((id) => import(String(id))),
    createRequire: confinement?.createRequire ?? guardedRequire,
  });
}

function isBare(request: string): boolean {
  if (request.startsWith('.') || request.startsWith('/') || /^[a-z]+:/i.test(request)) return false;
  return !isBuiltin(request);
}

export type ImportOutcome = { ok: true; module: Record<string, unknown> } | { ok: false; reason: string };

/**
 * Import one file, never throwing: a broken plugin becomes a reason naming line and column. It gets
 * `timeoutMs` of its own: time spent transpiling meanwhile (this file, its imports, other plugins
 * loading at once) is added on.
 */
export async function importPlugin(jiti: Jiti, path: string, timeoutMs: number): Promise<ImportOutcome> {
  let timer: Timer | undefined;
  let excused = transpiledMs();
  const deadline = new Promise<ImportOutcome>((resolve) => {
    const arm = (ms: number) => {
      timer = startTimer(ms, () => {
        const owed = transpiledMs() - excused;
        excused += owed;
        if (owed > 0) arm(owed);
        else resolve({ ok: false, reason: `did not finish loading within ${timeoutMs} ms (top-level await that never settles?)` });
      });
    };
    arm(timeoutMs);
  });
  const load = jiti.import<Record<string, unknown>>(path).then(
    (module): ImportOutcome => ({ ok: true, module: module && typeof module === 'object' ? module : { default: module } }),
    (error: unknown): ImportOutcome => ({ ok: false, reason: describeLoadError(error, path) }),
  );
  try {
    return await Promise.race([load, deadline]);
  } finally {
    timer?.clear();
  }
}

/**
 * The transpiler turns `import { Type } from 'conch'` into a binding `_conch` and each use into
 * `_conch.Type`, which the engine's message then quotes ("_conch.Type.Strin is not a function"):
 * said as the file has it. Only conch's own packages, the ones a plugin imports by name.
 */
function asWritten(message: string): string {
  return message.replace(/\b_(conch|typebox)\.(?=[A-Za-z_$])/g, '');
}

/**
 * Turn an import failure into one line: what went wrong and where in the plugin file. Syntax errors
 * carry `file:line:col` in the message; errors thrown at load carry it in the stack.
 */
export function describeLoadError(error: unknown, path: string): string {
  const err = error instanceof Error ? error : new Error(thrownText(error));
  if ((err as { code?: unknown }).code === REFUSED_CODE) return err.message;
  const message = err.message ?? String(error);
  const where = locate(message, path) ?? locate(err.stack ?? '', path);
  const firstLine = message
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l && !l.includes(path))[0] ?? message.trim();
  if (/^(ParseError|SyntaxError)\b/.test(firstLine) || err.name === 'SyntaxError') {
    // The parser saw the original source; its columns are 0-based, editors count from 1.
    const at = where ? ` at line ${where.line}, column ${where.column + 1}` : '';
    return `syntax error${at}: ${firstLine.replace(/^(ParseError|SyntaxError):\s*/, '')}`;
  }
  if (/Cannot find (module|package)/i.test(message)) return `cannot import: ${firstLine}`;
  // Stack positions come from the transpiled code: lines are kept, columns shift where types were
  // removed, so only the line is worth showing.
  return `threw while loading${where ? ` at line ${where.line}` : ''}: ${asWritten(firstLine)}`;
}

function locate(text: string, path: string): { line: number; column: number } | null {
  const index = text.indexOf(`${path}:`);
  if (index < 0) return null;
  const match = /^:(\d+):(\d+)/.exec(text.slice(index + path.length));
  return match ? { line: Number(match[1]), column: Number(match[2]) } : null;
}
