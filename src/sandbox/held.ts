// One bubblewrap sandbox per run, entered by each command. bwrap's setup is most of a sandboxed
// command's cost: every protected bind re-reads /proc/self/mountinfo (bench/sandbox.ts measures
// it), a dozen of them per command. Here the run's mounts are set up once, by a sandbox that holds
// them (its only process, its pid 1, waits on a pipe from conch), and each command joins its namespaces with
// nsenter and starts in a light bwrap of its own: a new user namespace with no capabilities, the
// seccomp filter, a session of its own, over the held mount tree. Mounts made in the held namespace
// are locked in the command's, so it can neither remove nor remount them.
//
// What a sandbox per command gave, and how this keeps it:
// - The same mounts. A held sandbox is started from a command's own bwrap options and serves only
//   commands whose options are those same ones, while every host path it mounted is still the
//   inode it was: a path renamed or replaced on the host would detach or move its mount in the
//   held namespace (an editor that saves .env by renaming over it), so such a change starts a new one.
// - Nothing outlives its command. Whatever a command leaves running is re-parented within the
//   sandbox's pid namespace to the holder, its pid 1; after each command, any child found there ends
//   the whole sandbox (the next command starts another), before the output is read. No process
//   inside can signal pid 1, so no command can end the sandbox under the next one.
// - One command at a time. A command that comes while another runs in the held sandbox gets a
//   sandbox of its own, as before; so do a run's first two commands: the held one starts with the
//   second, so that a run of one command pays nothing for it.
// - The namespaces are joined through a descriptor of the sandbox's first process's /proc directory,
//   opened once it is started, never by pid again: a pid reused by another process is never joined.
//
// The next command's process is started ahead, while the sandbox is idle (after a command's
// teardown and settling, nothing of it left): nsenter and the light bwrap, set up up to bwrap's
// --block-fd, where it waits before it reads the seccomp filter, changes to the cwd, starts its
// session or runs anything. A command that passes every check above (the same checks, in the same
// place: enterHeld) and has the cwd and environment it was prepared with is written to it, as
// `exec /bin/sh -c …`, the argv a command started as usual has; any other command starts as usual,
// and the prepared one is let go with no script, so that it runs nothing and ends by itself (killed,
// its bwrap's child would stay a zombie of the holder's and end the sandbox). Why that is safe,
// though the prepared process joins the namespaces and copies the held mount tree before the
// checks of the command it will run:
// - A failed check never reaches it: the sandbox is stopped, which kills its holder and with it
//   the prepared process, before the command starts elsewhere; it is never given a command.
// - Its mounts are the held namespace's, which no process changes while it is idle (nothing of the
//   last command is left in it), and a change from the host shows in the checks, which compare that
//   namespace, not the copy; a held sandbox replaced takes its prepared process with it.
// - While it waits it has no capabilities (bwrap drops them first) and nothing else runs in the
//   sandbox. A command running while a let-go one ends has no hold on it: they are in sibling user
//   namespaces (ptrace and /proc/PID/mem need an ancestor's capabilities), and the filter
//   refuses ptrace anyway. One that kills it only ends the sandbox (a child left with the holder).
//   One that stops it (a signal needs only the same user) keeps it there, not the holder's child:
//   once it is found stopped the sandbox serves no other command (usable), and stop continues its nsenter.
// Where nsenter is missing or the held sandbox fails its first command, every command gets its own
// sandbox as before. CONCH_SANDBOX_PER_COMMAND=1 asks for that (to compare, or to rule this out);
// CONCH_DEBUG_HELD=1 prints why a held sandbox did not start, and at exit how many commands were
// entered and how many of them ran in a prepared process.
import { closeSync, openSync, readlinkSync } from 'node:fs';
import { childrenOf, devEntries, identity, mountedPaths, mountPointsIn, mountPointsOf, mountTable, type Identity } from './held-state.ts';
import { ESRCH, loadLibc } from '../process/libc.ts';
import { trackGroup, type SpawnOptions } from '../process/spawn.ts';
import { settleOrphans } from '../process/orphans.ts';
import { openSeccompFd } from './seccomp-fd.ts';
import { PreparedCommands, preparedCounts } from './held-prepared.ts';
import type { PlaceholderScope } from './placeholders.ts';

