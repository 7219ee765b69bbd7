// `conch "task"`: the host start (host/start.ts) → one run → output and exit code.
import type { CliFlags, Config } from '../config/types.ts';
import { emptyUsage, exitCodeFor, type Outcome } from '../agent/outcome.ts';
import { teeSinks, type EventSink } from '../agent/events.ts';
import { SetupError } from '../core/errors.ts';
import { planStart, startRun, type StartedRun, type StartPlan } from '../host/start.ts';
import { offersMcpTools } from '../host/mcp.ts';
import { describeOutcome, humanSink, noticeSink, terminalSafe } from './render.ts';
import { terminalOptions } from './terminal.ts';
import { stderr, stdout } from '../core/stdio.ts';
import { binaryStdinError, composeTask, readPipedStdin, stdinStoppedOutcome } from './stdin.ts';
import { cancelOnSignals, stoppedBeforeStart, unlessStopped } from './interrupts.ts';
import { envelope, envelopeSink, type KnownFacts } from './envelope.ts';
import { traceFromFlags, type Trace } from './trace.ts';
import { secretValues } from '../config/secret-values.ts';
import type { Watchdog } from './watchdog.ts';
import type { Approver } from '../policy/command-rules.ts';
import { setupFailure, terminalApprover } from './setup.ts';
import type { SessionChoice } from '../sessions/open.ts';
import type { OutputSchema } from '../agent/output.ts';

export interface RunOutput {
  json: boolean;
  trace?: string;
  traceContent: boolean;
  session?: SessionChoice;
  /** --output-schema FILE */
  outputSchema?: string;
}

export async function runCli(taskArg: string, flags: CliFlags, out: RunOutput): Promise<number> {
  const runId = crypto.randomUUID();
  let planned: StartPlan;
  try {
    planned = await planStart(flags, process.cwd(), { session: out.session });
  } catch (error) {
    return setupFailure(error, out.json, runId);
  }
  let outputSchema: OutputSchema | undefined;
  if (out.outputSchema !== undefined) {
    try {
      const { loadOutputSchema } = await import('../host/output-schema.ts');
      outputSchema = loadOutputSchema(out.outputSchema, process.cwd());
    } catch (error) {
      return setupFailure(error, out.json, runId);
    }
  }
  const { config } = planned;
  const controller = new AbortController();
  const display = await terminalOptions(out.json, process.cwd());
  const human = humanSink({ stdout, stderr }, outputSchema === undefined ? display : { ...display, jsonAnswer: true });
  // From before stdin is read to the run's end, one set of listeners: a signal that comes as the
  // input ends, or while the host starts, cancels the run rather than being lost between two owners.
  const interrupts = cancelOnSignals(controller, out.json, (line) => human.notice(line));
  const early = (code: number) => {
    interrupts.remove();
    return code;
  };
  // Read after the config: its limits bound stdin.
  const input = await readPipedStdin(config.limits.stdin_bytes, config.limits.deadline_ms, controller.signal);
  if ('tooLarge' in input) return early(notStarted(runId, stdinTooLargeOutcome(input.maxBytes), out.json));
  if ('stopped' in input) return early(notStarted(runId, stdinStoppedOutcome(input.stopped, config.limits.deadline_ms), out.json));
  if ('binary' in input) return early(setupFailure(binaryStdinError(input.bytes), out.json, runId));
  const task = composeTask(taskArg, input.text);
  if (!task) return early(setupFailure(new SetupError(noTaskMessage(out.session)), out.json, runId));

  let host: StartedRun;
  let trace: Trace | undefined;
  let watchdog: Watchdog | undefined;
  try {
    trace = traceFromFlags(out, secretValues(config));
    // `ask` rules prompt only on a terminal and never under --json; elsewhere they deny, saying so.
    const ask = out.json ? undefined : await terminalApprover(controller.signal);
    const approver: Approver | undefined = ask && (async (command, rule) => {
      human.hold();
      try {
        return await ask(command, rule);
      } finally {
        human.release();
      }
    });
    const started = await unlessStopped(startRun(flags, process.cwd(), {
      approver,
      planned,
      // Plugin code can block the main thread; from its first line on, a watchdog thread keeps the
      // deadline, and ends the run when a plugin never finishes loading (as -i, acp and tools do).
      beforePluginImport: async (loadTimeoutMs) => {
        const { startWatchdog } = await import('./watchdog.ts');
        watchdog ??= startWatchdog(runId, out.json, config.limits.deadline_ms, 'the run', configFacts(config));
        watchdog.loading(loadTimeoutMs);
      },
    }), controller.signal);
    if (started === 'stopped') return early(notStarted(runId, stoppedBeforeStart(controller.signal.reason, 'while conch started (plugins, MCP servers)'), out.json));
    host = started;
  } catch (error) {
    return early(setupFailure(error, out.json, runId));
  } finally {
    watchdog?.loading(null);
  }
  // Known once the servers are: their tokens are as secret as the provider key.
  trace?.hide(host.session.secrets);
  if (offersMcpTools(host.session)) {
    const { startWatchdog } = await import('./watchdog.ts');
    watchdog ??= startWatchdog(runId, out.json, config.limits.deadline_ms, 'the run', configFacts(config));
  }
  // Warnings quote files and servers (a failed MCP server's stderr): no control sequence passes.
  for (const warning of host.warnings) stderr.write(`conch: ${terminalSafe(warning)}\n`);
  const shownWarnings = host.warnings.length;

  const sinks: EventSink[] = [];
  const facts = envelopeSink();
  if (out.json) sinks.push(facts, noticeSink(stderr));
  else sinks.push(human);
  if (trace) sinks.push(trace);

  if (watchdog) {
    watchdog.arm(config.limits.deadline_ms, interrupts.onSignal);
    sinks.push(watchdog.sink);
  }

  let outcome: Outcome;
  try {
    outcome = await host.run(task, { runId, sink: teeSinks(...sinks), signal: controller.signal, ...(outputSchema !== undefined ? { outputSchema } : {}) });
  } finally {
    interrupts.remove();
    await host.dispose();
  }
  // The watchdog ended the run already (the main thread was stuck until now): it exits the process.
  if (watchdog && !watchdog.finishing()) await new Promise(() => {});
  watchdog?.stop();
  const { recording } = host;
  // dispose() adds what went wrong at the end (spans the collector never got).
  for (const warning of [...recording.warnings, ...host.warnings.slice(shownWarnings)]) stderr.write(`conch: ${terminalSafe(warning)}\n`);
  const code = exitCodeFor(outcome);
  if (out.json) stdout.write(`${JSON.stringify(envelope(runId, outcome, facts.facts, code))}\n`);
  else if (recording.id && stderr.isTTY) stderr.write(`session ${recording.id}  (conch -c to continue)\n`);
  return code;
}

