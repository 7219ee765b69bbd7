// Does the platform sandbox work here? Answered by running a real minimal sandbox with the same
// namespace flags and seccomp filter every command gets — a version check would pass in containers
// that install bwrap but deny user namespaces. Run once per process (per PATH) and cached.
import { existsSync, readFileSync } from 'node:fs';
import { APPARMOR_USERNS_SYSCTL, classifyProbeFailure, namespaceArgs, notInstalledStatus, probeFailureStatus } from './bwrap.ts';
import { openSeccompFd } from './seccomp-fd.ts';
import { hostSeccompArch } from './seccomp.ts';
import { SANDBOX_EXEC } from './seatbelt.ts';

export interface SandboxStatus {
  ok: boolean;
  backend: 'bwrap' | 'seatbelt' | 'none';
  /** What works or what is wrong, specifically. */
  detail: string;
  /** How to fix it, when not ok. */
  fix?: string;
}

export interface ProbeResult {
  status: SandboxStatus;
  /** Absolute path of the bwrap that passed (Linux). */
  bwrap?: string;
  /** bubblewrap >= 0.8 understands --disable-userns. */
  disableUserns: boolean;
}

export interface ProbeOptions {
  /** The PATH searched for bwrap; default: this process's PATH. */
  PATH?: string;
  /** Bypass the cache (`conch sandbox check` always looks afresh). */
  fresh?: boolean;
}

const PROBE_TIMEOUT_MS = 10_000;
const cache = new Map<string, Promise<ProbeResult>>();

const known = new Map<string, ProbeResult>();

export function probe(options: ProbeOptions = {}): Promise<ProbeResult> {
  const PATH = options.PATH ?? process.env.PATH ?? '';
  const key = `${process.platform}\0${PATH}`;
  const cached = cache.get(key);
  if (cached && !options.fresh) return cached;
  const result = process.platform === 'linux' ? probeLinux(PATH) : process.platform === 'darwin' ? probeMac() : probeNone();
  cache.set(key, result);
  known.delete(key);
  result.then(
    (value) => cache.get(key) === result && known.set(key, value),
    () => {},
  );
  return result;
}

/** The cached probe's result once it is in (for the current PATH), without waiting for it. */
export function probeKnown(): ProbeResult | undefined {
  return known.get(`${process.platform}\0${process.env.PATH ?? ''}`);
}

async function run(argv: string[], extraFd?: number): Promise<{ code: number | null; stderr: string }> {
  const child = Bun.spawn(argv, {
    stdio: ['ignore', 'ignore', 'pipe', ...(extraFd === undefined ? [] : [extraFd])],
    env: { PATH: '/usr/bin:/bin' },
  });
  const timer = setTimeout(() => child.kill('SIGKILL'), PROBE_TIMEOUT_MS);
  try {
    const [stderr, code] = await Promise.all([new Response(child.stderr).text(), child.exited]);
    return { code, stderr };
  } finally {
    clearTimeout(timer);
  }
}

async function probeLinux(PATH: string): Promise<ProbeResult> {
  const bwrap = Bun.which('bwrap', { PATH });
  if (!bwrap) return { status: { ok: false, backend: 'bwrap', ...notInstalledStatus() }, disableUserns: false };
  if (!hostSeccompArch()) {
    return {
      status: {
        ok: false,
        backend: 'bwrap',
        detail: `conch has no seccomp filter for this CPU architecture (${process.arch}); only x86_64 and aarch64 are supported.`,
        fix: 'Pass --unrestricted to run commands without a sandbox, deliberately.',
      },
      disableUserns: false,
    };
  }
  const attempt = async (disableUserns: boolean) => {
    const seccomp = openSeccompFd();
    try {
      return await run(
        [
          bwrap,
          ...namespaceArgs({ network: true, disableUserns }),
          '--seccomp', '3',
          '--ro-bind', '/', '/',
          '--dev', '/dev',
          '--proc', '/proc',
          '--tmpfs', '/tmp',
          '--', '/bin/true',
        ],
        seccomp.fd,
      );
    } finally {
      seccomp.close();
    }
  };
  let disableUserns = true;
  let outcome = await attempt(true);
  if (outcome.code !== 0 && /disable-userns/.test(outcome.stderr)) {
    // bubblewrap older than 0.8: the seccomp filter still refuses nested user namespaces.
    disableUserns = false;
    outcome = await attempt(false);
  }
  if (outcome.code === 0) {
    return {
      status: {
        ok: true,
        backend: 'bwrap',
        detail:
          `bubblewrap at ${bwrap} works: user namespace with all capabilities dropped, fresh pid/ipc/uts namespaces, ` +
          `seccomp filter (no AF_UNIX sockets other than stream socketpairs, ptrace, io_uring, TIOCSTI, setuid bits)` +
          (disableUserns ? ', nested user namespaces disabled.' : '.'),
      },
      bwrap,
      disableUserns,
    };
  }
  const stderr = outcome.code === null ? `${outcome.stderr}\n(killed after ${PROBE_TIMEOUT_MS} ms)` : outcome.stderr;
  return {
    status: { ok: false, backend: 'bwrap', ...probeFailureStatus(classifyProbeFailure(stderr, appArmorRestricted()), bwrap, stderr) },
    disableUserns,
  };
}

async function probeMac(): Promise<ProbeResult> {
  if (!existsSync(SANDBOX_EXEC)) {
    return {
      status: {
        ok: false,
        backend: 'seatbelt',
        detail: `${SANDBOX_EXEC} is missing; restricted mode needs it to run shell commands.`,
        fix: 'It ships with macOS; restore it, or pass --unrestricted to run commands without a sandbox, deliberately.',
      },
      disableUserns: false,
    };
  }
  const outcome = await run([SANDBOX_EXEC, '-p', '(version 1)(allow default)', '/usr/bin/true']);
  if (outcome.code === 0) {
    return { status: { ok: true, backend: 'seatbelt', detail: `Seatbelt (${SANDBOX_EXEC}) works.` }, disableUserns: false };
  }
  return {
    status: {
      ok: false,
      backend: 'seatbelt',
      detail: `${SANDBOX_EXEC} failed to start a minimal sandbox: ${outcome.stderr.trim() || `exit ${outcome.code}`}`,
      fix: 'Nested sandboxes are refused by macOS (is conch itself running sandboxed?); otherwise pass --unrestricted, deliberately.',
    },
    disableUserns: false,
  };
}

async function probeNone(): Promise<ProbeResult> {
  return {
    status: {
      ok: false,
      backend: 'none',
      detail: `no sandbox backend for ${process.platform}: conch sandboxes commands with bubblewrap on Linux and Seatbelt on macOS.`,
      fix: 'Pass --unrestricted to run commands without a sandbox, deliberately.',
    },
    disableUserns: false,
  };
}

function appArmorRestricted(): boolean {
  try {
    return readFileSync(APPARMOR_USERNS_SYSCTL, 'utf8').trim() === '1';
  } catch {
    return false; // no such sysctl: not an AppArmor-restricting kernel
  }
}
