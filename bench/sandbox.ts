// Per-call wall time of `true`: through conch's sandbox as a run uses it (prepareSandboxed + spawn +
// release, the placeholders held by the run's scope), the same with a scope per call (what `conch
// sandbox run` does, and what every call did before placeholders were kept per run), through bare
// bwrap with the same flags, mounts and seccomp filter (argv prepared once, reused), and through
// /bin/sh -c. The workspace is a git repo without .conch or .env.* files: the usual case, where
// conch makes placeholders for the absent protected names.
// Prints one line per figure and the ratios; conch's own overhead is the first ratio (target <= 1.3).
// Usage: bun bench/sandbox.ts [calls]
import { closeSync, mkdirSync, mkdtempSync, openSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PlaceholderScope, prepareSandboxed, probeSandbox, type SandboxRequest } from '../src/sandbox/index.ts';
import { buildFilter, encodeFilter, hostSeccompArch } from '../src/sandbox/seccomp.ts';

const calls = Number(process.argv[2] ?? 100);
const status = await probeSandbox();
if (!status.ok) {
  console.log(`sandbox unavailable, nothing to measure: ${status.detail}`);
  process.exit(1);
}

const root = realpathSync(mkdtempSync(join(tmpdir(), 'conch-bench-')));
/** Two identical workspaces: conch calls use one, the bare bwrap calls the other (held prepared). */
function workspace(name: string): SandboxRequest {
  const ws = join(root, name);
  const tmp = join(root, `${name}-tmp`);
  mkdirSync(join(ws, '.git'), { recursive: true });
  mkdirSync(tmp);
  writeFileSync(join(ws, '.env'), 'A=1\n');
  return { profile: 'workspace-write', network: true, writableRoots: [], protectedGlobs: [], command: 'true', cwd: ws, workspace: ws, tmpDir: tmp };
}
const runScope = new PlaceholderScope();
const request = { ...workspace('conch'), placeholders: runScope };
const perCallRequest = workspace('per-call');
const bareRequest = workspace('bare');

async function spawn(argv: string[], extraFds: number[] = []): Promise<void> {
  const child = Bun.spawn(argv, { stdio: ['ignore', 'ignore', 'ignore', ...extraFds] });
  const code = await child.exited;
  if (code !== 0) throw new Error(`${argv[0]} exited ${code}`);
}

/** Per-call ms of each variant; calls are interleaved so that load from other processes hits all alike. */
async function measure(variants: Record<string, () => Promise<void>>): Promise<Record<string, number>> {
  const total: Record<string, number> = {};
  for (const [name, once] of Object.entries(variants)) {
    total[name] = 0;
    for (let i = 0; i < 5; i++) await once(); // warm up caches and the probe
  }
  for (let i = 0; i < calls; i++) {
    for (const [name, once] of Object.entries(variants)) {
      const started = performance.now();
      await once();
      total[name]! += performance.now() - started;
    }
  }
  for (const name of Object.keys(total)) total[name]! /= calls;
  return total;
}

try {
  // Bare: the same flags, mounts and seccomp program, prepared once for the second workspace and held
  // (its placeholders stay); bwrap consumes the descriptor it reads the program from, so each bare
  // call opens the program file again: a plain open(2), none of conch's work.
  const held = await prepareSandboxed(bareRequest);
  const filter = join(root, 'filter.bpf');
  writeFileSync(filter, encodeFilter(buildFilter(hostSeccompArch()!)));
  let result: Record<string, number>;
  try {
    result = await measure({
      conch: async () => {
        const prepared = await prepareSandboxed(request);
        try {
          await spawn(prepared.argv, prepared.extraFds);
        } finally {
          await prepared.release();
        }
      },
      perCall: async () => {
        const prepared = await prepareSandboxed(perCallRequest);
        try {
          await spawn(prepared.argv, prepared.extraFds);
        } finally {
          await prepared.release();
        }
      },
      bare: async () => {
        const fd = openSync(filter, 'r');
        try {
          await spawn(held.argv, [fd]);
        } finally {
          closeSync(fd);
        }
      },
      sh: () => spawn(['/bin/sh', '-c', 'true']),
    });
  } finally {
    await held.release();
    runScope.close();
  }
  const { conch, perCall, bare, sh } = result as { conch: number; perCall: number; bare: number; sh: number };
  console.log(`conch sandbox in a run (prepare + bwrap + release): ${conch.toFixed(2)} ms/call (${calls} calls)`);
  console.log(`conch sandbox, placeholders per call: ${perCall.toFixed(2)} ms/call (${calls} calls)`);
  console.log(`bare bwrap, same flags, mounts and filter: ${bare.toFixed(2)} ms/call (${calls} calls)`);
  console.log(`/bin/sh -c true: ${sh.toFixed(2)} ms/call (${calls} calls)`);
  // conch's own host-side work alone (plan, placeholders, seccomp descriptor, release), no spawn.
  const prepareOnly = (req: SandboxRequest) => async () => {
    const prepared = await prepareSandboxed(req);
    await prepared.release();
  };
  const host = await measure({ run: prepareOnly(request), perCall: prepareOnly(perCallRequest) });
  runScope.close();
  console.log(`host side in a run (prepare + release, no spawn): ${host.run!.toFixed(3)} ms/call (${calls} calls)`);
  console.log(`host side, placeholders per call (no spawn): ${host.perCall!.toFixed(3)} ms/call (${calls} calls)`);
  console.log(`ratio conch / bare bwrap: ${(conch / bare).toFixed(2)}x`);
  console.log(`ratio conch placeholders per call / bare bwrap: ${(perCall / bare).toFixed(2)}x`);
  console.log(`ratio bare bwrap / sh: ${(bare / sh).toFixed(2)}x`);
  console.log(`ratio conch / sh: ${(conch / sh).toFixed(2)}x`);
} finally {
  rmSync(root, { recursive: true, force: true });
}
