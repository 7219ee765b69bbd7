// The bundle's entry, which bin/conch runs: the bundle (src/build.ts) while nothing in src/ or
// package.json is newer than its stamp, the source otherwise, so an edit never runs stale code.
// This file is bundled alone and imports almost nothing: it runs before either.
import { lstatSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { PACKAGE_ROOT } from '../core/package-root.ts';
import { answeredVersion } from './version.ts';

/** Whether `path` (a directory: itself or anything below it) changed after `stamp`, as `find -newer` says. */
function newerThan(path: string, stamp: number): boolean {
  const stat = lstatSync(path, { throwIfNoEntry: false });
  if (!stat) return false;
  if (stat.mtimeMs > stamp) return true;
  return stat.isDirectory() && readdirSync(path).some((name) => newerThan(join(path, name), stamp));
}

const fresh = () => {
  const stamp = statSync(join(import.meta.dir, 'BUILT'), { throwIfNoEntry: false })?.mtimeMs;
  return stamp !== undefined && !newerThan(join(PACKAGE_ROOT, 'src'), stamp) && !newerThan(join(PACKAGE_ROOT, 'package.json'), stamp);
};

if (!fresh()) void import(join(PACKAGE_ROOT, 'src', 'cli', 'main.ts'));
// The version alone needs nothing of the bundle, which is the larger part of that start.
else if (!answeredVersion(process.argv.slice(2))) require(join(import.meta.dir, 'main.js'));
