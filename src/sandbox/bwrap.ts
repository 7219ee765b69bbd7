// bubblewrap: the argv for one command, built from a profile's mount description, and the reading of
// a failed probe. Pure functions; index.ts does the I/O.
import type { BwrapMount, SandboxProfile } from './profiles.ts';
import { isWithin } from '../core/paths.ts';

/**
 * Namespaces and process rules, the same for the probe and for every command. Not part of the
 * profile data on purpose: these are what make it a sandbox at all.
 * - --unshare-user with --cap-drop ALL: even when conch runs as root, the command gets a user
 *   namespace with no capabilities, so it cannot remount a read-only path writable.
 * - --disable-userns: no nested user namespace to win capabilities back (bubblewrap >= 0.8; the
 *   seccomp filter refuses CLONE_NEWUSER as well, for older versions).
 * - --unshare-pid with --die-with-parent: nothing the command starts outlives it or conch.
 * - --new-session: no controlling terminal, so no TIOCSTI typing into the user's terminal.
 */
export function namespaceArgs(options: { network: boolean; disableUserns: boolean }): string[] {
  return [
    '--unshare-user',
    ...(options.disableUserns ? ['--disable-userns'] : []),
    '--unshare-pid',
    '--unshare-ipc',
    '--unshare-uts',
    '--unshare-cgroup-try',
    ...(options.network ? [] : ['--unshare-net']),
    '--new-session',
    '--die-with-parent',
    '--cap-drop',
    'ALL',
  ];
}

export interface MountInputs {
  workspace: string;
  tmpDir: string;
  writableRoots: string[];
}

export interface ConcreteMount {
  type: BwrapMount['type'];
  path: string;
  /** bind/ro-bind only: the host path mounted at path (default: path). */
  source?: string;
  /** base mounts 0, pins 1, protected 2, hidden 3: at equal depth the higher rank goes on top. */
  rank: number;
  /**
   * tmpfs only: made read-only once every mount is in place (`--remount-ro` at the end), so deeper
   * mounts can still get their mount points inside it first.
   */
  readOnly?: boolean;
}

/** How many directories deep `path` is (`/` is 0): parents sort before their children. */
export const depth = (path: string) => (path === '/' ? 0 : path.split('/').length - 1);


/** The profile's mounts with variables filled in, except {protected} (see withProtection). */
export function baseMounts(profile: SandboxProfile, inputs: MountInputs): ConcreteMount[] {
  const out: ConcreteMount[] = [];
  for (const mount of profile.bwrap.mounts) {
    const paths =
      mount.path === '{workspace}' ? [inputs.workspace]
      : mount.path === '{tmpDir}' ? [inputs.tmpDir]
      : mount.path === '{writableRoots}' ? inputs.writableRoots
      : mount.path === '{protected}' ? []
      : [mount.path];
    const source =
      mount.source === '{workspace}' ? inputs.workspace : mount.source === '{tmpDir}' ? inputs.tmpDir : mount.source;
    for (const path of paths) out.push({ type: mount.type, path, rank: 0, ...(source ? { source } : {}) });
  }
  return out;
}

/** The type of the profile's {protected} entry (ro-bind in the shipped profiles). */
export function protectedMountType(profile: SandboxProfile): BwrapMount['type'] | null {
  return profile.bwrap.mounts.find((m) => m.path === '{protected}')?.type ?? null;
}

/** The mount that decides what `path` looks like inside: the deepest one containing it, last wins. */
export function coveringMount(mounts: ConcreteMount[], path: string): ConcreteMount | null {
  return covering(sortMounts(mounts), path);
}

function covering(sorted: ConcreteMount[], path: string): ConcreteMount | null {
  let best: ConcreteMount | null = null;
  for (const mount of sorted) if (isWithin(path, mount.path)) best = mount;
  return best;
}

export function writableAt(mounts: ConcreteMount[], path: string): boolean {
  return writableIn(mounts)(path);
}

