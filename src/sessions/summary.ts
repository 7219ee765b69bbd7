// What a listing needs of a session file (`conch sessions`, ACP session/list): its header and its
// runs, each with its task and how it ended, without restoring the conversation. A session of a
// piped diff and many tool outputs is megabytes of message lines, and a store holds hundreds: the
// listing parses only the header, the run and end records and each run's first message; every other
// line is recognised by its start (the writer puts the record type first) and skipped unparsed.
import { readSessionFile } from './dir.ts';
import { parseHeader, runInfo, runTask, type RunInfo } from './load.ts';
import { isSessionRecord } from './record-shape.ts';
import { headerCwd } from './store.ts';
import type { HeaderRecord, SessionRecord } from './records.ts';

export interface SessionSummary {
  header: HeaderRecord;
  runs: RunInfo[];
}

/** Lines a listing never needs: tool results, image data, and messages after a run's first. */
const SKIPPED = ['{"t":"result",', '{"t":"blob",'];
const MESSAGE = '{"t":"msg",';

/** The session at `path`; null when `cwd` is given and the session belongs to another workspace. */
export function summarizeSession(path: string, cwd?: string): SessionSummary | null {
  // Another workspace's session is told by its first line alone (a damaged one is read whole, to say why).
  const owner = cwd === undefined ? null : headerCwd(path);
  if (typeof owner === 'string' && owner !== cwd) return null;
  const text = readSessionFile(path);
  // A torn last line (a write cut short) is left out, as loading does.
  const end = text.lastIndexOf('\n');
  const headerEnd = text.indexOf('\n');
  const header = parseHeader(path, headerEnd === -1 ? undefined : text.slice(0, headerEnd));
  if (cwd !== undefined && header.cwd !== cwd) return null;
  const runs: RunInfo[] = [];
  let current: RunInfo | null = null;
  for (let start = headerEnd + 1; start > 0 && start <= end; ) {
    const next = text.indexOf('\n', start);
    const at = (prefix: string) => text.startsWith(prefix, start);
    const wanted = !SKIPPED.some(at) && (!at(MESSAGE) || (current !== null && current.task === ''));
    const line = wanted ? text.slice(start, next) : '';
    start = next + 1;
    if (line === '') continue;
    let record: SessionRecord;
    try {
      const parsed: unknown = JSON.parse(line);
      if (!isSessionRecord(parsed)) continue;
      record = parsed;
    } catch {
      // Loading the session warns of it; a listing shows what it can.
      continue;
    }
    if (record.t === 'run') runs.push((current = runInfo(record)));
    else if (record.t === 'msg' && current && record.m.role === 'user') current.task = runTask(record.m.content);
    else if (record.t === 'end' && current?.runId === record.runId) current.end = record;
  }
  return { header, runs };
}
