// `conch run "task one" "task two" …` / `--tasks-file FILE`: one host start (host/start.ts startHost:
// config, provider, plugins and MCP servers once), then each task its own run, at most
// --max-concurrent at a time. Output in task order under a header per task; --json prints one
// document; the exit code is the most severe task's (batch.ts).
import { AsyncLocalStorage } from 'node:async_hooks';
import { randomUUID } from 'node:crypto';
import { emptyUsage, exitCodeFor, SignalStop, type Outcome } from '../agent/outcome.ts';
import { teeSinks, type EventSink } from '../agent/events.ts';
import type { OutputSchema } from '../agent/output.ts';
import type { CliFlags } from '../config/types.ts';
import { stderr, stdout } from '../core/stdio.ts';
import { planStart, startHost, type StartedHost, type StartPlan } from '../host/start.ts';
import { offersMcpTools } from '../host/mcp.ts';
import type { Approver } from '../policy/command-rules.ts';
import { batchDocument, batchExitCode, summaryLine, type TaskEnvelope } from './batch.ts';
import { envelope, envelopeSink, type KnownFacts } from './envelope.ts';
import { cancelOnSignals, unlessStopped } from './interrupts.ts';
import { OrderedOutput, type Section } from './ordered-output.ts';
import { describeOutcome, humanSink, noticeSink, terminalSafe } from './render.ts';
import { configFacts, stdinTooLargeOutcome, type RunOutput } from './run.ts';
import { setupFailure, terminalApprover } from './setup.ts';
import { binaryStdinError, composeTask, readPipedStdin, stdinStoppedOutcome } from './stdin.ts';
import { readTasksFile } from './tasks.ts';
import { terminalOptions } from './terminal.ts';
import { traceFromFlags, type Trace } from './trace.ts';
import { secretValues } from '../config/secret-values.ts';
import type { Watchdog } from './watchdog.ts';

export interface TasksOutput extends RunOutput {
  maxConcurrent: number;
}

interface Finished {
  runId: string;
  outcome: Outcome;
  facts: KnownFacts | null;
}

/** `source`: the tasks, or the --tasks-file to read them from. */
export async function runTasksCli(source: string[] | string, flags: CliFlags, out: TasksOutput): Promise<number> {
  const startedAt = Date.now();
  const cwd = process.cwd();
  let planned: StartPlan;
  let tasks: string[];
  let outputSchema: OutputSchema | undefined;
  try {
    tasks = typeof source === 'string' ? readTasksFile(source) : source;
    planned = await planStart(flags, cwd, { session: out.session });
    // --output-schema checks every task's answer.
    if (out.outputSchema !== undefined) outputSchema = (await import('../host/output-schema.ts')).loadOutputSchema(out.outputSchema, cwd);
  } catch (error) {
    return setupFailure(error, out.json, randomUUID());
  }
  const { config } = planned;
  const controller = new AbortController();
  // Installed before stdin is read, as in run.ts: a signal as the input ends is not lost.
  const interrupts = cancelOnSignals(controller, out.json);
  const early = (code: number) => {
    interrupts.remove();
    return code;
  };
  // Piped input goes to every task (`git diff | conch run "review the tests" "review the docs"`).
  const input = await readPipedStdin(config.limits.stdin_bytes, config.limits.deadline_ms, controller.signal);
  if ('tooLarge' in input || 'stopped' in input) {
    const outcome = 'tooLarge' in input ? stdinTooLargeOutcome(input.maxBytes) : stdinStoppedOutcome(input.stopped, config.limits.deadline_ms);
    if (!out.json) stderr.write(`${describeOutcome(outcome)}\n`);
    return early(report(tasks, tasks.map(() => ({ runId: randomUUID(), outcome, facts: null })), out.json, startedAt));
  }
  if ('binary' in input) return early(setupFailure(binaryStdinError(input.bytes), out.json, randomUUID()));

  const output = new OrderedOutput({ stdout, stderr }, tasks.length);
  // Which task a question comes from: the guard is shared, the asking run is the async context.
  const asking = new AsyncLocalStorage<number>();
  let host: StartedHost;
  let trace: Trace | undefined;
  let watchdog: Watchdog | undefined;
  try {
    trace = traceFromFlags(out, secretValues(config));
    const ask = out.json ? undefined : await terminalApprover(controller.signal);
    // The guard asks one question at a time; while it is on screen, every task's output waits.
    const approver: Approver | undefined = ask && (async (command, rule) => {
      output.pause();
      try {
        const index = asking.getStore();
        if (index !== undefined) stderr.write(`\nconch: task ${index + 1} (${label(tasks[index]!)}) asks:`);
        return await ask(command, rule);
      } finally {
        output.resume();
      }
    });
    const started = await unlessStopped(startHost(flags, cwd, {
      approver,
      planned,
      beforePluginImport: async (loadTimeoutMs) => {
        const { startWatchdog } = await import('./watchdog.ts');
        watchdog ??= startWatchdog(randomUUID(), out.json, config.limits.deadline_ms);
        // A plugin stuck while it loads ends every task: the document is the batch's from the start.
        watchdog.document(batchDocument(taskEnvelopes(tasks, [], [], tasks.map(() => configFacts(config))), 0));
        watchdog.loading(loadTimeoutMs);
      },
    }), controller.signal);
    // Stopped while plugins loaded or MCP servers started: no task began.
    if (started === 'stopped') return early(report(tasks, tasks.map(() => notStarted(controller.signal.reason)), out.json, startedAt));
    host = started;
  } catch (error) {
    return early(setupFailure(error, out.json, randomUUID()));
  } finally {
    watchdog?.loading(null);
  }
  // Known once the servers are: their tokens are as secret as the provider key.
  trace?.hide(host.session.secrets);
  if (offersMcpTools(host.session)) {
    const { startWatchdog } = await import('./watchdog.ts');
    watchdog ??= startWatchdog(randomUUID(), out.json, config.limits.deadline_ms);
  }
  for (const warning of host.warnings) stderr.write(`conch: ${terminalSafe(warning)}\n`);
  const shownWarnings = host.warnings.length;

  const finished: Finished[] = new Array(tasks.length);
  const runIds: string[] = [];
  // The facts of the runs under way, so a task the watchdog ends still says where it ran.
  const running: KnownFacts[] = [];
  const runOne = async (index: number): Promise<void> => {
    const section = output.section(index);
    if (!out.json) section.stdout.write(`${index > 0 ? '\n' : ''}── task ${index + 1}/${tasks.length}: ${label(tasks[index]!)}\n`);
    if (controller.signal.aborted) {
      finished[index] = notStarted(controller.signal.reason);
      if (!out.json) section.stderr.write(`${describeOutcome(finished[index]!.outcome)}\n`);
    } else finished[index] = await runTask(host, index, section);
    section.done();
    tellWatchdog();
  };
  // Should plugin code stop the main thread, the watchdog prints this document, the rest ended.
  const tellWatchdog = () => watchdog?.document(batchDocument(taskEnvelopes(tasks, finished, runIds, running), Date.now() - startedAt));
  tellWatchdog();
  const runTask = async (started: StartedHost, index: number, section: Section): Promise<Finished> => {
    const runId = randomUUID();
    runIds[index] = runId;
    tellWatchdog();
    const run = started.task();
    const facts = envelopeSink();
    const display = { ...(await terminalOptions(out.json, cwd)), spinner: false, header: index === 0, ...(outputSchema !== undefined ? { jsonAnswer: true } : {}) };
    const sinks: EventSink[] = out.json ? [facts, noticeSink(section.stderr)] : [humanSink(section, display)];
    if (watchdog && out.json) {
      sinks.push({
        emit(event) {
          if (event.type !== 'run.started' || !facts.facts) return;
          running[index] = facts.facts;
          tellWatchdog();
        },
      });
    }
    if (trace) sinks.push(trace);
    // Each task has its own deadline; the watchdog keeps the latest of them.
    watchdog?.arm(config.limits.deadline_ms, interrupts.onSignal);
    const options = { runId, sink: teeSinks(...sinks), signal: controller.signal, ...(outputSchema !== undefined ? { outputSchema } : {}) };
    const outcome = await asking.run(index, () => run.run(composeTask(tasks[index]!, input.text), options));
    for (const warning of run.recording.warnings) section.stderr.write(`conch: ${terminalSafe(warning)}\n`);
    if (!out.json && run.recording.id && stderr.isTTY) section.stderr.write(`session ${run.recording.id}\n`);
    return { runId, outcome, facts: facts.facts };
  };
  try {
    await pool(tasks.length, out.maxConcurrent, runOne);
  } finally {
    interrupts.remove();
    await host.dispose();
  }
  // dispose() adds what went wrong at the end (spans the collector never got).
  for (const warning of host.warnings.slice(shownWarnings)) stderr.write(`conch: ${terminalSafe(warning)}\n`);
  // The watchdog ended the runs already (the main thread was stuck until now): it exits the process.
  if (watchdog && !watchdog.finishing()) await new Promise(() => {});
  watchdog?.stop();
  return report(tasks, finished, out.json, startedAt);
}

