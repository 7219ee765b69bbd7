// `conch sessions`: list this workspace's sessions, show one's transcript, remove or prune them.
import { realpathSync } from 'node:fs';
import { EXIT_CODES } from '../agent/outcome.ts';
import { parseDuration } from '../core/duration.ts';
import { SessionError, sessionsDir } from '../sessions/dir.ts';
import { loadSession, type LoadedSession } from '../sessions/load.ts';
import { SessionStore } from '../sessions/store.ts';
import { summarizeSession, type SessionSummary } from '../sessions/summary.ts';
import { transcript } from '../sessions/transcript.ts';
import { terminalSafe } from './render.ts';
import { stderr, stdout } from '../core/stdio.ts';
import { UsageError } from './argv.ts';
import { setupEnvelope } from './envelope.ts';

export interface SessionsOptions {
  json: boolean;
  all: boolean;
  olderThan?: string;
}

/** How much of a session's first task the listing carries. */
const TASK_PREVIEW = 500;
const USAGE = 'conch sessions [--all] [--json] | sessions show ID [--json] | sessions rm ID | sessions prune --older-than 30d';

export async function sessionsCommand(action: string | undefined, id: string | undefined, options: SessionsOptions): Promise<number> {
  const store = new SessionStore(sessionsDir(process.env));
  // `conch sessions --older-than 30d` reads as a filtered list; the flag only ever removes.
  if (options.olderThan !== undefined && action !== 'prune') usage(`--older-than goes with prune: conch sessions prune --older-than ${options.olderThan}`);
  try {
    switch (action ?? 'list') {
      case 'list':
        return list(store, options);
      case 'show':
        if (!id) return usage('conch sessions show ID [--json]');
        return show(loadSession(store.resolve(id).path), options.json);
      case 'rm':
        if (!id) return usage('conch sessions rm ID');
        stdout.write(`removed session ${store.remove(id)}\n`);
        return 0;
      case 'prune': {
        if (options.olderThan === undefined) return usage('conch sessions prune --older-than DURATION (e.g. 30d, 12h)');
        // Elsewhere a bare number is seconds (--timeout 90); here that would remove nearly every
        // session for a user who meant days, so the unit must be given.
        if (/^\s*\d+(\.\d+)?\s*$/.test(options.olderThan)) {
          stderr.write(`conch: --older-than ${options.olderThan}: give the unit, e.g. ${options.olderThan.trim()}d for days or ${options.olderThan.trim()}h for hours; nothing was removed.\n`);
          return EXIT_CODES.setup_error;
        }
        const duration = parseDuration(options.olderThan);
        if (!duration.ok) {
          stderr.write(`conch: --older-than ${options.olderThan}: ${duration.problem}.\n`);
          return EXIT_CODES.setup_error;
        }
        const removed = store.prune({ olderThanMs: duration.ms });
        stdout.write(`removed ${count(removed.length, 'session')} last active more than ${options.olderThan} ago\n`);
        return 0;
      }
      default:
        return usage(`unknown 'sessions' action '${action}'; ${USAGE}`);
    }
  } catch (error) {
    if (!(error instanceof SessionError)) throw error;
    // --json promises a document on stdout, a failed one too (`conch sessions show ID --json | jq`).
    if (options.json) stdout.write(`${JSON.stringify(setupEnvelope(null, error.message))}\n`);
    stderr.write(`conch: ${terminalSafe(error.message)}\n`);
    return EXIT_CODES.setup_error;
  }
}