/** writableAt for many paths over the same mounts (a command's protected names): sorted once. */
export function writableIn(mounts: ConcreteMount[]): (path: string) => boolean {
  const sorted = sortMounts(mounts);
  return (path) => {
    const cover = covering(sorted, path);
    return cover !== null && (cover.type === 'bind' || (cover.type === 'tmpfs' && !cover.readOnly));
  };
}

/**
 * writableIn for host paths: only where the covering mount shows the host's own path there (a
 * workspace, a writable root), not where it shows another (/tmp, which is the run's temp dir).
 */
export function hostWritableIn(mounts: ConcreteMount[]): (path: string) => boolean {
  const sorted = sortMounts(mounts);
  return (path) => {
    const cover = covering(sorted, path);
    return cover !== null && cover.type === 'bind' && (cover.source === undefined || cover.source === cover.path);
  };
}

/** Parents before children, so no mount hides a deeper one; stable within equal depth and rank. */
export function sortMounts(mounts: ConcreteMount[]): ConcreteMount[] {
  return mounts
    .map((mount, index) => ({ mount, index }))
    .sort((a, b) => depth(a.mount.path) - depth(b.mount.path) || a.mount.rank - b.mount.rank || a.index - b.index)
    .map(({ mount }) => mount);
}

/**
 * Add protected paths (existing ones and placeholders) and pins. A pin keeps the mode it already
 * has; it only makes the directory a mount point so it cannot be renamed or removed. `others`:
 * other runs' placeholders, bound if still there when bwrap starts (that run may end meanwhile).
 */
export function withProtection(
  base: ConcreteMount[],
  protectedPaths: string[],
  pins: string[],
  protectedType: BwrapMount['type'],
  others: string[] = [],
): ConcreteMount[] {
  const pinned = pins.map((path): ConcreteMount => ({
    type: writableAt(base, path) ? 'bind' : 'ro-bind',
    path,
    rank: 1,
  }));
  return [
    ...base,
    ...pinned,
    ...protectedPaths.map((path): ConcreteMount => ({ type: protectedType, path, rank: 2 })),
    ...others.map((path): ConcreteMount => ({ type: 'ro-bind-try', path, rank: 2 })),
  ];
}

export function mountArgs(mounts: ConcreteMount[]): string[] {
  const args: string[] = [];
  const remount: string[] = [];
  for (const mount of sortMounts(mounts)) {
    if (mount.type.includes('bind')) args.push(`--${mount.type}`, mount.source ?? mount.path, mount.path);
    else args.push(`--${mount.type}`, mount.path);
    if (mount.type === 'tmpfs' && mount.readOnly) remount.push('--remount-ro', mount.path);
  }
  return [...args, ...remount];
}

export interface BwrapOptions {
  bwrap: string;
  mounts: ConcreteMount[];
  network: boolean;
  disableUserns: boolean;
  /** The child's fd number carrying the seccomp program. */
  seccompFd: number;
  /** Where bwrap writes its JSON info (the sandbox's first process's pid), if anywhere. */
  infoFd?: number;
  /** Variables set inside (the toolchain cache's), over the command's environment. */
  env?: Record<string, string>;
}

export interface BwrapCommand extends BwrapOptions {
  cwd: string;
  command: string[];
}

/** Everything before --chdir: what stays the same from one command of a run to the next. */
export function bwrapOptions(spec: BwrapOptions): string[] {
  return [
    spec.bwrap,
    ...namespaceArgs(spec),
    '--seccomp',
    String(spec.seccompFd),
    ...(spec.infoFd === undefined ? [] : ['--info-fd', String(spec.infoFd)]),
    ...mountArgs(spec.mounts),
    ...Object.entries(spec.env ?? {}).flatMap(([name, value]) => ['--setenv', name, value]),
  ];
}

export function buildBwrapArgv(spec: BwrapCommand): string[] {
  return withCommand(bwrapOptions(spec), spec.cwd, spec.command);
}

/** bwrapOptions' argv with the working directory and the command. */
export function withCommand(options: string[], cwd: string, command: string[]): string[] {
  return [...options, '--chdir', cwd, '--', ...command];
}

export type ProbeFailure = 'apparmor' | 'userns' | 'proc' | 'other';