export { preparedCounts };

/** The namespaces a command joins, in nsenter's flag names; user first, which owns the rest. */
const NAMESPACES = [
  ['user', '--user'],
  ['mnt', '--mount'],
  ['pid', '--pid'],
  ['net', '--net'],
  ['uts', '--uts'],
  ['cgroup', '--cgroup'],
] as const;

const START_MS = 5000;
const GONE_MS = 2000;

let nsenter: string | null | undefined;

function findNsenter(): string | null {
  if (nsenter === undefined) nsenter = Bun.which('nsenter', { PATH: '/usr/bin:/bin:/usr/sbin:/sbin' }) ?? null;
  return nsenter;
}

/** Whether commands may share a held sandbox on this machine (util-linux's nsenter, Linux, libc). */
export function heldAvailable(): boolean {
  return process.platform === 'linux' && process.env.CONCH_SANDBOX_PER_COMMAND !== '1' && !broken && findNsenter() !== null && loadLibc() !== null;
}

/** Set when held sandboxes fail here (a first command, or three starts): every command gets its own from then on. */
let broken = false;

export interface Entered {
  /** The command's argv: nsenter into the held namespaces, then the light bwrap. */
  argv(cwd: string, command: string[]): string[];
  /** For the child as fds 4 and 5 (its command closes them first): the sandbox's /proc directory, its user namespace. */
  fds: number[];
  /** After the command's process group is gone, before its output is read: anything left goes. */
  settle(): Promise<void>;
  /** The command is over (called once). */
  done(): void;
  /**
   * For runProcess (SpawnOptions.ready): the process prepared for the command, given it, when it
   * was prepared for this cwd and environment; null to start one as usual.
   */
  ready(cwd: string, command: string[]): NonNullable<SpawnOptions['ready']>;
}

class Held {
  readonly key: string;
  /** Stopped from outside (the run's end, a change) rather than failed. */
  stopped = false;
  /** Failed to start because a mount was not where the options put it (held.start says why). */
  moved = false;
  private state: 'starting' | 'ready' | 'dead' = 'starting';
  private busy = false;
  private proc: Bun.Subprocess | null = null;
  private untrack: (() => void) | null = null;
  private init = 0;
  private nsFds: number[] = [];
  /** The write end of the holder's stdin, which it waits on. */
  private input = -1;
  private nsArgs: string[] = [];
  private mounts: string | null = null;
  private dev: string | null = null;
  private prefix: string[] = [];
  private readonly identities: [string, Identity][];
  /** The next command's process, started ahead while this sandbox is idle (held-prepared.ts). */
  private readonly prepared = new PreparedCommands();

  constructor(
    readonly options: string[],
    private readonly bwrap: string,
    private readonly env: string[],
  ) {
    this.key = options.join('\0');
    // Taken before bwrap mounts anything: a change in between shows as a difference later.
    this.identities = mountedPaths(options).map((path) => [path, identity(path)]);
  }

  matches(options: string[]): boolean {
    if (options !== this.options && options.join('\0') !== this.key) return false;
    for (const [path, before] of this.identities) if (identity(path) !== before) return false;
    return true;
  }

  usable(): boolean {
    // A child of the holder's: a command's leftover, re-parented to pid 1 (null: the holder is gone).
    if (this.state !== 'ready' || this.busy || childrenOf(this.init) !== '') return false;
    // One let go that a command stopped: it would stay, the sandbox goes with it. (One still ending
    // is no risk: stopped later, by the command that then runs beside it, it is caught at the next.)
    if (this.prepared.oneLetGoStopped()) return false;
    // A command can rename a directory it can write that has a mount point below it: the run's
    // temp dir holds the ones bwrap made for paths under /tmp (the workspace at /tmp/a/ws, the temp
    // dir's own path). A sandbox of its own would have the mounts where they belong again; this one
    // would run every later command in whatever was put in their place (or fail to chdir there).
    return mountTable(this.nsFds[0]!) === this.mounts && devEntries(this.nsFds[0]!) === this.dev;
  }