/** Tasks still queued when Ctrl-C (or another signal) came never start: cancelled, having done nothing. */
function notStarted(reason?: unknown): Finished {
  const outcome: Outcome = {
    status: 'cancelled',
    message: reason instanceof SignalStop && reason.signal !== 'SIGINT' ? `${reason.message}, before it started` : 'cancelled before it started',
    ...(reason instanceof SignalStop && { signal: reason.signal }),
    output: '',
    stopReason: null,
    usage: emptyUsage(),
    counts: { modelCalls: 0, toolCalls: 0, toolErrors: 0 },
    durationMs: 0,
  };
  return { runId: randomUUID(), outcome, facts: null };
}

function report(tasks: string[], finished: Finished[], json: boolean, startedAt: number): number {
  const outcomes = finished.map((f) => f.outcome);
  if (json) {
    stdout.write(`${JSON.stringify(batchDocument(taskEnvelopes(tasks, finished, []), Date.now() - startedAt))}\n`);
  } else stderr.write(`conch: ${summaryLine(outcomes)}\n`);
  return batchExitCode(outcomes);
}

/** Each task's envelope; one not finished yet is marked `unfinished` (for the watchdog to end). */
function taskEnvelopes(tasks: string[], finished: (Finished | undefined)[], started: string[], running: KnownFacts[] = []): TaskEnvelope[] {
  return tasks.map((task, i) => {
    const f = finished[i] ?? { runId: started[i] ?? null, outcome: { ...notStarted().outcome, status: 'timed_out', message: undefined }, facts: running[i] ?? null };
    return {
      ...envelope(f.runId as string, f.outcome, f.facts, exitCodeFor(f.outcome)),
      task,
      ...(finished[i] ? {} : { unfinished: true }),
    };
  });
}

/** The task's first line, short enough for a header. */
function label(task: string): string {
  const first = terminalSafe(task.trim().split('\n')[0] ?? '');
  return first.length > 60 ? `${first.slice(0, 59)}…` : first;
}

/** Run work(0) … work(count - 1), at most `limit` at a time, each started in order. */
async function pool(count: number, limit: number, work: (index: number) => Promise<void>): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < count) await work(next++);
  };
  await Promise.all(Array.from({ length: Math.min(limit, count) }, worker));
}