export const APPARMOR_USERNS_SYSCTL = '/proc/sys/kernel/apparmor_restrict_unprivileged_userns';

/**
 * Classify bwrap's complaint when the minimal sandbox did not start. appArmorRestricted: the
 * sysctl above reads 1 (Ubuntu 23.10+). Then the kernel hands bwrap a user namespace without
 * capabilities, so whichever privileged step comes first fails (uid map, loopback, /proc): any
 * permission error is that restriction.
 */
export function classifyProbeFailure(stderr: string, appArmorRestricted = false): ProbeFailure {
  if (appArmorRestricted && /Permission denied|Operation not permitted|namespace|uid map|RTM_NEWADDR/i.test(stderr)) return 'apparmor';
  if (/\bproc\b/i.test(stderr) && /mount/i.test(stderr)) return 'proc';
  if (/namespace|uid map|gid map|setgroups|unprivileged_userns|No permissions to creat/i.test(stderr)) return 'userns';
  return 'other';
}

export function probeFailureStatus(kind: ProbeFailure, bwrap: string, stderr: string): { detail: string; fix: string } {
  const said = stderr.trim().split('\n').slice(-3).join(' ').trim() || '(no message)';
  const optOut = 'or pass --unrestricted to run commands without a sandbox, deliberately';
  switch (kind) {
    case 'apparmor':
      return {
        detail:
          `bubblewrap (${bwrap}) is installed but this kernel restricts unprivileged user namespaces through AppArmor ` +
          `(kernel.apparmor_restrict_unprivileged_userns = 1, the default on Ubuntu 23.10+), so bwrap gets a namespace without the rights to set it up: ${said}`,
        fix:
          `Give bwrap an AppArmor profile that allows user namespaces (as root): ` +
          `\`printf 'abi <abi/4.0>,\\ninclude <tunables/global>\\nprofile bwrap ${bwrap} flags=(unconfined) {\\n  userns,\\n  include if exists <local/bwrap>\\n}\\n' > /etc/apparmor.d/bwrap && apparmor_parser -r /etc/apparmor.d/bwrap\`; ` +
          `or lift the restriction for every program: \`sysctl -w kernel.apparmor_restrict_unprivileged_userns=0\` ` +
          `(persist it with \`echo kernel.apparmor_restrict_unprivileged_userns=0 > /etc/sysctl.d/60-bwrap-userns.conf\`); ${optOut}.`,
      };
    case 'userns':
      return {
        detail: `bubblewrap (${bwrap}) is installed but cannot create a user namespace here: ${said}`,
        fix:
          'Allow unprivileged user namespaces: `sysctl -w kernel.unprivileged_userns_clone=1` (Debian kernels), ' +
          'or on Ubuntu 23.10+ `sysctl -w kernel.apparmor_restrict_unprivileged_userns=0` (or an AppArmor profile for bwrap); ' +
          `in a container, run it with user namespaces allowed (e.g. docker --security-opt seccomp=unconfined); ${optOut}.`,
      };
    case 'proc':
      return {
        detail: `bubblewrap (${bwrap}) cannot mount a fresh /proc here (common inside containers, where /proc is masked): ${said}`,
        fix: `Run the container with an unmasked /proc (docker --security-opt systempaths=unconfined, or podman --security-opt unmask=/proc/*), ${optOut}.`,
      };
    default:
      return {
        detail: `bubblewrap (${bwrap}) failed to start a minimal sandbox: ${said}`,
        fix: `Check that ${bwrap} works (\`${bwrap} --ro-bind / / --unshare-user --cap-drop ALL /bin/true\`), ${optOut}.`,
      };
  }
}

export function notInstalledStatus(): { detail: string; fix: string } {
  return {
    detail: 'bubblewrap (bwrap) is not installed or not on PATH; restricted mode needs it to run shell commands.',
    fix:
      'Install it: `apt-get install bubblewrap` (Debian/Ubuntu), `dnf install bubblewrap` (Fedora/RHEL), ' +
      '`pacman -S bubblewrap` (Arch), `apk add bubblewrap` (Alpine); or pass --unrestricted to run commands without a sandbox, deliberately.',
  };
}