  get idle(): boolean {
    return !this.busy;
  }

  get starting(): boolean {
    return this.state === 'starting';
  }

  async start(): Promise<void> {
    const libc = loadLibc()!;
    const pipes = [libc.pipe({ nonBlocking: true }), libc.pipe({ nonBlocking: true }), libc.pipe()];
    const [info, ready, input] = pipes;
    if (!info || !ready || !input) {
      for (const pair of pipes) for (const fd of pair ?? []) closeSync(fd);
      throw new Error('no pipe for the held sandbox');
    }
    // conch's end of the holder's stdin is only ever closed (close-on-exec: no other child holds it).
    this.input = input[1];
    let seccomp: ReturnType<typeof openSeccompFd>;
    try {
      seccomp = openSeccompFd();
    } catch (error) {
      for (const fd of [info[0], info[1], ready[0], ready[1], input[0]]) closeSync(fd);
      this.stop();
      throw error;
    }
    // The holder waits on conch's pipe: when conch goes, however it goes, the sandbox goes too. It
    // is the namespace's pid 1 (--as-pid-1), which no process inside can signal: a command could
    // otherwise kill it (the same user) as it exits, and the sandbox would die under the next one.
    // The options' --disable-userns would keep each command's bwrap from making its user namespace;
    // the seccomp filter refuses CLONE_NEWUSER to the commands all the same.
    const options = this.options.filter((arg) => arg !== '--disable-userns');
    const infoAt = options.indexOf('--info-fd');
    if (infoAt >= 0) options.splice(infoAt, 2);
    const argv = [...options, '--as-pid-1', '--info-fd', '4', '--chdir', '/', '--', '/bin/sh', '-c', 'echo; read _'];
    try {
      // An empty environment: the sandbox's processes are readable from inside (/proc/1/environ).
      this.proc = Bun.spawn(argv, { env: {}, detached: true, stdio: [input[0], ready[1], 'ignore', seccomp.fd, info[1]] });
    } catch (error) {
      closeSync(info[0]);
      closeSync(ready[0]);
      this.stop();
      throw error;
    } finally {
      seccomp.close();
      closeSync(input[0]);
      closeSync(info[1]);
      closeSync(ready[1]);
    }
    // Never what keeps conch running: the run's end stops it, conch's exit ends it (its pipe).
    this.proc.unref();
    this.untrack = trackGroup(this.proc.pid);
    void this.proc.exited.then(() => this.stop());
    try {
      const until = Date.now() + START_MS;
      const buffer = Buffer.alloc(1024);
      /** Read `fd` until `done` says what came is enough. */
      const readUntil = async (fd: number, done: (text: string) => boolean, what: string) => {
        let text = '';
        while (!done(text)) {
          const n = libc.read(fd, buffer);
          if (n > 0) text += buffer.toString('latin1', 0, n);
          else if (n === 0 || Date.now() > until || this.state === 'dead') throw new Error(`the held sandbox did not start: ${what} (${text})`);
          else await Bun.sleep(1);
        }
        return text;
      };
      const text = await readUntil(info[0], (t) => /"child-pid":\s*\d+/.test(t), 'bwrap gave no child pid');
      this.init = Number(/"child-pid":\s*(\d+)/.exec(text)![1]);
      // The holder's line: bwrap has put every mount in place and run it.
      await readUntil(ready[0], (t) => t.includes('\n'), 'the holder said nothing');
      if (childrenOf(this.init) !== '') throw new Error('the held sandbox started more than its holder');
      // The first process's /proc directory, as the child's fd 4: a descriptor stays with that
      // process, where a pid could be another's once it is gone.
      this.nsFds.push(openSync(`/proc/${this.init}`, 'r'));
      // The user namespace to join is the one that owns the mounts. Unprivileged, bwrap makes two:
      // the first maps the user to root there (mounting /dev/pts needs it) and owns every other
      // namespace; the sandbox's processes run in a second one inside it, which owns nothing. As
      // the child's fd 5; the command's bwrap maps the user back to itself (--uid, --gid).
      const mnt = openSync(`/proc/${this.init}/ns/mnt`, 'r');
      try {
        const owner = libc.namespaceOwner(mnt);
        if (owner < 0) throw new Error('NS_GET_USERNS failed');
        this.nsFds.push(owner);
      } finally {
        closeSync(mnt);
      }
      for (const [name, flag] of NAMESPACES) {
        if (name === 'user') {
          this.nsArgs.push(`${flag}=/proc/self/fd/5`);
          continue;
        }
        // Joining conch's own namespace again (the network when it is on) is no change: left out.
        if (name !== 'mnt' && name !== 'pid' && readlinkSync(`/proc/self/ns/${name}`) === readlinkSync(`/proc/${this.init}/ns/${name}`)) continue;
        this.nsArgs.push(`${flag}=/proc/self/fd/4/ns/${name}`);
      }
      // Opened by pid: make sure that pid was still the sandbox's, now that the descriptors are held.
      if (childrenOf(this.init) !== '') throw new Error('the held sandbox ended while starting');
      this.prefix = [
        findNsenter()!,
        ...this.nsArgs,
        '--preserve-credentials',
        '--',
        this.bwrap,
        '--unshare-user',
        // A fresh IPC namespace each, as a sandbox of its own gave: a System V segment or queue
        // outlives every process, and so would pass from one command to the next.
        '--unshare-ipc',
        '--uid',
        String(process.getuid!()),
        '--gid',
        String(process.getgid!()),
        '--dev-bind',
        '/',
        '/',
        '--new-session',
        '--die-with-parent',
        '--cap-drop',
        'ALL',
        '--seccomp',
        '3',
        ...this.env,
      ];
      await this.verify();
      this.mounts = mountTable(this.nsFds[0]!);
      this.dev = devEntries(this.nsFds[0]!);
      if (this.mounts === null || this.dev === null) throw new Error('the held sandbox has no mount table or /dev to read');
      // The table later commands are held to is read only now, after the sandbox's first command:
      // meanwhile the run's other commands (the one that started it runs in a sandbox of its own)
      // may have renamed a directory above one of its mount points, as a command inside it could.
      // Each mount must be where the options put it, or the sandbox is not what they describe.
      const points = mountPointsIn(this.mounts);
      const moved = mountPointsOf(options).find((point) => !points.has(point));
      if (moved !== undefined) {
        this.moved = true;
        throw new Error(`the held sandbox has no mount at ${moved}`);
      }
      this.state = 'ready';
    } catch (error) {
      const stoppedMeanwhile = this.state === 'dead';
      this.stop();
      this.stopped = stoppedMeanwhile;
      throw error;
    } finally {
      closeSync(info[0]);
      closeSync(ready[0]);
    }
  }

