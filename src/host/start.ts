// The one start every host shares (the CLI, `conch acp`, embedders), in this order:
//   planStart  the stored session to continue → its recorded policy → config → the recorded narrowing
//   startRun   a model → the provider → the command guard → the session (workspace, sandbox, tools,
//              system prompt) → the session recording
// What differs between hosts comes in as arguments: who answers `ask` rules, where events go. A
// failure the user can fix is a ConfigError, SetupError or SessionError (setup-error.ts classifies
// them); each host reports it its own way.
import { join } from 'node:path';
import type { ContentBlock } from '../core/content.ts';
import { SetupError } from '../core/errors.ts';
import { teeSinks, type EventSink } from '../agent/events.ts';
import { runTask } from '../agent/loop.ts';
import type { Outcome } from '../agent/outcome.ts';
import type { OutputSchema } from '../agent/output.ts';
import type { CliFlags, Config } from '../config/types.ts';
import type { Approver } from '../policy/command-rules.ts';
import type { ServerSpec } from '../mcp/index.ts';
import { ProviderError, type Provider } from '../providers/types.ts';
import { latestIndexDir, SessionError, sessionsDir } from '../sessions/dir.ts';
import { narrowConfig, openRecording, planSession, policyFlags, type Recording, type SessionChoice, type SessionPlan } from '../sessions/open.ts';
import { openSession, type RunLane, type Session } from './session.ts';
import { probeSandbox } from '../sandbox/index.ts';
import { prependText } from './skills.ts';
import { buildGuard, buildPluginLoader, loadHostConfig, type Env } from './setup.ts';
import type { Tracer } from '@opentelemetry/api';
import { openTracing } from '../telemetry/open.ts';
import type { Tracing } from '../telemetry/spans.ts';

export interface PlanOptions {
  /** Which stored session to continue (-c, --resume, --fork, --ephemeral); a new one when absent. */
  session?: SessionChoice;
  /** What config reads (API keys, XDG dirs, CONCH_*); process.env when absent. */
  env?: Env;
}

/** The first half of a start: enough to know the limits (the CLI bounds stdin by them). */
export interface StartPlan {
  plan: SessionPlan;
  config: Config;
  /** What the recorded policy of a continued session took away from this config, for the user. */
  narrowed: string[];
}

export interface StartOptions extends PlanOptions {
  /** Answers `ask` command rules (a terminal prompt, an editor's permission dialog); absent, they deny. */
  approver?: Approver;
  /** planStart's result, when the host needed the config first. */
  planned?: StartPlan;
  /** The id a new session gets (ACP names it before it exists); the store picks one when absent. */
  sessionId?: string;
  /** Called before the first plugin file is imported (the CLI starts its watchdog there). */
  beforePluginImport?: (loadTimeoutMs: number) => Promise<void> | void;
  /** MCP servers besides the configured ones (an editor's session/new). */
  mcpServers?: ServerSpec[];
  /**
   * An embedder's OpenTelemetry tracer: each run's spans go there, under the span active when run()
   * is called. Without it, conch exports its own traces when flags.otel or OTEL_EXPORTER_OTLP_ENDPOINT says so.
   */
  tracer?: Tracer;
}

export interface RunOptions {
  /** Where the run's events go; nowhere when absent. */
  sink?: EventSink;
  /** Cancels the run (Ctrl-C, session/cancel). */
  signal?: AbortSignal;
  runId?: string;
  /**
   * A JSON Schema the final answer must match: the completed outcome carries the parsed value
   * (`outputValue`); an answer still wrong after one repair turn fails as output_invalid.
   */
  outputSchema?: OutputSchema;
}

