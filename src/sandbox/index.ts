// The sandbox every shell command goes through in restricted mode (the bash tool and ctx.exec).
// Fails closed: when the platform sandbox is missing or unusable, prepareSandboxed throws
// SandboxUnavailableError with what is wrong and how to fix it; it never returns an unsandboxed argv.
// Policies are data in sandbox-profiles/ (profiles.ts); this file turns a request into an argv.
import { realpathSync } from 'node:fs';
import { relative } from 'node:path';
import { protectedMountType, withCommand } from './bwrap.ts';
import { prepareCache } from './caches.ts';
import { attachChannel, type Channel } from './channel.ts';
import type { NetworkProxy } from './proxy.ts';
import { RELAY_ENV, RELAY_PORT, relayCommand } from './relay.ts';
import { isWithin } from '../core/paths.ts';
import { directory, DirectoryMovedError, sameDirectory, SandboxRequestError } from './directories.ts';
import { CheckedDirectories, movedCheck } from './moved-check.ts';
import { gitDirAround } from '../core/git-dir.ts';
import { canonicalHidden, HiddenPathError } from './hidden.ts';
import { mountLayout } from './command-template.ts';
import { PlaceholderScope } from './placeholders.ts';
import { withPlaceholderExcludes } from './git-excludes.ts';
import { probe, probeKnown, type ProbeOptions, type SandboxStatus } from './probe.ts';
import { loadProfile, loadProtectedDefaults, SandboxProfileError, type SandboxProfile } from './profiles.ts';
import { holdProtected } from './plan-memo.ts';
import { enterHeld, heldAvailable, type Entered } from './held.ts';
import { defaultPatterns, patternFromGlob, planProtected, ProtectedPathError, type ProtectedPattern, type ProtectedPlan } from './protected-paths.ts';
import { openSeccompFd } from './seccomp-fd.ts';
import { userStateDir } from './user-dir.ts';
import type { SpawnOptions } from '../process/spawn.ts';
import { renderSeatbeltProfile, seatbeltArgv, SeatbeltPathError } from './seatbelt.ts';

/**
 * The host's TMPDIR, to hide, when it lies apart from everything a command is given. It holds the
 * per-user state directory (the user lock, placeholder records) and every run's directory (its
 * commands' /tmp, its logs): readable there, one project's command read another run's /tmp and
 * could flock the lock through a read-only descriptor. /tmp itself is the sandbox's own already; a
 * TMPDIR inside the workspace or a writable root keeps conch's own directories hidden (ownDirs); one
 * that contains the workspace or another mount is left visible rather than hide the user's files.
 */
function hostTemp(workspace: string, cwd: string, mounted: string[]): string[] {
  let temp: string;
  try {
    temp = realpathSync(userStateDir().path).replace(/\/[^/]+$/, '');
  } catch {
    return [];
  }
  if (temp === '' || temp === '/tmp') return [];
  const apart = [workspace, cwd, ...mounted].every((path) => !isWithin(path, temp) && !isWithin(temp, path));
  return apart ? [temp] : [];
}

