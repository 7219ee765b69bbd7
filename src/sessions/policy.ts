// A resumed run gets the policy in force now intersected with the one its session was recorded
// under: resuming can narrow, never widen. --unrestricted holds only if both the session and this
// run have it; a session started --read-only stays read-only whatever the flags say now.
import type { CliFlags, Config } from '../config/types.ts';
import { effectiveProfile } from '../sandbox/effective-profile.ts';
import { SessionError } from './dir.ts';
import type { PolicySnapshot } from './records.ts';

export function policySnapshot(config: Config): PolicySnapshot {
  return {
    unrestricted: config.unrestricted,
    readOnly: config.tools.readOnly,
    shell: config.tools.shell,
    filesystem: config.tools.filesystem,
    network: config.sandbox.network,
    netAllow: config.sandbox.netAllow ?? null,
    profile: effectiveProfile({ chosen: [config.sandbox.profile], readOnly: config.tools.readOnly }),
    only: config.tools.only,
    denied: [...new Set(config.tools.denied.map((d) => d.name))],
    writableRoots: [...config.workspace.writableRoots],
    policyFile: config.policy.file,
  };
}

/**
 * The --policy file a resumed run loads: the recorded one when none is given now. A different
 * file would replace the recorded rules rather than add to them, so that is refused.
 */
export function resumedPolicyFlag(flags: CliFlags, recorded: PolicySnapshot | null, resolvePath: (p: string) => string, id: string): CliFlags {
  if (!recorded?.policyFile) return flags;
  if (flags.policy === undefined) return { ...flags, policy: recorded.policyFile };
  if (resolvePath(flags.policy) !== recorded.policyFile) {
    throw new SessionError(
      `session ${id} was recorded under --policy ${recorded.policyFile}; a resumed run keeps that policy. Give the same --policy (or none), or start a new session.`,
    );
  }
  return flags;
}

/** Narrow `config` in place to what `recorded` allowed; returns what was narrowed, for the header. */
export function narrowToRecorded(config: Config, recorded: PolicySnapshot | null): string[] {
  if (!recorded) return [];
  const notes: string[] = [];
  if (config.unrestricted && !recorded.unrestricted) {
    config.unrestricted = false;
    notes.push('restricted (the session was recorded restricted; --unrestricted cannot widen it)');
  }
  if (recorded.readOnly && !config.tools.readOnly) {
    config.tools.readOnly = true;
    notes.push('read-only');
  }
  // The recorded profile is the earlier layer: the one in force now can only narrow it.
  const profile = effectiveProfile({ chosen: [recorded.profile, config.sandbox.profile], readOnly: config.tools.readOnly });
  if (profile !== config.sandbox.profile) {
    config.sandbox.profile = profile;
    if (!recorded.readOnly) notes.push(`${profile} sandbox profile`);
  }
  if (!recorded.shell && config.tools.shell) {
    config.tools.shell = false;
    notes.push('no shell');
  }
  if (!recorded.filesystem && config.tools.filesystem) {
    config.tools.filesystem = false;
    notes.push('no filesystem tools');
  }
  if (!recorded.network && config.sandbox.network) {
    config.sandbox.network = false;
    notes.push('no network');
  }
  // An allowlist narrows the network: a run without one (or with other hosts) keeps the recorded hosts only.
  const recordedAllow = recorded.netAllow ?? null;
  if (recordedAllow && config.sandbox.network) {
    const now = config.sandbox.netAllow;
    const kept = now ? now.filter((e) => recordedAllow.includes(e)) : [...recordedAllow];
    if (!now || kept.length !== now.length) {
      config.sandbox.netAllow = kept;
      notes.push(`network limited to ${kept.join(', ') || 'no host'}`);
    }
  }
  if (recorded.only) {
    const before = config.tools.only;
    config.tools.only = before ? before.filter((n) => recorded.only!.includes(n)) : [...recorded.only];
    if (!before || before.length !== config.tools.only.length) notes.push(`tools ${config.tools.only.join(',') || '(none)'}`);
  }
  for (const name of recorded.denied) {
    if (config.tools.denied.some((d) => d.name === name)) continue;
    config.tools.denied.push({ name, rule: 'session' });
    notes.push(`no ${name}`);
  }
  const dropped = config.workspace.writableRoots.filter((r) => !recorded.writableRoots.includes(r));
  if (dropped.length) {
    const keep = (roots: string[]) => roots.filter((r) => !dropped.includes(r));
    config.workspace.writableRoots = keep(config.workspace.writableRoots);
    config.sandbox.writableRoots = keep(config.sandbox.writableRoots);
    notes.push(`not writable: ${dropped.join(', ')}`);
  }
  return notes;
}
