// What the held-sandbox tests share: a run's executor over a fixture, waiting until the held
// sandbox serves a command, and the host's process table.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { DEFAULT_LIMITS } from '../../src/core/limits.ts';
import type { PlaceholderScope } from '../../src/sandbox/index.ts';
import { createExecutor } from '../../src/shell/exec.ts';
import { Workspace } from '../../src/workspace/paths.ts';
import type { Fixture } from './harness.ts';

export type RunExecutor = (command: string, timeoutMs?: number, cwd?: string) => ReturnType<ReturnType<typeof createExecutor>>;

/** The bash tool's executor for one run (`scope`) over the fixture, network off unless asked. */
export async function runExecutor(
  fx: Fixture,
  scope: PlaceholderScope,
  options: { network?: boolean; hidden?: string[]; env?: Record<string, string> } = {},
): Promise<RunExecutor> {
  const exec = createExecutor({
    workspace: await Workspace.open({ root: fx.ws, unrestricted: false }),
    unrestricted: false,
    sandbox: { profile: 'workspace-write', network: options.network ?? false, writableRoots: [], protectedGlobs: [], hidden: options.hidden ?? [] },
    limits: DEFAULT_LIMITS,
    env: options.env ?? {},
    shellEnabled: true,
    tmpDir: fx.tmp,
    logDir: join(fx.root, 'logs'),
    placeholders: scope,
  });
  return (command, timeoutMs, cwd) =>
    exec(command, { signal: new AbortController().signal, ...(timeoutMs === undefined ? {} : { timeoutMs }), ...(cwd === undefined ? {} : { cwd }) });
}

/** Commands until one runs in the held sandbox (its pid 1 is the holder); returns that one's pid namespace. */
export async function untilHeld(exec: RunExecutor): Promise<string> {
  for (let i = 0; i < 200; i++) {
    const out = (await exec("readlink /proc/self/ns/pid; tr '\\0' ' ' < /proc/1/cmdline")).output;
    if (out.includes('/bin/sh -c echo; read _')) return out.split('\n')[0]!;
    await Bun.sleep(10);
  }
  throw new Error('the held sandbox never served a command');
}

/**
 * Host processes whose command line contains `marker` that are still there after up to `ms`: a
 * process conch SIGKILLed is done for, but under load its exit can lag the command's return; one
 * that stays is an escapee (a 300 s sleep never ends by itself within a test).
 */
export async function lingering(marker: string, ms = 2000): Promise<number[]> {
  const until = Date.now() + ms;
  let found = hostProcesses(marker);
  while (found.length > 0 && Date.now() < until) {
    await Bun.sleep(20);
    found = hostProcesses(marker);
  }
  return found;
}

/** Host processes whose command line contains `marker`. */
export function hostProcesses(marker: string): number[] {
  const found: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (readFileSync(`/proc/${entry}/cmdline`, 'latin1').replaceAll('\0', ' ').includes(marker)) found.push(Number(entry));
    } catch {
      // gone
    }
  }
  return found;
}
