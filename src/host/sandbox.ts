// What the sandbox is for this session, decided once: the effective settings the shell runs under,
// whether the sandbox is needed at all, and the label the run header and --json envelope show.
import type { Config } from '../config/types.ts';
import { probeSandbox, type SandboxSettings } from '../sandbox/index.ts';
import { mkdirSync } from 'node:fs';
import { mkdirFailure } from '../core/errors.ts';
import { effectiveProfile } from '../sandbox/effective-profile.ts';
import { DEFAULT_PROFILE, READ_ONLY_PROFILE } from '../sandbox/profile-names.ts';
import type { Catalog } from '../tools/catalog.ts';
import { hiddenForCommands } from '../workspace/read-hidden.ts';

export interface SessionSandbox {
  settings: SandboxSettings;
  /** Commands run outside the sandbox (--unrestricted, and no policy that pins it). */
  unrestricted: boolean;
  /** --unrestricted was given, but a policy that denies paths keeps commands sandboxed. */
  pinned: boolean;
  /** Why shell commands run without the toolchain cache this time (it cannot be made). */
  warning?: string;
}

export async function sessionSandbox(config: Config, workspaceRoot: string): Promise<SessionSandbox> {
  // --unrestricted lifts the sandbox, but a policy that denies paths must still hold for the shell.
  const pinned = config.unrestricted && (config.policy.denied?.length ?? 0) > 0;
  const settings = {
    ...config.sandbox,
    profile: effectiveProfile({ chosen: [config.sandbox.profile], readOnly: config.tools.readOnly }),
    hidden: await hiddenForCommands(config, workspaceRoot),
  };
  // The allowlist needs the proxy, which only a session runs; off means off.
  if (!settings.network) delete settings.netAllow;
  const unrestricted = config.unrestricted && !pinned;
  const warning = unrestricted ? null : withoutUnusableCache(settings);
  return { settings, unrestricted, pinned, ...(warning && { warning }) };
}

/**
 * Probe the sandbox when the shell needs it and label what the run gets. Fails closed: with no
 * usable sandbox the bash tool leaves the catalog (the model is not offered a tool that can only
 * refuse) and the returned warning says why.
 */
export async function checkSandbox(config: Config, sandbox: SessionSandbox, catalog: Catalog): Promise<{ label: string; warning?: string }> {
  if (sandbox.unrestricted) return { label: 'none (unrestricted)' };
  if (!catalog.has('bash')) return { label: config.unrestricted ? 'none (unrestricted)' : 'not needed (no shell)' };
  const status = await probeSandbox();
  if (!status.ok) {
    const why = `no usable sandbox: ${status.detail}${status.fix ? ` ${status.fix}` : ''}`;
    catalog.remove('bash', `${why} (the user must fix this; shell commands are refused)`);
    return { label: `unavailable (${status.backend})`, warning: `${why} The bash tool is off for this run.` };
  }
  const readOnly = config.readOnlyWhy ? `read-only: ${config.readOnlyWhy} (--allow-home-writes to write)` : 'read-only';
  const { profile } = sandbox.settings;
  const traits = [profile === READ_ONLY_PROFILE ? readOnly : profile === DEFAULT_PROFILE ? null : `profile ${profile}`, !sandbox.settings.network ? 'no network' : sandbox.settings.netAllow ? `network allowlist (${sandbox.settings.netAllow.length})` : null].filter(Boolean);
  return { label: [status.backend, ...traits].join(', ') };
}

/**
 * The toolchain cache's directory made now, not at each command: one that cannot be (a home
 * directory nobody may write, as in CI with HOME=/nonexistent) would fail every command, so they
 * run without it, their home read-only as always, and the warning says why and what to set. Only
 * the directory: the first command checks it and makes the rest (sandbox/caches.ts), so a run that
 * runs none pays one mkdir.
 */
function withoutUnusableCache(settings: SandboxSettings): string | null {
  const dir = settings.cacheDir;
  if (!dir) return null;
  try {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    return null;
  } catch (error) {
    delete settings.cacheDir;
    return `cannot create the toolchain cache for shell commands, ${dir} (${mkdirFailure(error)}): set XDG_CACHE_HOME to a directory you can write. Shell commands run without it (npm, pip, cargo… cannot cache their downloads).`;
  }
}
