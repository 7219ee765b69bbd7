// A ToolContext for plugin tests, built like a session builds one: the real Workspace and the real
// executor. By default the workspace policy applies but commands run without the sandbox (unit tests
// must not need bwrap); `sandbox: true` runs them under the real sandbox too.
import { onTestFinished } from 'bun:test';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DEFAULT_LIMITS } from '../../src/core/limits.ts';
import { createExecutor } from '../../src/shell/exec.ts';
import type { ToolContext } from '../../src/tools/define.ts';
import { Workspace } from '../../src/workspace/paths.ts';

export interface TestContextOptions {
  /** The tool call's signal (ends with the call). */
  signal?: AbortSignal;
  /** The run's signal (ends with the run). */
  runSignal?: AbortSignal;
  sandbox?: boolean;
}

export async function makeContext(dir: string, options: TestContextOptions = {}): Promise<ToolContext> {
  const workspace = await Workspace.open({ root: dir, unrestricted: false });
  const tmpDir = await mkdtemp(join(tmpdir(), 'conch-plugin-run-'));
  // Call makeContext in a test or a beforeEach: the run's temp dir goes when that test ends.
  onTestFinished(() => rm(tmpDir, { recursive: true, force: true }));
  const executor = createExecutor({
    workspace,
    unrestricted: !options.sandbox,
    sandbox: { profile: 'workspace-write', network: false, writableRoots: [], protectedGlobs: [] },
    limits: DEFAULT_LIMITS,
    env: {},
    shellEnabled: true,
    tmpDir,
  });
  const signal = options.signal ?? new AbortController().signal;
  const runSignal = options.runSignal ?? new AbortController().signal;
  return {
    cwd: workspace.root,
    signal,
    runSignal,
    workspace,
    // As the session does: a command with its own signal may outlive the call, never the run.
    exec: (command, opts = {}) => executor(command, { ...opts, signal: opts.signal ? AbortSignal.any([opts.signal, runSignal]) : signal }),
    update: () => {},
    callId: 'test-call',
  };
}
