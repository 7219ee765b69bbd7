// The transform jiti runs every plugin file through: the cached code when there is some, else
// sucrase's fast path (plugins/sucrase.ts) where it is sure to give what Babel would, else Babel.
// A start whose plugins are all cached loads neither transpiler.
import { join } from 'node:path';
import { babelTransform, type TransformRequest, type TransformResult } from './babel.ts';
import { packageVersion } from './bundled-copies.ts';
import { sucraseTransform, type Shift } from './sucrase.ts';

export type { Shift };
import { readCached, writeCached } from './transpile-cache.ts';

/**
 * Raised whenever what the fast path takes or writes changes, so no entry an older conch cached
 * through it is read back (Babel's folder is named for jiti's version, whose Babel it is).
 */
const FAST_PATH_REVISION = 3;

/** The cache folders, one per transform; sucrase's first, the one most files are in. */
export function transformFolders(cacheDir: string): { sucrase: string; babel: string } {
  return {
    sucrase: join(cacheDir, `sucrase-${packageVersion('sucrase')}.r${FAST_PATH_REVISION}`),
    babel: join(cacheDir, `babel-jiti-${packageVersion('jiti')}`),
  };
}

/** jiti's `transform` option, caching in `cacheDir` (false: no cache; jiti's own cache stays off). */
export function pluginTransform(cacheDir: string | false): (req: TransformRequest) => TransformResult {
  const folders = cacheDir === false ? null : transformFolders(cacheDir);
  return (req) => {
    if (folders) {
      const hit = readCached(folders.sucrase, req) ?? readCached(folders.babel, req);
      if (hit !== null) return { code: hit };
    }
    const fast = sucraseTransform(req);
    if (fast.ok) {
      if (folders) writeCached(folders.sucrase, req, fast.code);
      return { code: fast.code };
    }
    const out = babelTransform(req);
    // jiti's own rule: a file Babel could not transpile is tried again next time.
    if (folders && !out.error && !out.code.includes('__JITI_ERROR__')) writeCached(folders.babel, req, out.code);
    return out;
  };
}

/**
 * The source map of the code that ran for `req` (the same route the import took), for finding
 * columns in the author's source; `shifts` are columns moved after the map was made. Null: none.
 */
export function sourceMapOf(req: TransformRequest): { mappings: string; shifts: Shift[] } | null {
  const fast = sucraseTransform(req, true);
  if (fast.ok) return fast.mappings === undefined ? null : { mappings: fast.mappings, shifts: fast.shifts };
  const out = babelTransform({ ...req, babel: { sourceFileName: req.filename, sourceMaps: 'inline' } });
  const inline = /\/\/# sourceMappingURL=data:application\/json;[^,]*base64,(\S+)\s*$/.exec(out.code ?? '');
  if (!inline) return null;
  return { mappings: (JSON.parse(Buffer.from(inline[1]!, 'base64').toString()) as { mappings: string }).mappings, shifts: [] };
}
