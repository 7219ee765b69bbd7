// `conch --version` alone, answered before anything else loads (by the bundle's launcher, and by
// main.ts when run from source): it is the start scripts time.
import pkg from '../../package.json' with { type: 'json' };
import { stdout, stdoutLost } from '../core/stdio.ts';

export const VERSION_LINE = `conch ${pkg.version}`;

/** True when argv asked only for the version, which is then printed. */
export function answeredVersion(argv: readonly string[]): boolean {
  if (argv.length !== 1 || (argv[0] !== '--version' && argv[0] !== '-v')) return false;
  // Not process.stdout.write: Bun sets up the stdout stream lazily, at ~20 ms. Nor console.log,
  // which reports no failed write: a version that reached no one (`conch -v >&-`) is exit 1.
  stdout.write(`${VERSION_LINE}\n`);
  if (stdoutLost() && !process.exitCode) process.exitCode = 1;
  return true;
}
