// jiti's own transform (Babel): what every plugin file went through before the sucrase fast path,
// and still the one for whatever that path does not take (plugins/transform.ts decides).
import { createRequire } from 'node:module';
import { jitiFile } from './bundled-copies.ts';
import { transpiling } from './transpiling.ts';

/** What jiti's transform gets (its own options plus the file) and gives back. */
export interface TransformRequest {
  source: string;
  filename: string;
  ts?: boolean;
  async?: boolean;
  jsx?: boolean | object;
  interopDefault?: boolean;
  babel?: Record<string, unknown>;
}

export interface TransformResult {
  code: string;
  error?: unknown;
}

let babel: ((opts: TransformRequest) => TransformResult) | undefined;

/**
 * Babel, loaded on first use (a cached plugin never needs it): the bundle's bytecode copy of jiti's
 * Babel (src/build.ts, patched by babel-patch.ts) when conch runs bundled, else jiti's own.
 */
export function babelTransform(opts: TransformRequest): TransformResult {
  // Babel's first load counts as transpiling too.
  return transpiling(() => {
    if (!babel) babel = createRequire(import.meta.url)(jitiFile('babel', 'babel.cjs')) as typeof babel;
    return babel!(opts);
  });
}
