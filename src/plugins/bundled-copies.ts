// Which file of a plugin-loading package to load: the bundle's bytecode copy (src/build.ts writes
// it beside the bundle, named for the package's version) when conch runs bundled, else the
// package's own. Parsed from bytecode these load in a fraction of the time, on every first start.
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';

const require = createRequire(import.meta.url);

/** The installed version of a package conch depends on. */
export function packageVersion(name: string): string {
  return (require(`${name}/package.json`) as { version: string }).version;
}

/** The bundle's copy `<copy>-<version>.js`, if this run is bundled and has one. */
function bundled(copy: string, version: string): string | null {
  const path = join(import.meta.dir, `${copy}-${version}.js`);
  return existsSync(path) ? path : null;
}

/**
 * One of jiti's files. jiti's core (190 KB) from bytecode loads in ≈ 4 ms, from source ≈ 25 ms,
 * on every start with plugins; its Babel (1.5 MB) on every first start.
 */
export function jitiFile(copy: 'core' | 'babel', name: string): string {
  const dist = join(dirname(require.resolve('jiti/package.json')), 'dist');
  return bundled(`jiti-${copy}`, packageVersion('jiti')) ?? join(dist, name);
}

/** sucrase-lib.ts's exports: the bundle's copy, or the module itself when conch runs from source. Null: neither is there. */
export function sucraseFile(): string | null {
  const own = join(import.meta.dir, 'sucrase-lib.ts');
  return bundled('sucrase', packageVersion('sucrase')) ?? (existsSync(own) ? own : null);
}
