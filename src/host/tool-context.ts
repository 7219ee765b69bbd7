// The ToolContext every tool call gets: the workspace, progress updates, and ctx.exec through the
// same executor as bash.
import type { ContextFactory } from '../agent/dispatch.ts';
import type { Executor } from '../shell/exec.ts';
import type { ToolContext } from '../tools/define.ts';
import type { Workspace } from '../workspace/paths.ts';

export function contextFactory(workspace: Workspace, executor: Executor): ContextFactory {
  return (callId, signal, runSignal): ToolContext => ({
    cwd: workspace.root,
    signal,
    runSignal,
    workspace,
    callId,
    update: () => {},
    // A command given its own signal may outlive the call (background jobs), never the run.
    exec: (command, opts = {}) =>
      executor(command, { ...opts, signal: opts.signal ? AbortSignal.any([opts.signal, runSignal]) : signal }),
  });
}