  /** One command through the whole path before any real one: a machine where that fails keeps per-command sandboxes. */
  private async verify(): Promise<void> {
    const seccomp = openSeccompFd();
    try {
      const child = Bun.spawn([...this.prefix, '--chdir', '/', '--', '/bin/sh', '-c', 'exit 0'], {
        env: {},
        stdio: ['ignore', 'ignore', process.env.CONCH_DEBUG_HELD ? 'inherit' : 'ignore', seccomp.fd, ...this.nsFds],
      });
      const code = await child.exited;
      if (code !== 0) throw new Error(`a command in the held sandbox exited ${code}`);
    } catch (error) {
      // Not when the run ended meanwhile (its close stops a sandbox still starting).
      if (this.state !== 'dead') broken = true;
      throw error;
    } finally {
      seccomp.close();
    }
    if (childrenOf(this.init) !== '') throw new Error('the held sandbox kept a process of its first command');
  }

  enter(): Entered {
    preparedCounts.entered++;
    this.busy = true;
    let over = false;
    return {
      argv: (cwd, command) => [...this.prefix, '--chdir', cwd, '--', ...command],
      fds: this.nsFds,
      settle: async () => {
        if (childrenOf(this.init) === '') return;
        this.stop();
        // Its first process, re-parented to conch once bwrap is gone, ends the namespace as it dies.
        await settleOrphans(GONE_MS);
        // A first process with no children left is the namespace's last (orphans.ts says why).
        const until = Date.now() + GONE_MS;
        while (childrenOf(this.init) && Date.now() < until) await Bun.sleep(2);
      },
      done: () => {
        if (over) return;
        over = true;
        this.busy = false;
        // Before any later command can come: one let into the sandbox before it ran would start as
        // usual (a later turn, setImmediate lost that race to a third of a run's commands under load).
        queueMicrotask(() => {
          if (this.state === 'ready' && !this.busy) this.prepared.prepare(this.prefix, this.nsFds);
        });
      },
      ready: (cwd, command) => ({ claim: (options) => this.prepared.claim(cwd, command, options, this.nsFds, () => this.stop()) }),
    };
  }