/** Piped input ended the run before it started (too much of it, or it never ended): said as an outcome. */
function notStarted(runId: string, outcome: Outcome, json: boolean): number {
  const code = exitCodeFor(outcome);
  // No run started, so nothing to say about provider or sandbox; the keys stay, as in every envelope.
  if (json) stdout.write(`${JSON.stringify(envelope(runId, outcome, null, code))}\n`);
  else stderr.write(`${describeOutcome(outcome)}\n`);
  return code;
}

/** Going on with a session still takes the next task: the usage shown is the one for that. */
function noTaskMessage(session: SessionChoice | undefined): string {
  const how = session?.resume !== undefined ? `conch --resume ${session.resume}` : session?.continue ? 'conch -c' : 'conch';
  const what = how === 'conch' ? 'what to do' : 'what to do next';
  return `no task given. Usage: ${how} "${what}"  (or pipe text in: git diff | ${how} "review this")`;
}

/**
 * What the config tells of a run before it starts, for an envelope the watchdog may have to write
 * then (a plugin stuck while it loads): the sandbox is known once probed, the session id once its
 * recording opens; run.started brings both.
 */
export function configFacts(config: Config): KnownFacts {
  return { provider: config.provider?.name ?? null, model: config.provider?.model ?? null, mode: config.unrestricted ? 'unrestricted' : 'restricted', sandbox: null, sessionId: null };
}

export function stdinTooLargeOutcome(maxBytes: number): Outcome {
  return {
    status: 'limit_exceeded',
    limit: 'stdin_bytes',
    message: `stdin is larger than ${maxBytes} bytes (limit stdin_bytes); pass less, or raise it with --limit stdin_bytes=N (0 = unlimited)`,
    output: '',
    stopReason: null,
    usage: emptyUsage(),
    counts: { modelCalls: 0, toolCalls: 0, toolErrors: 0 },
    durationMs: 0,
  };
}
