// `conch "task"`: config → session → provider → runTask → output and exit code.
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import type { CliFlags, Config } from '../config/types.ts';
import { EXIT_CODES, exitCodeFor, type Outcome } from '../agent/outcome.ts';
import { teeSinks, type EventSink } from '../agent/events.ts';
import { runTask } from '../agent/loop.ts';
import { openSession, type Session } from '../agent/session.ts';
import { SetupError } from '../core/errors.ts';
import { humanSink } from './render.ts';
import { stderr, stdinIsTTY, stdout } from './output.ts';
import { killAllNow } from '../process/spawn.ts';
import { envelope, envelopeSink } from './envelope.ts';
import { openTrace } from './trace.ts';
import { ProviderError, type Provider } from '../providers/types.ts';
import type { Approver } from '../policy/command-rules.ts';
import { buildGuard, buildPluginLoader, loadCliConfig, setupFailure, terminalApprover } from './setup.ts';

export interface RunOutput {
  json: boolean;
  trace?: string;
  traceContent: boolean;
}

/** Stdin is part of the task when it is piped: `git diff | conch "review this"`. */
async function readTask(taskArg: string): Promise<string> {
  let piped = '';
  if (!stdinIsTTY()) {
    try {
      piped = await Bun.stdin.text();
    } catch {
      piped = '';
    }
  }
  if (!piped.trim()) return taskArg.trim();
  if (!taskArg.trim()) return piped;
  return `${taskArg.trim()}\n\n<stdin>\n${piped.replace(/\n$/, '')}\n</stdin>`;
}

export async function runCli(taskArg: string, flags: CliFlags, out: RunOutput): Promise<number> {
  const runId = randomUUID();
  const task = await readTask(taskArg);
  if (!task) {
    stderr.write("conch: no task given. Usage: conch \"what to do\"  (or pipe text in: git diff | conch \"review this\")\n");
    return EXIT_CODES.setup_error;
  }

  const controller = new AbortController();
  const interactive = Boolean(stderr.isTTY) && !out.json;
  const human = humanSink(
    { stdout, stderr },
    { color: interactive && !process.env.NO_COLOR, interactive, streamText: Boolean(stdout.isTTY) },
  );
  let config: Config;
  let session: Session | undefined;
  let provider: Provider;
  let trace: EventSink | undefined;
  try {
    if (out.traceContent && !out.trace) throw new SetupError('--trace-content needs --trace FILE: it says what to include in the trace.');
    trace = out.trace ? openTrace(out.trace, out.traceContent) : undefined;
    config = await loadCliConfig(flags);
    if (!config.provider) {
      const { noModelMessage } = await import('../config/load.ts');
      throw new SetupError(noModelMessage(join(config.configDir, 'config.json')));
    }
    const { createProvider } = await import('../providers/index.ts');
    provider = await createProvider(config.provider).catch((error) => {
      // A key that is missing is a setup problem, reported before any run starts.
      throw error instanceof ProviderError ? new SetupError(error.message) : error;
    });
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
    session = await openSession(config, {
      cwd: process.cwd(),
      guard: await buildGuard(config, approver),
      loadPlugins: buildPluginLoader(config),
    });
  } catch (error) {
    return setupFailure(error, out.json, runId);
  }
  for (const warning of [...(config.warnings ?? []), ...session.warnings]) stderr.write(`conch: ${warning}\n`);

  const sinks: EventSink[] = [];
  const facts = envelopeSink();
  if (out.json) sinks.push(facts);
  else sinks.push(human);
  if (trace) sinks.push(trace);

  // First Ctrl-C cancels through the one AbortSignal; a second one exits at once.
  let interrupts = 0;
  const onSigint = () => {
    interrupts++;
    if (interrupts === 1) {
      controller.abort(new Error('cancelled'));
      if (!out.json && stderr.isTTY) stderr.write('\nconch: cancelling… (Ctrl-C again to exit now)\n');
    } else {
      killAllNow();
      process.exit(EXIT_CODES.cancelled);
    }
  };
  // A closed terminal (SIGHUP) or a polite kill (SIGTERM) cancel the same way, so cleanup runs.
  const signals = ['SIGINT', 'SIGTERM', 'SIGHUP'] as const;
  for (const s of signals) process.on(s, onSigint);

  let outcome: Outcome;
  try {
    outcome = await runTask(
      {
        runId,
        task: [{ type: 'text', text: task }],
        conversation: [],
        system: session.system,
        catalog: session.catalog,
        limits: config.limits,
        makeContext: session.makeContext,
        stopOnDeny: config.policy.stopOnDeny,
        header: session.header,
      },
      provider,
      teeSinks(...sinks),
      controller.signal,
    );
  } finally {
    for (const s of signals) process.off(s, onSigint);
    await session.dispose();
  }
  const code = exitCodeFor(outcome.status);
  if (out.json) stdout.write(`${JSON.stringify(envelope(runId, outcome, facts.facts, code))}\n`);
  return code;
}