  stop(): void {
    if (this.state === 'dead') return;
    this.state = 'dead';
    const libc = loadLibc();
    // The first process first: its death takes every process of the namespace with it. Through
    // its /proc descriptor once there is one: by pid, a process gone and reaped could be another's.
    const exited = this.proc !== null && (this.proc.exitCode !== null || this.proc.signalCode !== null);
    let holderKilled = false;
    if (this.nsFds[0] !== undefined) holderKilled = [0, ESRCH].includes(libc?.signalProcessFd(this.nsFds[0], 9) ?? -1);
    else if (this.init && !exited) libc?.kill(this.init, 9);
    if (this.proc && !exited) {
      try {
        process.kill(-this.proc.pid, 'SIGKILL');
      } catch {
        // gone already
      }
    }
    this.untrack?.();
    this.prepared.stop(holderKilled);
    for (const fd of this.nsFds) closeSync(fd);
    if (this.input >= 0) closeSync(this.input);
    this.input = -1;
    this.nsFds = [];
  }
}

const helds = new WeakMap<PlaceholderScope, Held>();
/** Runs whose first command has come (and gone to a sandbox of its own). */
const seen = new WeakSet<PlaceholderScope>();
let failures = 0;
let movedInARow = 0;

/**
 * The run's held sandbox for these options, entered for one command; null when this command needs a
 * sandbox of its own (none ready yet, busy, or the options or mounted paths changed: then a new
 * one starts in the background for the commands after it). `run` is the run's placeholder scope.
 */
export function enterHeld(run: PlaceholderScope, options: string[], bwrap: string, env: Record<string, string>): Entered | null {
  const held = helds.get(run);
  if (held?.matches(options)) {
    if (held.usable()) return held.enter();
    if (held.starting) return null;
  }
  // Busy with a command (a background job): it is replaced once that is over.
  if (held && !held.idle) return null;
  // A run of one command (the most common kind) would only pay for a sandbox it never uses: the
  // held one starts with the run's second command. The run's end forgets both.
  if (!seen.has(run)) {
    seen.add(run);
    run.onClose(() => {
      seen.delete(run);
      helds.get(run)?.stop();
      helds.delete(run);
    });
    return null;
  }
  held?.stop();
  const next = new Held(options, bwrap, Object.entries(env).flatMap(([name, value]) => ['--setenv', name, value]));
  helds.set(run, next);
  // After this command is spawned: starting it first would hold that command up.
  setImmediate(() => {
    if (!next.starting) return; // stopped before it began
    next.start().then(
      () => {
        movedInARow = 0;
      },
      (error: unknown) => {
        if (process.env.CONCH_DEBUG_HELD) console.error('held sandbox:', error);
        if (helds.get(run) === next) helds.delete(run);
        // A moved mount is usually a command's doing, and the next start goes well: counted apart and
        // reset by a start that does, so that it is not taken for a machine where held sandboxes fail.
        // Three in a row (commands that keep at it, or a mount point bwrap reaches through a link
        // here) and every command gets a sandbox of its own, which is safe either way.
        if (next.moved) {
          if (++movedInARow >= 3) broken = true;
        } else if (!next.stopped && ++failures >= 3) broken = true;
      },
    );
  });
  return null;
}
