// The opening of the note an output schema adds to the task (output.ts). Its own module so the
// session listing can recognise it without loading the schema machinery.
export const OUTPUT_NOTE_OPENING = 'Your final answer must be exactly one JSON value, with no prose before or after it, that validates against this JSON Schema:';

/** The task as the user wrote it: without the output schema's note, when there is one. */
export function withoutOutputNote(task: string): string {
  const at = task.indexOf(`\n\n${OUTPUT_NOTE_OPENING}`);
  return at === -1 ? task : task.slice(0, at);
}