export interface SandboxSettings {
  /** A name from listProfiles() (profile-names.ts); effective-profile.ts decides which. */
  profile: string;
  network: boolean;
  /** Extra writable roots (absolute), besides the workspace and temp. */
  writableRoots: string[];
  /** Extra protected globs, workspace-relative; added to the defaults, never replacing them. */
  protectedGlobs: string[];
  /**
   * Extra protected globs of a writable root, relative to it, by the root as in writableRoots: what
   * git runs from outside the .git of a repository there (its core.hooksPath folder). Added to the
   * defaults every root gets, never replacing them.
   */
  rootProtectedGlobs?: Record<string, string[]>;
  /**
   * Absolute paths a command must not read (read-denied roots, existing matches of read-deny
   * globs). Each one that exists when the command starts is hidden: a directory shows empty, a
   * file reads as empty, both read-only (symlinks are followed: their target is hidden). Concrete
   * paths only: a glob is not enforced for commands beyond the matches the caller passes, and a
   * path created later is not hidden. A mount deeper inside a hidden directory (the workspace, a
   * writable root) stays visible. Seatbelt (macOS) denies reading the contents of these paths.
   */
  hidden?: string[];
  /**
   * The per-user toolchain cache (caches.ts): writable inside, with npm_config_cache, CARGO_HOME …
   * pointing into it. Absent, or under a profile with "caches": false (read-only): no cache, nothing set.
   */
  cacheDir?: string;
  /**
   * The network allowlist (HOST[:PORT], *.domain, @preset), when the network is neither all nor
   * nothing. The host runs the proxy (request.proxy); this is what the header and records show.
   */
  netAllow?: string[];
  /**
   * conch's own directories for this run (host/run-dir.ts: logs, the proxy's socket; the temp dir
   * inside stays visible). With the per-user state directory (user-dir.ts: the seccomp program,
   * placeholder records, the lock) each is hidden from commands wherever they could write it: a
   * workspace that contains TMPDIR (conch started in /tmp, TMPDIR inside the project). Seatbelt
   * (macOS) denies reading and writing them, and renaming the directories that lead to one.
   */
  ownDirs?: string[];
}

export interface SandboxRequest extends SandboxSettings {
  /** The shell command, run as /bin/sh -c COMMAND inside. */
  command: string;
  /** Run this argv instead of /bin/sh -c COMMAND (`conch sandbox run`); command is then ignored. */
  argv?: string[];
  /** Canonical cwd inside the workspace. */
  cwd: string;
  /** Canonical workspace root. */
  workspace: string;
  /** Private temp dir for this run (writable inside). */
  tmpDir: string;
  /**
   * The run's placeholders, kept from its first command to its end (the caller closes it). Absent:
   * this command's placeholders are removed when it is released.
   */
  placeholders?: PlaceholderScope;
  /**
   * The run's allowlist proxy (proxy.ts). With network on, the command gets its own network
   * namespace whose only way out is this proxy, through the relay (relay.ts); network off wins.
   */
  proxy?: NetworkProxy;
  /**
   * Host paths the command must be able to read (an MCP server's program and script). Each existing
   * one the sandbox would hide (under the host's /tmp, which inside is the run's temp dir) becomes
   * visible read-only, with the top-level entry under /tmp around it (read-only-paths.ts says why).
   * Hidden paths win. Seatbelt hides nothing of the kind, so it needs none.
   */
  readOnlyPaths?: string[];
  /**
   * bubblewrap: the command takes its output as fd `outputFd` (PreparedCommand) and moves it onto
   * its own fds 1 and 2 before anything else, so that bwrap's first process in the sandbox, which
   * keeps its stdio until it exits after bwrap, does not hold the output pipe (process/merged-output.ts).
   */
  outputOnFd?: boolean;
}

export interface PreparedCommand {
  argv: string[];
  /** Extra fds for the child, as fd 3, 4, … */
  extraFds: number[];
  /** request.outputOnFd under bubblewrap: the fd the output pipe goes to (after extraFds and the channel). */
  outputFd?: number;
  /**
   * With outputFd: the fd after it, where bwrap writes its info (`{"child-pid": N, …}`, N being the
   * sandbox's first process), so the caller can settle that one process after the command.
   */
  infoFd?: number;
  /**
   * Network allowlist (request.proxy): the child needs one more stdio entry, 'pipe' (a socketpair),
   * right after extraFds; call this with the parent's end once spawned. Without it the command has
   * no network at all (its relay finds no channel), so a caller that does not know it fails closed.
   */
  channel?: (fd: number) => void;
  /**
   * A command in the run's held sandbox (held.ts): once its process group is gone and before its
   * output is read, whatever it left running goes. Replaces the settling of a sandbox of its own.
   */
  settle?: () => Promise<void>;
  /**
   * A command in the run's held sandbox: the process held.ts started ahead for it, when it fits
   * (for runProcess's SpawnOptions.ready); argv is what starts one as usual otherwise.
   */
  ready?: NonNullable<SpawnOptions['ready']>;
  /** Undo host-side preparation (placeholders, fds). Safe to call twice. */
  release(): Promise<void>;
  /** What the sandbox could not fully enforce for this command (workspace-relative), if anything. */
  notes?: string[];
  /**
   * The refusal a finished command's result stands for, when the sandbox refused it before it ran
   * (moved-check.ts: the workspace or a writable root was moved between the checks and the mounts).
   */
  refusal?: (exitCode: number | null, output: string) => DirectoryMovedError | null;
}

