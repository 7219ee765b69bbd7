// The opening of the note an output schema adds to the task (output.ts). Its own module so the
// session listing can recognise it without loading the schema machinery.
export const OUTPUT_NOTE_OPENING = 'Your final answer must be exactly one JSON value, with no prose before or after it, that validates against this JSON Schema:';
/** The opening of the repair turn's message: conch's words to the model, not a task of the user's. */
export const REPAIR_OPENING = 'Your final answer does not validate against the JSON Schema given with the task:';

/** The task as the user wrote it: without the output schema's note, when there is one. */
export function withoutOutputNote(task: string): string {
  const at = task.indexOf(`\n\n${OUTPUT_NOTE_OPENING}`);
  return at === -1 ? task : task.slice(0, at);
}

/**
 * A task's blocks as the user gave them, and whether an output schema's note was taken off. The note
 * ends the last text block, or is a block of its own after an image (output.ts puts it there).
 */
export function withoutOutputNoteBlocks<B extends { type: string; text?: string }>(blocks: B[]): { blocks: B[]; noted: boolean } {
  const last = blocks.at(-1);
  if (last?.type !== 'text' || typeof last.text !== 'string') return { blocks, noted: false };
  if (last.text.startsWith(OUTPUT_NOTE_OPENING)) return { blocks: blocks.slice(0, -1), noted: true };
  const text = withoutOutputNote(last.text);
  if (text === last.text) return { blocks, noted: false };
  return { blocks: [...blocks.slice(0, -1), { ...last, text }], noted: true };
}