export interface StartedRun {
  readonly config: Config;
  readonly session: Session;
  readonly provider: Provider;
  /** The stored session: its id, the conversation runs continue, write failures (`warnings`). */
  readonly recording: Recording;
  /**
   * What the user should know that is not an error (config notes, no sandbox, plugin failures).
   * dispose() may add more at the end (traces that could not be exported).
   */
  readonly warnings: string[];
  /** Run one task to its outcome, continuing the session's conversation and recording it. */
  run(task: string | ContentBlock[], options?: RunOptions): Promise<Outcome>;
  /** Stop plugins, release placeholders, remove the run's private directory, close the recording, send the last spans. */
  dispose(): Promise<void>;
}

/** One start shared by several runs at once (`conch run A B C`): one config, provider and plugin load. */
export interface StartedHost {
  readonly config: Config;
  readonly session: Session;
  readonly provider: Provider;
  /** As StartedRun's: dispose() may add more at the end. */
  readonly warnings: string[];
  /**
   * One more run, overlapping the others: its own session record (none under --ephemeral), its own
   * placeholders, /tmp and reads (a lane, host/session.ts), the same workspace, policy and tools.
   */
  task(): HostTask;
  /** Stop plugins and MCP servers, release every lane, remove the private directory, send the last spans. */
  dispose(): Promise<void>;
}

export interface HostTask {
  readonly recording: Recording;
  /** Run the task to its outcome; once. */
  run(task: string | ContentBlock[], options?: RunOptions): Promise<Outcome>;
}

export async function planStart(flags: CliFlags, cwd: string, options: PlanOptions = {}): Promise<StartPlan> {
  const env = options.env ?? process.env;
  const plan = planSession(options.session ?? {}, cwd, sessionsDir(env), latestIndexDir(env));
  const config = await loadHostConfig(policyFlags(plan, flags), cwd, env);
  return { plan, config, narrowed: narrowConfig(plan, config) };
}

interface Opened {
  config: Config;
  session: Session;
  provider: Provider;
  plan: SessionPlan;
  narrowed: string[];
  /** Each run's spans (one trace per run, overlapping runs included); absent when tracing is off. */
  tracing?: Tracing;
  /** What the user should know about tracing (an unsupported protocol, an SDK that did not load). */
  tracingWarnings: string[];
}

/** Config, model, provider, guard and session: what every run of this start shares. */
async function open(flags: CliFlags, cwd: string, options: StartOptions): Promise<Opened> {
  const { plan, config, narrowed } = options.planned ?? (await planStart(flags, cwd, options));
  if (!config.provider) {
    const { noModelMessage } = await import('../config/load.ts');
    throw new SetupError(noModelMessage(join(config.configDir, 'config.json'), options.env ?? process.env));
  }
  const { createRouteProvider } = await import('../providers/index.ts');
  // Before the session: a missing key is reported before any plugin is loaded or sandbox probed.
  const provider = await createRouteProvider(config.provider, config.fallbacks).catch((error) => {
    throw error instanceof ProviderError ? new SetupError(error.message) : error;
  });
  // The sandbox probe runs a real bwrap; begun now, it runs while the session opens (the run dir,
  // plugins, skills) instead of after it, before the first model request. Its result is cached.
  if (!config.unrestricted && config.tools.shell) void probeSandbox().catch(() => {});
  const session = await openSession(config, {
    cwd,
    guard: await buildGuard(config, options.approver),
    loadPlugins: buildPluginLoader(config, options.beforePluginImport),
    mcpServers: options.mcpServers,
  });
  const { tracing, warning } = await openTracing({ flag: flags.otel, tracer: options.tracer, env: options.env ?? process.env });
  return { config, session, provider, plan, narrowed, tracing, tracingWarnings: warning ? [warning] : [] };
}

/** The last spans sent (waiting a bounded time); what went wrong goes to the host's warnings. */
async function closeTracing(opened: Opened, warnings: string[]): Promise<void> {
  if (opened.tracing) warnings.push(...(await opened.tracing.close()));
}

