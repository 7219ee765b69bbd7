// What the sandbox is for this session, decided once: the effective settings the shell runs under,
// whether the sandbox is needed at all, and the label the run header and --json envelope show.
import type { Config } from '../config/types.ts';
import { probeSandbox, type SandboxSettings } from '../sandbox/index.ts';
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
  return { settings, unrestricted: config.unrestricted && !pinned, pinned };
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
