// What several tasks of one `conch run` add up to: the exit code of the most severe outcome, the
// counts, and the one --json document.
import { EXIT_CODES, exitCodeFor, SIGNAL_EXIT_CODES, type Outcome, type OutcomeStatus, type StopSignal } from '../agent/outcome.ts';
import { ENVELOPE_VERSION } from './envelope.ts';

type Ended = Pick<Outcome, 'status' | 'code' | 'signal'>;

/**
 * Exit codes, most severe first. A batch a signal ended (kill, a closed terminal) or the user
 * cancelled was stopped from outside; a failure is conch or the provider broken; an answer that never
 * matched --output-schema; then a task that ran out of time, of a limit, or met a policy denial.
 */
export const SEVERITY: number[] = [
  SIGNAL_EXIT_CODES.SIGTERM,
  SIGNAL_EXIT_CODES.SIGHUP,
  EXIT_CODES.cancelled,
  EXIT_CODES.failed,
  EXIT_CODES.output_invalid,
  EXIT_CODES.timed_out,
  EXIT_CODES.limit_exceeded,
  EXIT_CODES.policy_denied,
];

/** 0 only when every task completed; otherwise the exit code of the most severe outcome. */
export function batchExitCode(outcomes: Ended[]): number {
  const codes = new Set(outcomes.map(exitCodeFor));
  return SEVERITY.find((code) => codes.has(code)) ?? EXIT_CODES.completed;
}

/** A run's envelope plus its task; a task that never started has null provider, model, mode, sandbox. */
export type TaskEnvelope = { status: OutcomeStatus; code?: Outcome['code']; signal?: Outcome['signal']; task: string } & Record<string, unknown>;

const STATUSES: OutcomeStatus[] = ['completed', 'failed', 'cancelled', 'timed_out', 'limit_exceeded', 'policy_denied'];

export function batchSummary(outcomes: Ended[], durationMs: number) {
  const counts = Object.fromEntries(STATUSES.map((status) => [status, outcomes.filter((o) => o.status === status).length])) as Record<OutcomeStatus, number>;
  return { tasks: outcomes.length, ...counts, exitCode: batchExitCode(outcomes), durationMs };
}

/** `{ version, tasks: [envelope…], summary }`, each envelope as a single run's plus its task. */
export function batchDocument(tasks: TaskEnvelope[], durationMs: number) {
  return { version: ENVELOPE_VERSION, tasks, summary: batchSummary(tasks, durationMs) };
}

/** The stderr line after the tasks: "3 tasks: 2 completed, 1 failed". */
export function summaryLine(outcomes: Ended[]): string {
  const parts = STATUSES.flatMap((status) => {
    const which = outcomes.flatMap((o, i) => (o.status === status ? [i + 1] : []));
    if (which.length === 0) return [];
    // The tasks that did not complete by number, as their `── task N/M` headers show them.
    const named = status === 'completed' || which.length === outcomes.length ? '' : ` (${which.length === 1 ? 'task' : 'tasks'} ${which.join(', ')})`;
    return [`${which.length} ${status}${named}`];
  });
  return `${outcomes.length} ${outcomes.length === 1 ? 'task' : 'tasks'}: ${parts.join(', ')}`;
}

export interface BatchDocument {
  version: number;
  tasks: TaskEnvelope[];
  summary: ReturnType<typeof batchSummary>;
}

/**
 * The document the watchdog prints when it ends the runs itself (plugin code stopped the main
 * thread): each task marked `unfinished` ends as `ending` says; the finished keep their envelopes.
 */
export function endUnfinished(doc: BatchDocument, ending: { status: 'timed_out' | 'cancelled'; message: string; durationMs: number; signal?: StopSignal }) {
  const signal = ending.status === 'cancelled' ? ending.signal : undefined;
  const exitCode = exitCodeFor({ status: ending.status, signal });
  const tasks = doc.tasks.map(({ unfinished, ...task }) =>
    unfinished ? { ...task, status: ending.status, message: ending.message, partial: true, ...(signal ? { signal } : {}), exitCode } : task,
  ) as TaskEnvelope[];
  return { ...doc, tasks, summary: batchSummary(tasks, ending.durationMs) };
}
