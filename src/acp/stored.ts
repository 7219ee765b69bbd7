// session/list: the stored sessions as SessionInfo, newest first, optionally of one workspace.
import { realpathSync } from 'node:fs';
import type { SessionInfo } from '@agentclientprotocol/sdk';
import { SessionError, sessionsDir } from '../sessions/dir.ts';
import { summarizeSession } from '../sessions/summary.ts';
import { SessionStore } from '../sessions/store.ts';

const TITLE_MAX = 80;

export function listStored(given: string | null): SessionInfo[] {
  const out: SessionInfo[] = [];
  let cwd = given;
  try {
    if (given !== null) cwd = realpathSync(given);
  } catch {
    return [];
  }
  for (const file of new SessionStore(sessionsDir(process.env)).files()) {
    try {
      const loaded = summarizeSession(file.path, cwd ?? undefined);
      if (!loaded) continue;
      const task = (loaded.runs[0]?.task ?? '').trimStart().slice(0, TITLE_MAX * 4).replace(/\s+/g, ' ').trim();
      out.push({
        sessionId: loaded.header.id,
        cwd: loaded.header.cwd,
        title: task.length > TITLE_MAX ? `${task.slice(0, TITLE_MAX - 1)}…` : task || null,
        updatedAt: new Date(file.mtimeMs).toISOString(),
      });
    } catch (error) {
      // A file that is not a session is left out of the list, not a reason to fail it.
      if (!(error instanceof SessionError)) throw error;
    }
  }
  return out;
}
