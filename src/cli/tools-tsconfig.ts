// The tsconfig.json `conch tools new` puts beside user plugins. conch gives plugins 'conch' and
// 'typebox' at run time, but an editor looking from ~/.config/conch/tools/ finds neither: this file
// maps both to the conch installed here, so completion and type errors work with no node_modules.
import { existsSync } from 'node:fs';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import pkg from '../../package.json' with { type: 'json' };
import { PACKAGE_ROOT } from '../core/package-root.ts';

/** While a tsconfig.json starts with this line it is conch's to rewrite (e.g. after conch moved). */
export const TSCONFIG_MARK = "// Written by `conch tools new` so editors (and tsc) know the types of 'conch' imports.";

export function pluginTsconfig(root = PACKAGE_ROOT): string {
  const modules = join(root, 'node_modules');
  // @types/bun is a dev dependency: without it, asking for it would be an error of its own.
  const bunTypes = existsSync(join(modules, '@types', 'bun'));
  const compilerOptions = {
    target: 'ES2022',
    module: 'Preserve',
    moduleResolution: 'bundler',
    lib: ['ES2023'],
    strict: true,
    noEmit: true,
    skipLibCheck: true,
    allowJs: true,
    allowImportingTsExtensions: true,
    resolveJsonModule: true,
    ...(bunTypes ? { typeRoots: [join(modules, '@types')], types: ['bun'] } : {}),
    paths: {
      conch: [join(root, pkg.exports['.'])],
      typebox: [join(modules, 'typebox')],
      'typebox/*': [join(modules, 'typebox', 'build', '*', 'index.d.mts')],
    },
  };
  const body = JSON.stringify({ compilerOptions, include: ['*.ts', '*.js', '*.mjs', '*/index.ts'] }, null, 2);
  return `${TSCONFIG_MARK}\n// It points at conch in ${root}; delete that first line to keep your own edits.\n${body}\n`;
}

/** Write (or refresh) `dir`/tsconfig.json unless the user owns it. */
export async function writePluginTsconfig(dir: string): Promise<{ path: string; written: boolean }> {
  const path = join(dir, 'tsconfig.json');
  const current = await readFile(path, 'utf8').catch(() => null);
  if (current !== null && !current.startsWith(TSCONFIG_MARK)) return { path, written: false };
  const next = pluginTsconfig();
  if (current !== next) await writeFile(path, next);
  return { path, written: true };
}
