// Confinement for project plugins: their imports may reach only the snapshot folder (a private copy
// of .conch/tools whose bytes were trusted), conch's virtual modules and built-ins. Everything else a
// module graph can pull in (a relative path out of the folder, an absolute path, a package.json
// "imports" alias, a package from any node_modules, a data: URL) was never hashed, so it is refused.
//
// jiti resolves an import in three places, and each is guarded here:
//   1. the virtualModules lookup, which sees every specifier that is not a built-in: non-relative
//      ones are decided there (jiti's own resolver would otherwise walk node_modules and follow
//      package.json "imports" before anything else could intervene);
//   2. the require that jiti creates for every module it evaluates, whose resolve is jiti's fallback
//      for a relative path its resolver could not find, and whose creation is the last point before a
//      resolved file runs: a file outside the folder is refused there even if it resolved;
//   3. native import/require, which would let Bun resolve the file's own imports unguarded: only
//      built-ins (and JSON files inside the folder) load natively, and jiti then transpiles the rest
//      itself, through these same guards.
import { createRequire, isBuiltin } from 'node:module';
import { dirname, extname, isAbsolute, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

export const CONFINED_RULE = "project plugins may import only files inside .conch/tools, 'conch', 'typebox' and built-ins";
export const REFUSED_CODE = 'CONCH_IMPORT_REFUSED';

/** A refused import: its message is the whole user-facing explanation. */
export class ImportRefused extends Error {
  readonly code = REFUSED_CODE;
}

export interface Confinement {
  /** The virtual modules, behind a lookup that refuses every specifier leaving the folder. */
  virtualModules: Record<string, unknown>;
  createRequire: typeof createRequire;
  nativeImport: (id: string | URL) => Promise<unknown>;
}

/**
 * Guards for a jiti instance whose plugins must stay inside `root` (a real path). `host` is the file
 * the top-level jiti instance is created for (it imports nothing itself).
 */
export function confineTo(root: string, host: string, virtualModules: Record<string, unknown>): Confinement {
  const inside = (path: string) => {
    const rel = relative(root, resolve(path));
    return rel !== '' && rel !== '..' && !rel.startsWith('../') && !isAbsolute(rel);
  };
  const shown = (path: string) => `.conch/tools/${relative(root, path)}`;
  const refuse = (spec: string, from: string | null, reason: string) =>
    new ImportRefused(`cannot import '${clip(spec)}'${from ? ` in ${shown(from)}` : ''}: ${reason}; ${CONFINED_RULE}`);

  const guarded = new Proxy(virtualModules, {
    has(target, key) {
      if (typeof key !== 'string' || key in target) return key in target;
      if (key.startsWith('./') || key.startsWith('../') || key === '.' || key === '..') return false;
      if (isAbsolute(key)) {
        if (inside(key)) return false;
        throw refuse(key, importerOnStack(root), 'an absolute path outside .conch/tools');
      }
      if (isBuiltin(key)) return false;
      throw refuse(key, importerOnStack(root), reasonFor(key));
    },
  });

  const confinedRequire = ((id: string | URL) => {
    const parent = typeof id === 'string' && !id.startsWith('file:') ? id : fileURLToPath(id);
    if (parent !== host && !inside(parent)) {
      throw new ImportRefused(`cannot load ${parent}: it is outside .conch/tools; ${CONFINED_RULE}`);
    }
    const real = createRequire(id);
    const from = parent === host ? null : parent;
    /** The file a request names, checked to be inside the folder; null for a built-in. */
    const target = (request: string): string | null => {
      if (isBuiltin(request)) return null;
      const path = request.startsWith('file:') ? fileURLToPath(request) : request;
      if (path.startsWith('./') || path.startsWith('../') || path === '.' || path === '..') {
        const file = resolve(dirname(parent), path);
        if (!inside(file)) throw refuse(request, from, 'it resolves outside .conch/tools');
        return file;
      }
      if (isAbsolute(path)) {
        if (!inside(path)) throw refuse(request, from, 'an absolute path outside .conch/tools');
        return path;
      }
      throw refuse(request, from, reasonFor(request));
    };
    const resolveIn = ((request: string) => {
      if (target(request) === null) return real.resolve(request);
      // No `paths` option: a relative request resolves from its own module, nowhere else.
      const found = real.resolve(request);
      if (!isBuiltin(found) && !inside(found)) throw refuse(request, from, 'it resolves outside .conch/tools');
      return found;
    }) as NodeJS.RequireResolve;
    resolveIn.paths = () => null;
    const load = (request: string) => {
      const file = target(request);
      if (file === null) return real(request);
      // Native loading of code would let Bun resolve that file's imports unguarded; jiti transpiles
      // scripts itself when this refuses. JSON is data.
      if (extname(file) !== '.json') throw refuse(request, from, 'only scripts jiti transpiles and JSON files are loaded');
      return real(resolveIn(request));
    };
    return Object.assign(load, real, { resolve: resolveIn });
  }) as typeof createRequire;

  const nativeImport = async (id: string | URL) => {
    const spec = String(id);
    if (isBuiltin(spec)) return import(spec);
    // jiti falls back to transpiling a script whose native import is refused.
    throw refuse(spec, null, spec.startsWith('data:') ? 'data: URLs are not loaded' : 'only built-ins are loaded natively');
  };

  return { virtualModules: guarded, createRequire: confinedRequire, nativeImport };
}

function reasonFor(spec: string): string {
  if (spec.startsWith('#')) return 'package.json "imports" aliases are not followed';
  if (/^[a-z][a-z0-9+.-]*:/i.test(spec)) return 'URL imports are not loaded';
  return 'packages (node_modules) are not loaded';
}

function clip(spec: string): string {
  return spec.length > 80 ? `${spec.slice(0, 77)}...` : spec;
}

/**
 * The snapshot file whose code is importing right now, for the message only: the innermost stack
 * frame inside the folder. (The virtualModules lookup is not told which module asks.)
 */
function importerOnStack(root: string): string | null {
  const stack = new Error().stack ?? '';
  const at = stack.indexOf(`${root}/`);
  if (at < 0) return null;
  const match = /^[^:)\n]+/.exec(stack.slice(at));
  return match ? match[0] : null;
}
