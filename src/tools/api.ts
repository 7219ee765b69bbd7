// What a plugin gets as `import … from 'conch'` (plugins/importer.ts hands it over as that module):
// declaring tools, their parameters and results, and the facts about the sandbox a tool may need.
// src/index.ts exports all of it, plus the embedding API above it.
export { Type } from 'typebox';
export type { Static, TSchema } from 'typebox';
export { defineTool } from './define.ts';
export type { ToolDefinition, ToolContext, ToolReturn, JsonSchema, JsonValue, PluginFactory, PluginSetup } from './define.ts';
export { errorResult, textResult } from '../core/content.ts';
export type { ContentBlock, ToolResult } from '../core/content.ts';
export { PolicyError } from '../core/errors.ts';
export type { ExecOptions, ExecResult } from '../shell/exec.ts';
export type { WorkspaceAccess } from '../workspace/paths.ts';
export { placeholderNames } from '../sandbox/profiles.ts';
// File machinery a plugin that keeps its own files (plugins/vault) needs, the same the kernel tools use:
// canonical paths and containment, the content revision, exact-text edits, atomic multi-file writes.
export { isWithin } from '../core/paths.ts';
export { canonicalize } from '../workspace/paths.ts';
export { openVerified, PathChanged } from '../workspace/open-verified.ts';
export { conchCacheDir } from '../config/xdg.ts';
export { revisionOf } from '../workspace/revision.ts';
export { planEdits } from '../files/edit-apply.ts';
export type { EditSpec, Plan as EditPlan } from '../files/edit-apply.ts';
export { FilesNotWritten, writeFilesAtomic } from '../workspace/atomic-set.ts';
export type { AtomicSetOptions, FileChange } from '../workspace/atomic-set.ts';