export type { ProbeOptions, SandboxStatus } from './probe.ts';
export { PlaceholderScope } from './placeholders.ts';
export { GIT_DIR_ROOT_NOTE } from './protected-paths.ts';
export { DirectoryMovedError, rememberDirectory, SandboxRequestError } from './directories.ts';

/** Probe once per process with a real minimal sandbox; cached (per PATH searched for bwrap). */
export async function probeSandbox(options: ProbeOptions = {}): Promise<SandboxStatus> {
  return (await probe(options)).status;
}

export class SandboxUnavailableError extends Error {
  constructor(readonly status: SandboxStatus) {
    super(`${status.detail}${status.fix ? ` ${status.fix}` : ''}`);
    this.name = 'SandboxUnavailableError';
  }
}


/**
 * A writable root is a tree of its own (a sibling repository): its .git, .conch, .env … are held
 * read-only as the workspace's are, and an absent one gets a placeholder there as in the workspace,
 * or a command could create DIR/.git/hooks or DIR/.env. The defaults and the root's own globs
 * (request.rootProtectedGlobs): configured globs are workspace-relative.
 */
function rootPlan(root: string, globs: string[] = []): ProtectedPlan {
  try {
    return planProtected(root, patterns(globs));
  } catch (error) {
    if (error instanceof ProtectedPathError) throw new ProtectedPathError(`in the writable root ${root}: ${error.message}`);
    throw error;
  }
}

const NO_ENV: Record<string, string> = Object.freeze({});

const patternsByGlobs = new Map<string, ProtectedPattern[]>();

/** The same array for the same globs, command after command (plan-memo.ts keys on it). */
function patterns(globs: string[]): ProtectedPattern[] {
  const key = globs.join('\0');
  let found = patternsByGlobs.get(key);
  // Configuration adds protection; it has no way to remove a default.
  if (!found) patternsByGlobs.set(key, (found = [...defaultPatterns(loadProtectedDefaults()), ...globs.map(patternFromGlob)]));
  return found;
}

/** Build the sandboxed argv for a command. Throws SandboxUnavailableError when probe fails. */
export async function prepareSandboxed(request: SandboxRequest): Promise<PreparedCommand> {
  // Known after the first command: no turn of the event loop to wait for it again.
  const probed = probeKnown() ?? (await probe());
  if (!probed.status.ok) throw new SandboxUnavailableError(probed.status);
  try {
    return prepare(request, probed.bwrap, probed.disableUserns);
  } catch (error) {
    if (
      error instanceof SandboxProfileError ||
      error instanceof ProtectedPathError ||
      error instanceof SeatbeltPathError ||
      error instanceof HiddenPathError
    ) {
      throw new SandboxRequestError(error.message);
    }
    throw error;
  }
}

/**
 * Runs "$@" as a shell would, 127 for a program not found and 126 for one that cannot be run, but
 * says so as conch: the wrapper's own 'sh: 1: exec: NAME: not found' names a shell the user never ran.
 * The lookup happens inside the sandbox, which sees the filesystem the program would.
 */
const EXEC_ARGV = [
  'case $1 in',
  "*/*) if [ ! -e \"$1\" ]; then printf 'conch: %s: no such file or directory\\n' \"$1\" >&2; exit 127;",
  "elif [ -d \"$1\" ]; then printf 'conch: %s: is a directory\\n' \"$1\" >&2; exit 126;",
  "elif [ ! -x \"$1\" ]; then printf 'conch: %s: permission denied (not executable)\\n' \"$1\" >&2; exit 126; fi ;;",
  "*) command -v -- \"$1\" >/dev/null 2>&1 || { printf 'conch: %s: command not found\\n' \"$1\" >&2; exit 127; } ;;",
  'esac',
  'exec "$@"',
].join('\n');

