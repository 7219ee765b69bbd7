// Where conch's own files live, by the XDG base-directory spec: config ($XDG_CONFIG_HOME/conch),
// state ($XDG_STATE_HOME: the session store) and cache ($XDG_CACHE_HOME/conch). A relative XDG
// value is invalid and ignored, as the spec says.
import { homedir } from 'node:os';
import { isAbsolute, join } from 'node:path';

type Env = Record<string, string | undefined>;

/** The config directory: $XDG_CONFIG_HOME/conch, else ~/.config/conch. */
export function configDirOf(env: Env, home: string): string {
  const xdg = env.XDG_CONFIG_HOME;
  return xdg && isAbsolute(xdg) ? join(xdg, 'conch') : join(home, '.config', 'conch');
}

/** $XDG_STATE_HOME, else ~/.local/state (a relative XDG value is invalid and ignored, as the spec says). */
export function stateHome(env: Env, home: string): string {
  return env.XDG_STATE_HOME && isAbsolute(env.XDG_STATE_HOME) ? env.XDG_STATE_HOME : join(home, '.local', 'state');
}

/** The interactive prompt's history: $XDG_STATE_HOME/conch/history. */
export function historyFileOf(env: Env, home: string): string {
  return join(stateHome(env, home), 'conch', 'history');
}

/**
 * The file a trim of the history writes before renaming it over `file` (cli/history.ts): it holds
 * the same records, so whatever hides the history hides these too (the glob: any process's).
 */
export const historyTempOf = (file: string, pid: number) => `${file}.${pid}.tmp`;
export const historyTempGlob = (file: string) => `${file}.*.tmp`;

/** CONCH_HISTORY=0 (or false, off, no); known before the config is read, so the prompt can read the file at once. */
export const historyOff = (value: string | undefined) => value !== undefined && /^(0|false|off|no)$/i.test(value);

export function cacheHome(env: Env, home: string): string {
  return env.XDG_CACHE_HOME && isAbsolute(env.XDG_CACHE_HOME) ? env.XDG_CACHE_HOME : join(home, '.cache');
}

/** conch's cache folder, $XDG_CACHE_HOME/conch (default ~/.cache/conch): where plugins keep rebuildable indexes. */
export function conchCacheDir(env: Env = process.env): string {
  return join(cacheHome(env, env.HOME || homedir()), 'conch');
}
