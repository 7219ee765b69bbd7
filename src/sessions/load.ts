// Read a session file back into a conversation. A file is trusted only as far as it parses: a torn
// last line (a write cut short) or a corrupt line is skipped with a warning, a file whose first line
// is not a conch session header is refused, and a run that never ended (killed mid-turn) is sealed
// so the conversation can continue.
import type { Message, ToolResultMessage } from '../providers/types.ts';
import { readSessionFile, SessionError } from './dir.ts';
import { withoutOutputNoteBlocks } from '../agent/output-note.ts';
import { withoutInlinedSkills } from '../skills/catalog.ts';
import { isSessionRecord } from './record-shape.ts';
import {
  restoreBlocks,
  SESSION_FORMAT,
  SESSION_VERSION,
  type EndRecord,
  type HeaderRecord,
  type PolicySnapshot,
  type RunRecord,
  type SessionRecord,
  type StoredMessage,
} from './records.ts';

export interface RunInfo {
  runId: string;
  time: string;
  task: string;
  provider: string;
  model: string;
  /** null: the run never recorded its end (the process was killed). */
  end: EndRecord | null;
}

export interface LoadedSession {
  path: string;
  header: HeaderRecord;
  /** What the next run continues: failed runs left out, interrupted tool calls sealed. */
  conversation: Message[];
  runs: RunInfo[];
  /** Every record after the header, in order (for `sessions show` and for forks). */
  records: SessionRecord[];
  /** The policy the session's first run was recorded under (what a resumed run may have at most). */
  policy: PolicySnapshot | null;
  /** Image hashes the file holds. */
  blobs: Set<string>;
  /** Bytes up to the end of the last whole line: where the next record goes. */
  validBytes: number;
  warnings: string[];
}

/**
 * What a call without a recorded result is told when its run never ended (the process was killed or
 * lost). The loop runs a turn's calls one at a time and records each result as it comes, so the
 * first call without one was in progress and may have done its work; the ones after it never started.
 */
export const INTERRUPTED = 'interrupted: conch stopped (the process was killed or lost) while this call was in progress; it may have done some or all of its work, but its result was never recorded';
export const NOT_STARTED = 'not run: conch stopped (the process was killed or lost) before this call started';

export function loadSession(path: string): LoadedSession {
  return parseSession(path, readSessionFile(path));
}

export function parseSession(path: string, text: string): LoadedSession {
  const warnings: string[] = [];
  const lastNewline = text.lastIndexOf('\n');
  const whole = lastNewline === -1 ? '' : text.slice(0, lastNewline);
  if (lastNewline !== text.length - 1 && text.length > 0) {
    warnings.push(`${path}: the last line is truncated (a write was cut short); it was skipped`);
  }
  const lines = whole === '' ? [] : whole.split('\n');
  const header = parseHeader(path, lines[0]);
  const records: SessionRecord[] = [];
  for (let i = 1; i < lines.length; i++) {
    const line = lines[i]!;
    if (line === '') continue;
    try {
      const record: unknown = JSON.parse(line);
      if (!isSessionRecord(record)) throw new Error('not a record');
      records.push(record);
    } catch {
      warnings.push(`${path}: line ${i + 1} is not a valid record; it was skipped`);
    }
  }
  const built = build(records);
  return {
    path,
    header,
    ...built,
    records,
    validBytes: Buffer.byteLength(whole) + (lines.length > 0 ? 1 : 0),
    warnings,
  };
}

export function parseHeader(path: string, line: string | undefined): HeaderRecord {
  let header: Partial<HeaderRecord> | null = null;
  try {
    header = line ? JSON.parse(line) : null;
  } catch {
    header = null;
  }
  if (!header || header.t !== 'session' || header.format !== SESSION_FORMAT || typeof header.id !== 'string' || typeof header.cwd !== 'string') {
    throw new SessionError(`${path} is not a conch session file (its first line is not a session header); remove it from the session directory.`);
  }
  if (typeof header.version !== 'number' || header.version > SESSION_VERSION) {
    throw new SessionError(`${path} was written by a newer conch (session format ${header.version}); update conch to read it.`);
  }
  return header as HeaderRecord;
}

function build(records: SessionRecord[]) {
  const conversation: Message[] = [];
  const runs: RunInfo[] = [];
  const blobs = new Map<string, string>();
  let policy: PolicySnapshot | null = null;
  let runStart = 0;
  let current: RunInfo | null = null;
  for (const record of records) {
    switch (record.t) {
      case 'run':
        seal(conversation);
        runStart = conversation.length;
        current = runInfo(record);
        runs.push(current);
        // The session's policy is the one it was started under; a narrower run does not narrow it for good.
        policy ??= record.policy;
        break;
      case 'blob':
        blobs.set(record.hash, record.data);
        break;
      case 'msg': {
        const m = restoreMessage(record.m, blobs);
        // The listing shows what the user asked, not the note an output schema or --skill added to it.
        if (current && current.task === '' && m.role === 'user') current.task = runTask(m.content);
        if (m.role === 'user') seal(conversation);
        conversation.push(m);
        break;
      }
      case 'result': {
        const result: ToolResultMessage = { ...record.r, content: restoreBlocks(record.r.content, blobs) };
        const last = conversation.at(-1);
        if (last?.role === 'tool') last.results.push(result);
        else if (last?.role === 'assistant') conversation.push({ role: 'tool', results: [result] });
        break;
      }
      case 'end':
        if (current && current.runId === record.runId) current.end = record;
        seal(conversation);
        // As in ACP: a failed run (a prompt the provider rejected) would only fail again if resent.
        // An answer that missed the output schema is no such prompt: what the run did stays.
        if (record.status === 'failed' && record.code !== 'output_invalid') conversation.length = runStart;
        break;
    }
  }
  seal(conversation);
  return { conversation, runs, policy, blobs: new Set(blobs.keys()) };
}

/** What the user asked in a run's first message: not the note an output schema or --skill added to it. */
export function runTask(content: TaskBlock[]): string {
  return withoutInlinedSkills(taskText(withoutOutputNoteBlocks(content).blocks));
}

/** A user message's block, restored or as stored (an image is named by its type either way). */
type TaskBlock = { type: string; text?: string; mediaType?: string };

export function runInfo(record: RunRecord): RunInfo {
  return { runId: record.runId, time: record.time, task: '', provider: record.provider, model: record.model, end: null };
}

function restoreMessage(m: StoredMessage, blobs: Map<string, string>): Message {
  if (m.role === 'user') return { role: 'user', content: restoreBlocks(m.content, blobs) };
  return { ...m, toolCalls: m.toolCalls ?? [] };
}

function taskText(content: TaskBlock[]): string {
  return content.map((b) => (b.type === 'text' ? b.text : `[${b.mediaType}]`)).join(' ');
}

/** Every tool call without a result gets one saying what became of it, as the loop does on a stop. */
function seal(conversation: Message[]): void {
  let results: ToolResultMessage[];
  let assistant = conversation.at(-1);
  if (assistant?.role === 'tool') {
    results = assistant.results;
    assistant = conversation.at(-2);
  } else if (assistant?.role === 'assistant' && assistant.toolCalls.length > 0) {
    results = [];
    conversation.push({ role: 'tool', results });
  } else return;
  if (assistant?.role !== 'assistant') return;
  const answered = new Set(results.map((r) => r.callId));
  let inProgress = true;
  for (const call of assistant.toolCalls) {
    if (answered.has(call.id)) continue;
    results.push({ callId: call.id, name: call.name, content: [{ type: 'text', text: inProgress ? INTERRUPTED : NOT_STARTED }], isError: true });
    inProgress = false;
  }
}
