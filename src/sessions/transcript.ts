// A session as a person (or a script) reads it: per turn the task, the answers, each tool call with
// its result, and how the run ended. Images are named, not dumped.
import { INTERRUPTED, NOT_STARTED, type LoadedSession } from './load.ts';
import type { EndRecord, StoredBlock } from './records.ts';
import { REPAIR_OPENING, withoutOutputNoteBlocks } from '../agent/output-note.ts';
import { INTERRUPTED_OPENING } from '../agent/loop.ts';

export type TranscriptItem =
  /** `outputSchema`: the task went with an output schema, whose note (for the model) is left out of `text`. */
  | { type: 'task'; text: string; outputSchema?: true }
  /** conch's repair turn of an --output-schema run: the problems it quoted to the model. */
  | { type: 'repair'; text: string }
  | { type: 'answer'; text: string }
  /**
   * `note`: conch's own word at the start of `result` on a call that did not finish (stopped while
   * it ran, never started), shown whole; the rest of `result` is what the tool gave.
   */
  | { type: 'tool'; callId: string; name: string; arguments: string; result: string; isError: boolean; note?: string };

export interface TranscriptRun {
  runId: string;
  time: string;
  provider: string;
  model: string;
  /** null: the run never recorded its end (killed). */
  outcome: Omit<EndRecord, 't' | 'runId'> | null;
  items: TranscriptItem[];
}

export interface Transcript {
  id: string;
  cwd: string;
  created: string;
  parent: { id: string; runs: number } | null;
  runs: TranscriptRun[];
}

const text = (blocks: StoredBlock[]) => blocks.map((b) => (b.type === 'text' ? b.text : `[image ${b.mediaType}]`)).join('\n');

export function transcript(loaded: LoadedSession): Transcript {
  const runs: TranscriptRun[] = [];
  const calls = new Map<string, Extract<TranscriptItem, { type: 'tool' }>>();
  const unanswered = new Set<TranscriptItem>();
  for (const record of loaded.records) {
    const run = runs.at(-1);
    switch (record.t) {
      case 'run':
        runs.push({ runId: record.runId, time: record.time, provider: record.provider, model: record.model, outcome: null, items: [] });
        break;
      case 'msg':
        if (!run) break;
        if (record.m.role === 'user' && text(record.m.content).startsWith(REPAIR_OPENING)) {
          run.items.push({ type: 'repair', text: text(record.m.content) });
        } else if (record.m.role === 'user') {
          const typed = withoutOutputNoteBlocks(record.m.content);
          run.items.push({ type: 'task', text: text(typed.blocks), ...(typed.noted ? { outputSchema: true as const } : {}) });
        }
        else {
          if (record.m.text) run.items.push({ type: 'answer', text: record.m.text });
          for (const call of record.m.toolCalls ?? []) {
            const item = { type: 'tool' as const, callId: call.id, name: call.name, arguments: call.arguments, result: '(no result: the run was stopped)', isError: true };
            calls.set(call.id, item);
            unanswered.add(item);
            run.items.push(item);
          }
        }
        break;
      case 'result': {
        const item = calls.get(record.r.callId);
        if (item) Object.assign(item, { result: text(record.r.content), isError: record.r.isError });
        const first = record.r.content[0];
        if (item && first?.type === 'text' && first.text.startsWith(INTERRUPTED_OPENING)) item.note = first.text;
        if (item) unanswered.delete(item);
        break;
      }
      case 'end':
        if (run) {
          const { t: _t, runId: _r, ...outcome } = record;
          run.outcome = outcome;
        }
        break;
    }
  }
  // A run that never ended: told as load.ts tells the model (the first call left was in progress).
  for (const run of runs) {
    if (run.outcome) continue;
    let inProgress = true;
    for (const item of run.items) {
      if (!unanswered.has(item) || item.type !== 'tool') continue;
      item.result = item.note = inProgress ? INTERRUPTED : NOT_STARTED;
      inProgress = false;
    }
  }
  const { id, cwd, created, parent } = loaded.header;
  return { id, cwd, created, parent, runs };
}