/** One run on `lane`, continuing and recording `recording`'s conversation. */
async function runOn(opened: Opened, lane: RunLane, recording: Recording, content: ContentBlock[], run: RunOptions): Promise<Outcome> {
  const { config, session, provider } = opened;
  const runId = run.runId ?? crypto.randomUUID();
  const spans = opened.tracing?.run();
  const sink = run.sink ?? { emit: () => {} };
  try {
    const outcome = await runTask(
      {
        runId,
        task: content,
        conversation: recording.conversation,
        journal: recording.begin(runId, provider),
        system: session.system,
        catalog: lane.catalog,
        limits: config.limits,
        makeContext: lane.makeContext,
        stopOnDeny: config.policy.stopOnDeny,
        ...(run.outputSchema !== undefined ? { outputSchema: run.outputSchema } : {}),
        header: { ...session.header, session: recording.facts },
        // One prompt cache per session: a continued session reads what its earlier runs wrote.
        ...(recording.facts ? { cacheKey: recording.facts.id } : {}),
      },
      provider,
      spans ? teeSinks(sink, spans) : sink,
      run.signal ?? new AbortController().signal,
    );
    recording.finish(outcome);
    return outcome;
  } finally {
    // The run is over: its placeholders go once its last command has ended, and what it made of
    // nested repositories is checked (its lines reach the user with the recording's warnings).
    recording.warnings.push(...lane.endRun());
    spans?.end();
    opened.tracing?.runEnded();
  }
}

function asContent(task: string | ContentBlock[], preface: string[]): ContentBlock[] {
  const content: ContentBlock[] = typeof task === 'string' ? [{ type: 'text', text: task }] : task;
  return preface.length ? prependText(content, preface.join('\n\n')) : content;
}

export async function startRun(flags: CliFlags, cwd: string, options: StartOptions = {}): Promise<StartedRun> {
  const opened = await open(flags, cwd, options);
  const { config, session, provider } = opened;
  let recording: Recording;
  try {
    recording = openRecording(opened.plan, config, opened.narrowed, options.sessionId, session.secrets);
  } catch (error) {
    await session.dispose();
    throw error;
  }
  // --skill bodies go in front of the first task only: later prompts of an editor's session follow it.
  let preface = session.skills.preface;
  const warnings = [...(config.warnings ?? []), ...(provider.warnings ?? []), ...session.warnings, ...opened.tracingWarnings, ...recording.warnings.splice(0)];
  return {
    config,
    session,
    provider,
    recording,
    warnings,
    run(task, run = {}) {
      const content = asContent(task, preface);
      preface = [];
      return runOn(opened, session, recording, content, run);
    },
    async dispose() {
      await session.dispose();
      recording.close();
      await closeTracing(opened, warnings);
    },
  };
}

/**
 * A start for several runs at once. Each task is a new session of its own (or none under
 * --ephemeral): runs that overlap cannot continue one conversation, so continuing is refused.
 */
export async function startHost(flags: CliFlags, cwd: string, options: StartOptions = {}): Promise<StartedHost> {
  const choice = options.planned?.plan.choice ?? options.session ?? {};
  if (choice.continue || choice.resume !== undefined) {
    throw new SessionError('several tasks at once cannot continue one session (-c, --resume, --fork): each task starts a session of its own; run them one at a time to continue one.');
  }
  const opened = await open(flags, cwd, options);
  const { config, session, provider } = opened;
  const recordings: Recording[] = [];
  const warnings = [...(config.warnings ?? []), ...(provider.warnings ?? []), ...session.warnings, ...opened.tracingWarnings];
  return {
    config,
    session,
    provider,
    warnings,
    task() {
      const recording = openRecording(opened.plan, config, opened.narrowed, undefined, session.secrets);
      recordings.push(recording);
      const lane = session.lane();
      let ran = false;
      return {
        recording,
        run(task, run = {}) {
          if (ran) throw new Error('a host task runs once');
          ran = true;
          // Every task is the first of its session: each gets the --skill bodies.
          return runOn(opened, lane, recording, asContent(task, session.skills.preface), run);
        },
      };
    },
    async dispose() {
      await session.dispose();
      for (const recording of recordings) recording.close();
      await closeTracing(opened, warnings);
    },
  };
}