/** The profile's fixed paths where a command sees something else than the host's (/proc, /dev, /tmp). */
/**
 * Whether a command sees the host's `file` as it is: not hidden, and not under a mount that replaces
 * what is there (/proc, the run's /tmp …) unless inside a tree bound back at its own path there (a
 * workspace under /tmp).
 */
function seenAsIs(file: string, profile: SandboxProfile, hidden: string[], bound: string[]): boolean {
  if (canonicalHidden(hidden).some((path) => isWithin(file, path))) return false;
  return !replacedInside(profile).some((path) => isWithin(file, path)) || bound.some((tree) => isWithin(file, tree));
}

function replacedInside(profile: SandboxProfile): string[] {
  return profile.bwrap.mounts
    .filter((m) => !m.path.startsWith('{') && (m.type === 'dev' || m.type === 'proc' || m.type === 'tmpfs' || (m.source !== undefined && m.source !== m.path)))
    .map((m) => m.path);
}

function prepare(request: SandboxRequest, bwrap: string | undefined, disableUserns: boolean): PreparedCommand {
  const checked = new CheckedDirectories();
  try {
    return prepareChecked(request, bwrap, disableUserns, checked);
  } catch (error) {
    checked.close();
    throw error;
  }
}

function prepareChecked(request: SandboxRequest, bwrap: string | undefined, disableUserns: boolean, checked: CheckedDirectories): PreparedCommand {
  const profile = loadProfile(request.profile);
  const check = (path: string, real: string, what: string) => checked.add({ path, real, what }, sameDirectory(path, real, what, request.placeholders));
  const workspace = directory(request.workspace, 'workspace', 'run conch from an existing directory');
  check(request.workspace, workspace, 'workspace');
  const tmpDir = directory(request.tmpDir, 'temp dir', 'create it before running commands');
  const cwd = request.cwd === request.workspace ? workspace : directory(request.cwd, 'working directory', 'pass an existing directory inside the workspace', false);
  const writableRoots: string[] = [];
  for (const root of request.writableRoots) {
    writableRoots.push(directory(root, 'writable root', "create it, or remove it from --allow-write or the config's write.writableRoots"));
    check(root, writableRoots.at(-1)!, 'writable root');
  }
  // argv goes through the shell's exec as well, so a missing program is 127 exactly as in the bash tool.
  const command =
    request.argv && request.argv.length > 0 ? ['/bin/sh', '-c', EXEC_ARGV, 'sh', ...request.argv] : ['/bin/sh', '-c', request.command];
  const protectedPatterns = patterns(request.protectedGlobs);
  const cacheDir = profile.caches === false ? undefined : request.cacheDir;
  const cacheEnv = cacheDir ? prepareCache(cacheDir) : NO_ENV;
  const cacheRoots = cacheDir ? [directory(cacheDir, 'sandbox cache', 'remove it; conch makes it again')] : [];

  const proxy = request.network ? request.proxy : undefined;
  // A command that could write the seccomp program conch hands the next one, or plant a link where
  // conch writes a log, would reach past the sandbox.
  const own = [userStateDir().path, ...(request.ownDirs ?? [])];
  if (!bwrap) {
    if (proxy) {
      throw new SandboxRequestError('the network allowlist (--allow-net, sandbox.network.allow) needs bubblewrap (Linux) for now; on macOS use the network on or --no-network.');
    }
    // macOS: Seatbelt matches protected names by rule, so there is nothing to prepare on disk.
    const text = renderSeatbeltProfile({
      profile,
      workspace,
      tmpDir,
      writableRoots: [...writableRoots, ...cacheRoots],
      protected: protectedPatterns,
      rootProtected: defaultPatterns(loadProtectedDefaults()),
      rootExtra: Object.fromEntries(writableRoots.map((root, index) => [root, (rootGlobs(index) ?? []).map(patternFromGlob)])),
      // Decided per command, as bubblewrap's plan is: a root may become one between two commands.
      gitDirRoots: [workspace, ...writableRoots].filter((root) => gitDirAround(root) !== null),
      hidden: canonicalHidden(request.hidden ?? []),
      own: canonicalHidden(own),
      network: request.network && !request.netAllow,
    });
    const withEnv = Object.keys(cacheEnv).length ? ['/usr/bin/env', ...Object.entries(cacheEnv).map(([k, v]) => `${k}=${v}`), ...command] : command;
    checked.close();
    return { argv: seatbeltArgv(text, withEnv), extraFds: [], release: async () => {} };
  }

  const rootGlobs = (index: number) => request.rootProtectedGlobs?.[request.writableRoots[index]!] ?? request.rootProtectedGlobs?.[writableRoots[index]!];
  const rootPlans = writableRoots.map((root, index) => rootPlan(root, rootGlobs(index)));
  const checkClash = (plan: ProtectedPlan) => {
    for (const [index, root] of writableRoots.entries()) {
      // A root its own plan holds whole (it is a git dir) is mounted read-only, not refused.
      const whole = rootPlans[index]!.targets.some((t) => t.path === root);
      const clash = [plan, ...rootPlans].flatMap((p) => p.targets.map((t) => t.path)).find((target) => isWithin(root, target) && !(whole && target === root));
      if (clash) {
        throw new SandboxRequestError(
          `writable root ${root} lies inside the protected path ${isWithin(clash, workspace) ? `"${relative(workspace, clash) || '.'}"` : clash}; protected paths stay read-only. ` +
            'Remove it from --allow-write or the config\'s write.writableRoots.',
        );
      }
    }
  };

  const hostHidden = hostTemp(workspace, request.cwd, [...writableRoots, ...cacheRoots, ...(request.readOnlyPaths ?? [])]);
  const layout = mountLayout(profile, {
    workspace,
    tmpDir,
    writableRoots,
    cacheRoots,
    readOnlyPaths: request.readOnlyPaths ?? [],
    hidden: [...(request.hidden ?? []), ...hostHidden],
    own,
  });
  const { needed } = layout;
  const scope = request.placeholders ?? new PlaceholderScope();
  let seccomp: ReturnType<typeof openSeccompFd> | null = null;
  let channel: Channel | null = null;
  let entered: Entered | null = null;
  let begun = false;
  const releaseNow = () => {
    checked.close();
    entered?.done();
    seccomp?.close();
    seccomp = null;
    channel?.close();
    channel = null;
    if (!begun) return;
    begun = false;
    scope.end();
    if (!request.placeholders) scope.close();
  };
  const release = async () => releaseNow();

  try {
    scope.begin();
    begun = true;
    // Existing paths too: one may be another run's placeholder, which this command then uses as well.
    const { plan, held } = holdProtected(workspace, protectedPatterns, scope, needed, checkClash);
    const rootHeld = scope.hold(rootPlans.flatMap((p) => p.targets).filter((t) => needed(t.path))).map((t) => t.path);
    // Another run's placeholders where this one's commands could remove them (its workspace inside
    // this one): unlinked here, the mounts over them in that run's sandbox would go. Read afresh for
    // each command, so a run starting later is covered from this run's next command on (new options:
    // a new held sandbox); one already running then is not (placeholder-records.ts).
    const others = scope.othersInside(layout.hostWritable).filter((path) => !held.includes(path) && !rootHeld.includes(path));
    // git in the sandbox ignores this run's placeholders (git-excludes.ts).
    const env = withPlaceholderExcludes(cacheEnv, { workspace, tmpDir, placeholders: scope.files(), visible: (file) => seenAsIs(file, profile, [...(request.hidden ?? []), ...hostHidden, ...own], [workspace, ...writableRoots]) });
    seccomp = openSeccompFd();
    // The checked directories follow the seccomp fd (4, 5 …), for the shell to compare with what is
    // mounted; a profile without /proc inside has no way to, and keeps the host's check alone, as
    // does a directory that shows something else at its path (a hidden one, a root the profile leaves out).
    if (!profile.bwrap.mounts.some((m) => m.type === 'proc' && m.path === '/proc')) checked.close();
    checked.filter((dir) => layout.shows(dir.real));
    const channelFd = 4 + checked.fds.length;
    const oneShotFd = request.outputOnFd ? channelFd + (proxy ? 1 : 0) : undefined;
    const options = layout.options({
      bwrap,
      protectedPaths: [...held, ...rootHeld],
      pins: plan.pins.filter(needed),
      othersPlaceholders: others,
      // An allowlist without its proxy (a caller that runs none) gets no network at all.
      network: request.network && !proxy && !request.netAllow,
      disableUserns,
      seccompFd: 3,
      ...(oneShotFd === undefined ? {} : { infoFd: oneShotFd + 1 }),
      env: proxy ? commandEnv(env) : env,
    });
    // The run's held sandbox (held.ts), for a command of a run whose output conch takes on a fd of
    // its own; the relay's channel (an allowlist) is made per command, so that keeps its own sandbox.
    entered = request.placeholders && oneShotFd !== undefined && !proxy && heldAvailable() ? enterHeld(request.placeholders, options, bwrap, env) : null;
    // The held sandbox's mounts were made and checked when it started, and it serves a command only
    // while every path it mounted is still the inode it was (held.ts): nothing to compare here.
    if (entered) checked.close();
    const moved = checked.fds.length ? movedCheck(checked.dirs, protectedMountType(profile) === 'ro-bind' ? [...held, ...rootHeld] : []) : null;
    const outputFd = entered ? 4 + entered.fds.length : oneShotFd;
    // On the command's first line, so that a syntax error anywhere is reported as before, with the
    // same line numbers (it then reaches fd 2, which conch reads as well). The relay (perl) holds
    // every fd it is given until the command has started, so with it the check goes in front of it.
    const closing = entered ? entered.fds.map((_, i) => ` ${4 + i}>&-`).join('') : '';
    const first = `${moved && !proxy ? moved.script : ''}${outputFd === undefined ? '' : `exec 1>&${outputFd} 2>&${outputFd} ${outputFd}>&-${closing}; `}`;
    const shell = first ? [command[0]!, command[1]!, `${first}${command[2]}`, ...command.slice(3)] : command;
    const relayed = proxy ? relayCommand(shell) : null;
    const started = relayed && moved ? ['/bin/sh', '-c', moved.relayScript(channelFd), 'sh', ...relayed] : (relayed ?? shell);
    const prepared: PreparedCommand = entered
      ? { argv: entered.argv(cwd, shell), extraFds: [seccomp.fd, ...entered.fds], release, outputFd: outputFd!, settle: entered.settle, ready: entered.ready(cwd, shell) }
      : {
          argv: withCommand(options, cwd, started),
          extraFds: [seccomp.fd, ...checked.fds],
          release,
          ...(outputFd === undefined ? {} : { outputFd, infoFd: outputFd + 1 }),
          ...(moved ? { refusal: moved.refusal } : {}),
        };
    if (plan.notes.length) prepared.notes = plan.notes;
    if (proxy) prepared.channel = (fd) => (channel = attachChannel(fd, () => proxy.connect()));
    return prepared;
  } catch (error) {
    releaseNow();
    throw error;
  }
}

const withProxy = new WeakMap<Record<string, string>, Record<string, string>>();

/** The cache's variables and the proxy's, the same object from one command to the next. */
function commandEnv(cacheEnv: Record<string, string>): Record<string, string> {
  let env = withProxy.get(cacheEnv);
  if (!env) withProxy.set(cacheEnv, (env = Object.freeze({ ...cacheEnv, ...proxyEnv(), ...RELAY_ENV })));
  return env;
}

/** Where the relay listens, under every name tools read; the sandbox's own loopback bypasses it. */
export function proxyEnv(): Record<string, string> {
  const url = `http://127.0.0.1:${RELAY_PORT}`;
  const env: Record<string, string> = {};
  for (const name of ['HTTP_PROXY', 'HTTPS_PROXY', 'ALL_PROXY']) env[name] = env[name.toLowerCase()] = url;
  env.NO_PROXY = env.no_proxy = 'localhost,127.0.0.1,::1';
  return env;
}
