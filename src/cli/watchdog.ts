// A deadline conch promises holds whatever a plugin does. Plugin code runs on the main thread, so an
// execute that never yields (`for (;;) {}`) stops every timer, the run deadline and the JavaScript
// signal listeners with it. The watchdog is a Worker, on a thread of its own: the main thread bumps
// a heartbeat in shared memory, and when the heartbeat stops past the deadline (or after SIGINT,
// SIGTERM or SIGHUP) plus a grace period, the worker ends the run itself (watchdog-worker.ts).
//
// It costs a thread, so it starts only when plugins are about to be imported: a run with only the
// kernel tools, whose code never blocks the loop, does without. The same holds for `conch tools`
// (plugins loading, no deadline), `conch acp` and interactive mode (each turn armed with its deadline,
// nothing between turns): a plugin stuck while it loads ends the process once its load time is up,
// and a signal the main thread cannot answer still ends it.
import { constants } from 'node:os';
import type { EventSink, RunEvent } from '../agent/events.ts';
import { addUsage, emptyUsage, EXIT_CODES, type Outcome } from '../agent/outcome.ts';
import { watchExitRemovals } from '../process/exit-cleanup.ts';
import { watchLiveGroups } from '../process/spawn.ts';
import { envelope, NOT_STARTED, type KnownFacts } from './envelope.ts';
import { shareTranspiling } from '../plugins/transpiling.ts';
import { watchPluginLoads } from '../plugins/loading.ts';
import { BEAT, BEAT_MS, PHASE, STATE_SLOTS, TRANSPILING, type FromWatchdog, type ToWatchdog } from './watchdog-protocol.ts';

export interface Watchdog {
  /**
   * The run starts: its deadline counts from now (null: none, as between the turns of a
   * conversation); signals go through the watchdog from here on. Call it again after adding or
   * removing a signal listener: Bun takes the signals back then. `fresh: false` when no new run
   * starts (a signal not yet answered still counts).
   */
  arm(deadlineMs: number | null, onSignal: (name: string) => void, fresh?: boolean): void;
  /** Plugins are about to load, each within `limitMs` (null: they are done). */
  loading(limitMs: number | null): void;
  /** Keeps the watchdog's copy of the --json envelope current, so it can print one. */
  readonly sink: EventSink;
  /** Several tasks: the document to print instead (batch.ts), kept current by the caller. */
  document(doc: Record<string, unknown>): void;
  /** The main thread ends the run itself; false when the watchdog already is (then wait for it). */
  finishing(): boolean;
  /** After `finishing`, when the process goes on (the next turn of a conversation). */
  resume(): void;
  stop(): void;
}

/**
 * Start before the first plugin code runs. Until `arm`, the deadline counts from here, and a signal
 * ends the process as Bun's default would (conch has no listener yet), with the exit hooks' cleanup.
 * `known`: the envelope facts known before run.started brings them all (null where not yet).
 */
export function startWatchdog(runId: string, json: boolean, deadlineMs: number | null, label = 'the run', known: KnownFacts = NOT_STARTED): Watchdog {
  const shared = new SharedArrayBuffer(STATE_SLOTS * Int32Array.BYTES_PER_ELEMENT);
  const state = new Int32Array(shared);
  const url = new URL(import.meta.url.endsWith('.ts') ? './watchdog-worker.ts' : './watchdog-worker.js', import.meta.url);
  const worker = new Worker(url.href, { smol: true } as WorkerOptions);
  worker.unref();
  const send = (message: ToWatchdog) => worker.postMessage(message);
  const startedAt = Date.now();
  send({ type: 'start', state: shared, startedAt, deadlineAt: deadlineMs === null ? null : startedAt + deadlineMs, json, label });
  worker.onmessage = (event: MessageEvent<FromWatchdog>) => process.exit(128 + (constants.signals[event.data.name] ?? 0));
  const beat = setInterval(() => Atomics.add(state, BEAT, 1), BEAT_MS);
  beat.unref();
  shareTranspiling(state, TRANSPILING);
  watchLiveGroups((groups) => send({ type: 'groups', groups }));
  watchExitRemovals((dirs) => send({ type: 'dirs', dirs }));
  watchPluginLoads((path) => send({ type: 'plugin', path }));

  let facts = known;
  let output = '';
  let usage = emptyUsage();
  const counts = { modelCalls: 0, toolCalls: 0, toolErrors: 0 };
  const answeredBy: string[] = [];
  const thinking = { chars: 0, tokens: null };
  const post = () => {
    const partial: Outcome = { status: 'timed_out', output, stopReason: null, usage, counts, thinking, answeredBy, durationMs: Date.now() - startedAt };
    send({ type: 'envelope', doc: envelope(runId, partial, facts, EXIT_CODES.timed_out) });
  };
  post();
  // Only before a tool runs can the main thread get stuck, so that is when the copy must be fresh.
  const sink: EventSink = {
    emit(event: RunEvent) {
      switch (event.type) {
        case 'run.started':
          facts = { provider: event.provider, model: event.model, mode: event.mode, sandbox: event.sandbox, sessionId: event.session?.id ?? null };
          return post();
        case 'model.started':
          counts.modelCalls++;
          output = '';
          return;
        case 'text.delta':
          output += event.text;
          return;
        case 'thinking.delta':
          thinking.chars += event.text.length;
          return;
        case 'model.finished':
          usage = counts.modelCalls === 1 ? event.usage : addUsage(usage, event.usage);
          if (event.model) answeredBy.push(event.model);
          return;
        case 'tool.started':
          counts.toolCalls++;
          return post();
        case 'tool.finished':
          if (event.isError) counts.toolErrors++;
          return;
      }
    },
  };

  return {
    arm(deadlineMs, onSignal, fresh = true) {
      worker.onmessage = (event: MessageEvent<FromWatchdog>) => onSignal(event.data.name);
      send({ type: 'arm', deadlineAt: deadlineMs === null ? null : Date.now() + deadlineMs, fresh });
    },
    loading: (limitMs) => send({ type: 'loading', limitMs }),
    sink,
    document: (doc) => send({ type: 'envelope', doc }),
    finishing: () => Atomics.compareExchange(state, PHASE, 0, 1) !== 2,
    resume: () => void Atomics.compareExchange(state, PHASE, 1, 0),
    stop() {
      clearInterval(beat);
      shareTranspiling(null);
      watchLiveGroups(null);
      watchExitRemovals(null);
      watchPluginLoads(null);
      send({ type: 'stop' });
    },
  };
}
