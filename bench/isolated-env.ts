// The environment a bench gives conch: its own home, config, state and cache under `base`, so no
// user setting or earlier run changes a figure; a placeholder key for the local model server.
import { join } from 'node:path';

export function isolatedEnv(base: string, extra: Record<string, string> = {}): Record<string, string> {
  return {
    PATH: process.env.PATH ?? '/usr/bin:/bin',
    HOME: base,
    XDG_CONFIG_HOME: join(base, 'config'),
    XDG_STATE_HOME: join(base, 'state'),
    XDG_CACHE_HOME: join(base, 'cache'),
    ANTHROPIC_API_KEY: 'bench',
    ...extra,
  };
}
