// Several tasks in one `conch run`: from the arguments (each one a task) or from --tasks-file (one
// task a line, or a JSON array of strings), and how many run at once.
import { closeSync, openSync, readSync } from 'node:fs';
import { SetupError } from '../core/errors.ts';
import { UsageError } from './argv.ts';

export const DEFAULT_MAX_CONCURRENT = 3;

/** --max-concurrent: a whole number above 0. */
export function maxConcurrent(value: string | undefined): number {
  if (value === undefined) return DEFAULT_MAX_CONCURRENT;
  if (!/^\d+$/.test(value) || Number(value) < 1) {
    throw new UsageError(`--max-concurrent takes a whole number of tasks above 0 (default ${DEFAULT_MAX_CONCURRENT}), got '${value}'`);
  }
  return Number(value);
}

/**
 * The tasks in FILE. A file whose first non-blank character is `[` is a JSON array of non-empty
 * strings (tasks that span lines); any other file has one task a line, blank lines skipped.
 * Every problem is a setup error naming the file.
 */
export function readTasksFile(file: string): string[] {
  let text: string;
  try {
    text = readCapped(file);
  } catch (error) {
    if (error instanceof SetupError) throw error;
    const code = (error as { code?: string }).code;
    const why = code === 'ENOENT' ? 'no such file' : code === 'EISDIR' ? 'it is a directory' : (error as Error).message;
    throw new SetupError(`--tasks-file ${file}: cannot read it (${why}). Give a file with one task a line, or a JSON array of strings.`);
  }
  text = text.replace(/^\uFEFF/, '');
  const tasks = text.trimStart().startsWith('[') ? jsonTasks(file, text) : text.split(/\r?\n/).map((line) => line.trim()).filter(Boolean);
  if (tasks.length === 0) throw new SetupError(`--tasks-file ${file}: the file holds no task. Write one task a line, or a JSON array of strings.`);
  return tasks;
}

/** A tasks file is text a person wrote: more than this is a mistake (`--tasks-file /dev/zero`), not tasks. */
export const TASKS_FILE_MAX_BYTES = 16 * 1024 * 1024;

/** The file's text, read up to the cap: a device or FIFO without end must not fill the memory. */
function readCapped(file: string): string {
  const fd = openSync(file, 'r');
  try {
    const chunks: Buffer[] = [];
    let total = 0;
    for (;;) {
      const chunk = Buffer.allocUnsafe(1024 * 1024);
      const n = readSync(fd, chunk, 0, chunk.length, null);
      if (n === 0) break;
      total += n;
      if (total > TASKS_FILE_MAX_BYTES) {
        throw new SetupError(`--tasks-file ${file}: more than ${TASKS_FILE_MAX_BYTES / 1024 / 1024} MiB, which is no list of tasks. Give a file with one task a line, or a JSON array of strings.`);
      }
      chunks.push(chunk.subarray(0, n));
    }
    return Buffer.concat(chunks).toString('utf8');
  } finally {
    closeSync(fd);
  }
}

function jsonTasks(file: string, text: string): string[] {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    // A list of tasks whose first one starts with '[' ("[wip] …") lands here too: say why it was read as JSON.
    throw new SetupError(
      `--tasks-file ${file}: not valid JSON (${(error as Error).message}). It starts with '[', so it is read as a JSON array of strings; ` +
        "for one task a line, start the first line with something other than '['.",
    );
  }
  if (!Array.isArray(value)) throw new SetupError(`--tasks-file ${file}: the JSON must be an array of strings.`);
  const bad = value.findIndex((task) => typeof task !== 'string' || task.trim() === '');
  // Counted from 1, as the tasks are everywhere else ("task 2/3", "task 2 is empty").
  if (bad !== -1) throw new SetupError(`--tasks-file ${file}: task ${bad + 1} of the array is ${JSON.stringify(value[bad])}; every task is a string that is not empty.`);
  return (value as string[]).map((task) => task.trim());
}
