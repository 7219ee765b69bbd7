// Where transpiled plugins are cached, apart from the importer: skills keep their index beside it,
// and a start with no plugin files never loads the importer (jiti, confinement, node:module).
import { homedir } from 'node:os';
import { join } from 'node:path';

/** Private to the user, because a cached file is code we run. */
export function defaultCacheDir(env: Record<string, string | undefined> = process.env): string {
  const base = env.XDG_CACHE_HOME && env.XDG_CACHE_HOME.startsWith('/') ? env.XDG_CACHE_HOME : join(env.HOME || homedir(), '.cache');
  return join(base, 'conch', 'jiti');
}
