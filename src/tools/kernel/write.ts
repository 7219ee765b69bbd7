// The write tool: create a file or replace all of it, atomically, never over content the model has not seen.
import { Type } from '../../core/typebox.ts';
import type { Tool } from '../define.ts';
import { unifiedDiff } from '../../files/diff.ts';
import { asText, commit, freshnessProblem, hasCrlf, loadCurrent } from '../../files/commit.ts';
import { formatBytes, type FileToolDeps } from '../../files/deps.ts';
import { errorResult } from '../../core/content.ts';

const parameters = Type.Object(
  {
    path: Type.String({ minLength: 1, description: 'File to write, relative to the workspace root (or absolute inside it).' }),
    content: Type.String({ description: 'The complete new content of the file, exactly as it should be on disk.' }),
    expected_revision: Type.Optional(
      Type.Union([Type.String(), Type.Null()], {
        description:
          'Omit to create a new file or to replace one you have read in this session. ' +
          'A revision string (from read, write or edit) replaces the file only if it is still at that revision. ' +
          'null creates the file only if it does not exist yet.',
      }),
    ),
  },
  { additionalProperties: false },
);

const description = [
  'Create a file, or replace the entire content of one. Missing parent directories are created.',
  'To replace an existing file you must have read it in this session and it must be unchanged since, or you pass its current revision as expected_revision.',
  'The write is atomic: if anything fails, the old content stays intact.',
  'To change part of a file, prefer edit.',
].join(' ');

function lineCount(text: string): string {
  const breaks = text.split('\n').length - 1;
  const n = text === '' ? 0 : text.endsWith('\n') ? breaks : breaks + 1;
  return n === 1 ? '1 line' : `${n} lines`;
}

export function createWriteTool(deps: FileToolDeps): Tool {
  const ws = deps.workspace;
  return {
    name: 'write',
    source: 'kernel',
    description,
    parameters,
    async execute(args, ctx) {
      const { path, content, expected_revision } = args as { path: string; content: string; expected_revision?: string | null };
      const abs = await ws.resolve(path, 'write');
      const shown = ws.display(abs);
      const current = await loadCurrent(deps, abs, 'write', ctx.signal);
      if (current && 'error' in current) return errorResult(current.error);
      if (current && expected_revision === null) {
        return errorResult(`${shown} already exists, and expected_revision: null only creates new files. Read it, then replace it (or edit it).`);
      }
      if (!current && typeof expected_revision === 'string') {
        return errorResult(`${shown} does not exist, so it cannot be at revision ${expected_revision}. To create it, omit expected_revision or pass null.`);
      }
      if (current) {
        const problem = freshnessProblem(deps, abs, current, expected_revision ?? undefined, true);
        if (problem) return errorResult(problem, { path: abs, revision: current.revision });
      }

      const bytes = Buffer.from(content, 'utf8');
      const done = await commit(deps, abs, bytes, current ? current.stat : null);
      if ('error' in done) return errorResult(done.error);

      const oldText = current ? asText(current.bytes) : null;
      // A replaced binary (or very large) file has no line diff worth showing.
      const diff = current && oldText === null ? { text: '', added: 0, removed: 0 } : unifiedDiff(oldText ?? '', content);
      const header = `--- ${current ? `a/${shown}` : '/dev/null'}\n+++ b/${shown}`;
      const notes: string[] = [];
      if (oldText !== null && hasCrlf(oldText) && !hasCrlf(content) && content.includes('\n')) {
        notes.push('note: the previous content used CRLF line endings; the new content uses LF.');
      }
      const summary = current
        ? `Replaced ${shown}: ${lineCount(content)}, ${formatBytes(bytes.length)} (+${diff.added} -${diff.removed} lines); revision ${done.revision}.`
        : `Created ${shown}: ${lineCount(content)}, ${formatBytes(bytes.length)}; revision ${done.revision}.`;
      return {
        content: [{ type: 'text', text: [summary, ...notes].join('\n') }],
        details: {
          path: abs,
          oldText,
          newText: content,
          revision: done.revision,
          diff: diff.text ? `${header}\n${diff.text}` : '',
        },
      };
    },
  };
}
