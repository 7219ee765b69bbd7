// First-party plugin: git for the model, through ctx.exec so the run's policy and sandbox apply.
// Written only against the public API, like any user plugin.
import { defineTool, errorResult, placeholderNames, textResult, Type } from 'conch';
import { checkPaths, collect, failure, shargs, shq } from './shell.ts';

// --literal-pathspecs: a path like ':(top)' or ':!x' is a file name, not git pathspec magic.
// -c core.quotepath=off: non-ASCII names come back readable instead of octal-escaped.
const GIT = 'git --no-pager --literal-pathspecs -c core.quotepath=off -c color.ui=never';
const DEFAULT_DIFF_LINES = 400;
const MAX_DIFF_LINES = 2000;

const Paths = Type.Array(Type.String({ minLength: 1 }), { minItems: 1, description: 'Workspace-relative paths' });

const gitStatus = defineTool({
  name: 'git_status',
  description: 'Show the current branch and changed, staged and untracked files (git status --short --branch).',
  parameters: Type.Object({}),
  async execute(_args, ctx) {
    // conch's sandbox holds absent protected names (.env.local, HEAD, …) with empty read-only
    // placeholders while a run lasts; they are not the user's files, so empty ones are left out.
    const untracked = placeholderNames().map((name) => shq(`?? ${name}`)).join('|');
    const result = await ctx.exec(
      `out=$(${GIT} status --short --branch --untracked-files=all) || exit $?; printf '%s\\n' "$out" | ` +
        `while IFS= read -r line; do case "$line" in ${untracked}) [ -s "\${line#?? }" ] || continue;; esac; ` +
        `printf '%s\\n' "$line"; done`,
    );
    const failed = failure(result, 'git status');
    if (failed) return errorResult(failed);
    const text = result.output.trim();
    return textResult(text.includes('\n') ? text : `${text}\n(no changes)`);
  },
});

const gitDiff = defineTool({
  name: 'git_diff',
  description:
    'Show changes as a unified diff, paged by lines. Unstaged changes by default; staged: true for what is staged. ' +
    'Pass the returned next_offset to read further.',
  parameters: Type.Object({
    paths: Type.Optional(Type.Array(Type.String({ minLength: 1 }), { description: 'Limit the diff to these paths' })),
    staged: Type.Optional(Type.Boolean({ description: 'Diff the index against HEAD instead of the worktree against the index' })),
    offset: Type.Optional(Type.Integer({ minimum: 0, description: 'First line to return (0-based)' })),
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_DIFF_LINES, description: `Lines to return (default ${DEFAULT_DIFF_LINES})` })),
  }),
  async execute({ paths = [], staged = false, offset = 0, limit = DEFAULT_DIFF_LINES }, ctx) {
    const denied = await checkPaths(ctx, paths, 'read');
    if (denied) return errorResult(denied);
    const command = `${GIT} diff --no-ext-diff --no-color${staged ? ' --cached' : ''} --${paths.length ? ` ${shargs(paths)}` : ''}`;
    const { result, text, clipped } = await collect(ctx, command);
    const failed = failure(result, 'git diff');
    if (failed) return errorResult(failed);
    if (text.trim() === '') return textResult(staged ? 'no staged changes' : 'no unstaged changes');
    const lines = text.replace(/\n$/, '').split('\n');
    const page = lines.slice(offset, offset + limit);
    const end = offset + page.length;
    const more = end < lines.length;
    const header = `lines ${page.length ? offset + 1 : offset}-${end} of ${lines.length}${more ? `; next_offset: ${end}` : ' (end)'}${clipped ? '; diff larger than 8 MB, clipped' : ''}`;
    return textResult(`${header}\n${page.join('\n')}`);
  },
});

const gitCheckpoint = defineTool({
  name: 'git_checkpoint',
  description:
    'Commit only the named paths (new, changed or deleted) with a message, leaving every other change uncommitted and unstaged as it was.',
  parameters: Type.Object({
    message: Type.String({ minLength: 1, description: 'Commit message' }),
    paths: Paths,
  }),
  async execute({ message, paths }, ctx) {
    if (!paths || paths.length === 0) return errorResult('git_checkpoint needs at least one path: name the files to commit');
    if (message.trim() === '') return errorResult('git_checkpoint needs a non-empty message');
    const denied = await checkPaths(ctx, paths, 'read');
    if (denied) return errorResult(denied);
    const list = shargs(paths);
    // add -A first so new and deleted files are known to git; commit --only then takes exactly these
    // paths, whatever else happens to be staged.
    const command = `${GIT} add -A -- ${list} && ${GIT} commit --quiet --only -m ${shq(message)} -- ${list} && ${GIT} show --stat --format='%h %s' HEAD`;
    const result = await ctx.exec(command);
    const failed = failure(result, 'git checkpoint');
    if (failed) return errorResult(failed);
    return textResult(`committed ${result.output.trim()}`);
  },
});

const gitRestorePaths = defineTool({
  name: 'git_restore_paths',
  description: 'Discard changes to the named tracked paths: restore them to HEAD in both the index and the working tree.',
  parameters: Type.Object({ paths: Paths }),
  async execute({ paths }, ctx) {
    if (!paths || paths.length === 0) return errorResult('git_restore_paths needs at least one path');
    const denied = await checkPaths(ctx, paths, 'write');
    if (denied) return errorResult(denied);
    const list = shargs(paths);
    const result = await ctx.exec(`${GIT} restore --source=HEAD --staged --worktree -- ${list} && ${GIT} status --short -- ${list}`);
    const failed = failure(result, 'git restore');
    if (failed) return errorResult(failed);
    const left = result.output.trim();
    return textResult(`restored ${paths.length} path${paths.length === 1 ? '' : 's'} to HEAD${left ? `\nstill differing:\n${left}` : ''}`);
  },
});

export default [gitStatus, gitDiff, gitCheckpoint, gitRestorePaths];
