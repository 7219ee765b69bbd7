// A workspace with the file tools wired the way a run wires them: one Workspace, one revision
// tracker shared by read, write and edit, and a ToolContext without a shell.
import { createHash } from 'node:crypto';
import type { Tool, ToolContext } from '../../src/tools/define.ts';
import type { ToolResult } from '../../src/core/content.ts';
import type { FileToolDeps } from '../../src/files/deps.ts';
import { createEditTool } from '../../src/tools/kernel/edit.ts';
import { createReadTool } from '../../src/tools/kernel/read.ts';
import { createWriteTool } from '../../src/tools/kernel/write.ts';
import { Workspace, type WorkspaceOptions } from '../../src/workspace/paths.ts';
import { RevisionTracker } from '../../src/workspace/revision.ts';

export type Result = ToolResult & { text: string };

export const sha = (data: string | Uint8Array) => createHash('sha256').update(data).digest('hex');

export async function fileTools(root: string, over: Partial<FileToolDeps> = {}, wsOptions: Partial<WorkspaceOptions> = {}) {
  const workspace = await Workspace.open({ root, unrestricted: false, ...wsOptions });
  const deps: FileToolDeps = { workspace, revisions: new RevisionTracker(), ...over };
  const ctx: ToolContext = {
    cwd: workspace.root,
    signal: new AbortController().signal,
    runSignal: new AbortController().signal,
    workspace,
    exec: () => Promise.reject(new Error('no exec in file tool tests')),
    update: () => {},
    callId: 'test',
  };
  const run = async (tool: Tool, args: Record<string, unknown>): Promise<Result> => {
    const result = (await tool.execute(args as never, ctx)) as ToolResult;
    const text = result.content.map((c) => (c.type === 'text' ? c.text : `<image ${c.mediaType}>`)).join('\n');
    return { ...result, text };
  };
  return { workspace, deps, run, read: createReadTool(deps), write: createWriteTool(deps), edit: createEditTool(deps) };
}
