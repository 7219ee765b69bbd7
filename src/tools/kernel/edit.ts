// The edit tool: exact-text replacements, all applied in one atomic write or none at all.
import { Type } from '../../core/typebox.ts';
import type { Tool } from '../define.ts';
import { planEdits, type EditSpec } from '../../files/edit-apply.ts';
import { asText, commit, freshnessProblem, loadCurrent } from '../../files/commit.ts';
import type { FileToolDeps } from '../../files/deps.ts';
import { notFoundMessage } from '../../files/errors.ts';
import { errorResult } from '../../core/content.ts';

/** Diff text shown to the model; the host always gets the whole diff in details. */
const MAX_DIFF_SHOWN = 16 * 1024;

const parameters = Type.Object(
  {
    path: Type.String({ minLength: 1, description: 'File to edit, relative to the workspace root (or absolute inside it).' }),
    edits: Type.Array(
      Type.Object(
        {
          old_text: Type.String({
            minLength: 1,
            description: 'Exact text to replace, copied from the file (without read\'s line-number prefixes), with enough surrounding lines to occur exactly once.',
          }),
          new_text: Type.String({ description: 'The replacement text (may be empty to delete).' }),
        },
        { additionalProperties: false },
      ),
      { minItems: 1, description: 'Replacements, each matched against the file as it is before this call. They must not overlap.' },
    ),
    expected_revision: Type.Optional(Type.String({ description: 'Apply only if the file is still at this revision (from read, write or edit).' })),
  },
  { additionalProperties: false },
);

const description = [
  'Replace exact text in an existing file. Each edit\'s old_text must occur exactly once in the file as it is before this call;',
  'copy it exactly, including indentation, and add surrounding lines if it is not unique.',
  'All edits are applied together or not at all. Line endings (CRLF) and a byte-order mark are kept.',
  'Refused if the file changed on disk since you last read or wrote it. Returns a unified diff and the new revision.',
].join(' ');

export function createEditTool(deps: FileToolDeps): Tool {
  const ws = deps.workspace;
  return {
    name: 'edit',
    source: 'kernel',
    description,
    parameters,
    async execute(args, ctx) {
      const { path, edits, expected_revision } = args as { path: string; edits: EditSpec[]; expected_revision?: string };
      const abs = await ws.resolve(path, 'write');
      const shown = ws.display(abs);
      const current = await loadCurrent(deps, abs, 'edit', ctx.signal);
      if (current === null) return errorResult(`${await notFoundMessage(abs, ws)} To create a new file, use write.`);
      if ('error' in current) return errorResult(current.error);
      const problem = freshnessProblem(deps, abs, current, expected_revision, false);
      if (problem) return errorResult(problem, { path: abs, revision: current.revision });

      const text = asText(current.bytes);
      if (text === null) return errorResult(`${shown} is not UTF-8 text (binary or another encoding); edit only changes text files.`);
      const plan = planEdits(text, edits, shown);
      if (!plan.ok) return errorResult(plan.message, { path: abs, revision: current.revision });

      // Re-encoding valid UTF-8 is byte-exact, so everything outside the edits (BOM included) is unchanged.
      const done = await commit(deps, abs, Buffer.from(plan.text, 'utf8'), current.stat);
      if ('error' in done) return errorResult(done.error);

      const diff = `--- a/${shown}\n+++ b/${shown}\n${plan.diff}`;
      const shownDiff = diff.length > MAX_DIFF_SHOWN ? `${diff.slice(0, MAX_DIFF_SHOWN)}\n[diff cut at ${MAX_DIFF_SHOWN} characters]` : diff;
      const count = edits.length === 1 ? '1 edit' : `${edits.length} edits`;
      return {
        content: [{ type: 'text', text: `Edited ${shown}: ${count}, +${plan.added} -${plan.removed} lines; revision ${done.revision}.\n${shownDiff}` }],
        details: { path: abs, oldText: text, newText: plan.text, revision: done.revision, diff },
      };
    },
  };
}
