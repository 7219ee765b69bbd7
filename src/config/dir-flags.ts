// A directory flag typed now that names nothing is the user's to fix, now: a missing --allow-write
// root makes every shell command of the run fail with a message only the model sees, and a missing
// --tools-dir (a typo) ran without those tools, the one warning easy to miss above the answer.
import { statSync } from 'node:fs';
import { resolve } from 'node:path';
import { ConfigError } from '../core/errors.ts';

export function checkDirFlag(flag: '--allow-write' | '--tools-dir', dirs: string[] | undefined, cwd: string): void {
  for (const dir of dirs ?? []) {
    const abs = resolve(cwd, dir);
    const st = statSync(abs, { throwIfNoEntry: false });
    if (st?.isDirectory()) continue;
    const what = st ? 'is not a directory' : 'does not exist';
    throw new ConfigError(`${flag} ${dir}: ${abs} ${what}; create the directory first, or leave the flag out.`, undefined, flag);
  }
}