function list(store: SessionStore, options: SessionsOptions): number {
  const cwd = realpathSync(process.cwd());
  const rows = [];
  for (const file of store.files()) {
    let summary: SessionSummary | null;
    try {
      summary = summarizeSession(file.path, options.all ? undefined : cwd);
    } catch (error) {
      if (error instanceof SessionError) stderr.write(`conch: ${terminalSafe(error.message)}\n`);
      continue;
    }
    if (!summary) continue;
    const last = summary.runs.at(-1);
    const task = summary.runs[0]?.task ?? '';
    rows.push({
      id: summary.header.id,
      cwd: summary.header.cwd,
      created: summary.header.created,
      updated: new Date(file.mtimeMs).toISOString(),
      parent: summary.header.parent?.id ?? null,
      turns: summary.runs.length,
      outcome: last ? (last.end?.status ?? 'interrupted') : null,
      // A listing, not the transcript: a task of a piped diff is cut (`sessions show` has it whole).
      task: preview(task),
      taskChars: task.length,
    });
  }
  if (options.json) {
    stdout.write(`${JSON.stringify({ sessions: rows }, null, 2)}\n`);
    return 0;
  }
  if (rows.length === 0) {
    stderr.write(options.all ? 'conch: no sessions stored yet\n' : `conch: no sessions in ${terminalSafe(cwd)} (conch sessions --all lists every workspace's)\n`);
    return 0;
  }
  for (const r of rows) {
    // A workspace's path is its folder's name as cloned: shown, never obeyed.
    const where = options.all ? `  ${terminalSafe(r.cwd)}` : '';
    stdout.write(`${r.id}  ${age(Date.parse(r.updated)).padStart(4)}  ${String(r.turns).padStart(3)} ${r.turns === 1 ? 'turn ' : 'turns'}  ${(r.outcome ?? '-').padEnd(14)} ${oneLine(r.task)}${where}\n`);
  }
  return 0;
}

/** The task's first TASK_PREVIEW characters, never half a surrogate pair. */
function preview(task: string): string {
  if (task.length <= TASK_PREVIEW) return task;
  return `${task.slice(0, TASK_PREVIEW).replace(/[\uD800-\uDBFF]$/, '')}…`;
}

function show(loaded: LoadedSession, json: boolean): number {
  for (const warning of loaded.warnings) stderr.write(`conch: ${terminalSafe(warning)}\n`);
  const t = transcript(loaded);
  if (json) {
    stdout.write(`${JSON.stringify(t, null, 2)}\n`);
    return 0;
  }
  stdout.write(`session ${t.id}  ${terminalSafe(t.cwd)}  created ${t.created}${t.parent ? `  forked from ${t.parent.id} after ${count(t.parent.runs, 'turn')}` : ''}\n`);
  for (const [i, run] of t.runs.entries()) {
    const end = run.outcome ? `${run.outcome.status}${run.outcome.code ? ` (${run.outcome.code})` : ''}` : 'interrupted';
    stdout.write(`\n── turn ${i + 1} · ${run.time} · ${terminalSafe(`${run.provider}/${run.model}`)} · ${end}\n`);
    for (const item of run.items) {
      if (item.type === 'task') stdout.write(`> ${terminalSafe(item.text)}\n${item.outputSchema ? '  (the answer had to match --output-schema)\n' : ''}`);
      else if (item.type === 'repair') {
        // The problems it quoted are its "- path: message" lines.
        const problems = item.text.split('\n').filter((l) => l.startsWith('- ')).map((l) => l.slice(2));
        stdout.write(`  (the answer did not match --output-schema; conch asked for a corrected one: ${oneLine(problems.join('; '))})\n`);
      }
      else if (item.type === 'answer') stdout.write(`${terminalSafe(item.text)}\n`);
      else {
        // conch's note on a call cut short is shown whole; what the tool gave is cut like any result.
        const rest = item.note ? item.result.slice(item.note.length).trim() : item.result;
        const shown = item.note ? `${terminalSafe(item.note)}${rest ? `\n      ${oneLine(rest)}` : ''}` : oneLine(rest);
        stdout.write(`  › ${terminalSafe(item.name)} ${oneLine(item.arguments)}\n    ${item.isError ? '✗' : '✓'} ${shown}\n`);
      }
    }
    if (run.outcome?.message) stdout.write(`  (${terminalSafe(run.outcome.message)})\n`);
  }
  return 0;
}

function count(n: number, noun: string): string {
  return `${n} ${noun}${n === 1 ? '' : 's'}`;
}

function age(ms: number): string {
  const s = Math.max(0, Math.round((Date.now() - ms) / 1000));
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.round(s / 60)}m`;
  if (s < 86_400) return `${Math.round(s / 3600)}h`;
  return `${Math.round(s / 86_400)}d`;
}

function oneLine(text: string): string {
  const flat = terminalSafe(text).replace(/\s+/g, ' ').trim();
  return flat.length > 80 ? `${flat.slice(0, 79)}…` : flat;
}

/** main.ts reports it as any usage error: the pointer to --help, and under --json the document. */
function usage(text: string): never {
  throw new UsageError(`usage: ${text}`);
}
