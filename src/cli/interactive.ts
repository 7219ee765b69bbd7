// `conch` on a terminal without a task (or `conch -i "first task"`): a conversation. Each submission
// is one more run of the same host start (host/start.ts → runTask), so it is stored as a turn of one
// session and resumable with -c; the rendering is the one-shot renderer's. Only the prompt is
// loaded before the prompt shows: the host starts while the user types (bench/interactive.ts).
import type { CliFlags } from '../config/types.ts';
import { EXIT_CODES, SIGNAL_EXIT_CODES, SignalStop, stopSignal, type StopSignal } from '../agent/outcome.ts';
import { teeSinks } from '../agent/events.ts';
import type { Trace } from './trace.ts';
import type { Watchdog } from './watchdog.ts';
import type { StartedRun } from '../host/start.ts';
import type { HumanSink } from './render.ts';
import type { Approver } from '../policy/command-rules.ts';
import type { SessionChoice } from '../sessions/open.ts';
import { stderr, stdout } from '../core/stdio.ts';
import { colorAllowed } from './terminal.ts';
import { createPrompt } from './prompt.ts';
import { promptHistory } from './prompt-history.ts';
import { isSlashCommand, slashCommand, slashCompletions, type SlashContext } from './slash.ts';
import { terminalSafe } from './tool-lines.ts';
import { typeAhead } from './typeahead.ts';
import { wrapWords } from './wrap.ts';

export interface InteractiveOptions {
  firstTask?: string;
  session: SessionChoice;
  trace?: string;
  traceContent: boolean;
}

/** How long a submitted task waits for the host before the terminal says it is starting. */
const STARTING_NOTICE_MS = 500;

export async function runInteractive(flags: CliFlags, options: InteractiveOptions): Promise<number> {
  const cwd = process.cwd();
  const color = colorAllowed();
  const bold = (t: string) => (color ? `\x1b[1m${t}\x1b[0m` : t);
  const dim = (t: string) => (color ? `\x1b[2m${t}\x1b[0m` : t);
  /** A line of conch's own, broken between words at the terminal's width as it is now. */
  const say = (line: string, style = (t: string) => t) => stderr.write(`${wrapWords(line, stderr.columns).split('\n').map(style).join('\n')}\n`);
  const editor = createPrompt({ input: process.stdin, output: process.stderr, prompt: `${bold('›')} `, continuation: `${dim('…')} `, complete: slashCompletions });
  const typed = typeAhead(process.stdin);
  let trace: Trace | undefined;

  // `ask` rules are answered on the terminal, by whichever run is under way.
  let ask: Approver | undefined;
  const approver: Approver = (command, rule) => (ask ? ask(command, rule) : Promise.resolve('deny'));
  let current = { flags, session: options.session };
  // Plugin code (and an MCP schema that backtracks) can block the main thread. From a plugin's first
  // line on, or once MCP tools are offered, a watchdog thread keeps each turn's deadline, ends conch
  // when a plugin never finishes loading, and lets a signal end it when the main thread cannot
  // answer; it hands every signal it catches to `onSignal`.
  let watchdog: Watchdog | undefined;
  let turnSigint: (() => void) | undefined;
  const onSignal = (name: string) => (name === 'SIGINT' && turnSigint ? turnSigint() : onHangup(name));
  const startWatchdog = async () => {
    const { startWatchdog } = await import('./watchdog.ts');
    watchdog ??= startWatchdog('interactive', false, null, 'the conversation');
    watchdog.arm(null, onSignal, false);
    return watchdog;
  };
  // Read now, stored to once the config (read as the host starts) says so.
  const history = promptHistory(editor);
  const start = async (next: typeof current) => {
    const [{ planStart, startRun }, { offersMcpTools }] = await Promise.all([import('../host/start.ts'), import('../host/mcp.ts')]);
    let loading = false;
    try {
      const planned = await planStart(next.flags, cwd, { session: next.session }).catch((error) => {
        history.abandon();
        throw error;
      });
      // Before the session opens: the file then exists, and the sandbox hides it from commands.
      history.configure(planned.config.history);
      const started = await startRun(next.flags, cwd, {
        approver,
        planned,
        session: next.session,
        beforePluginImport: async (loadTimeoutMs) => {
          (await startWatchdog()).loading(loadTimeoutMs);
          loading = true;
        },
      });
      // An MCP schema that backtracks holds the main thread as plugin code can (host/mcp.ts).
      if (offersMcpTools(started.session)) await startWatchdog();
      return started;
    } finally {
      if (loading) watchdog?.loading(null);
    }
  };
  let pending: Promise<StartedRun> | undefined;
  let host: StartedRun | undefined;
  /** `signal`: the wait was cancelled (the notice would come after the cancel). */
  const ready = async (signal?: AbortSignal): Promise<StartedRun> => {
    if (!host) {
      // Plugins and MCP servers can take seconds to start: what waits for them says why.
      const slow = setTimeout(() => signal?.aborted || stderr.write(dim('conch: starting (tools, plugins, MCP servers)…\n')), STARTING_NOTICE_MS);
      try {
        host = await (pending ??= start(current));
      } finally {
        clearTimeout(slow);
      }
      // Warnings quote what others wrote (an MCP server's stderr, a skill's file).
      for (const warning of host.warnings.splice(0)) say(`conch: ${terminalSafe(warning)}`);
    }
    return host;
  };
  /** `back`: what to start again when `next` cannot start (the same conversation, the old flags). */
  const restart = async (next: typeof current, back: typeof current = current): Promise<void> => {
    const old = await ready();
    // A stored session has one writer at a time: the old host lets go of it first.
    await old.dispose();
    host = undefined;
    pending = start(next);
    try {
      await ready();
      current = next;
    } catch (error) {
      current = back;
      pending = start(back);
      throw error;
    }
  };
  let runs = 0;
  const setupProblem = async (error: unknown): Promise<number | null> => {
    const { setupFailure } = await import('./setup.ts');
    try {
      return setupFailure(error, false, null);
    } catch {
      return null;
    }
  };

  const runOne = async (task: string): Promise<void> => {
    const controller = new AbortController();
    const [{ CANCELLING, humanSink }, { terminalOptions }, { killAllNow }] = await Promise.all([import('./render.ts'), import('./terminal.ts'), import('../process/spawn.ts')]);
    let human: HumanSink | undefined;
    // The prompt is closed, the terminal in cooked mode: Ctrl-C arrives as SIGINT, from here on,
    // while the host may still be starting too.
    let interrupts = 0;
    const onSigint = () => {
      if (++interrupts === 1) {
        controller.abort(new SignalStop('SIGINT'));
        // Over the spinner's line (and the ^C echoed on it); before the display exists, on a line of its own.
        if (human) human.notice(CANCELLING);
        else stderr.write(`\n${CANCELLING}\n`);
      } else {
        killAllNow();
        process.exit(EXIT_CODES.cancelled);
      }
    };
    process.on('SIGINT', onSigint);
    turnSigint = onSigint;
    busy = controller;
    typed.hide();
    let h: StartedRun | undefined;
    try {
      h = await ready(controller.signal);
      // Cancelled while the host started: the task was never sent.
      if (controller.signal.aborted) {
        stderr.write('conch: cancelled before the task was sent\n');
        return;
      }
      if (options.trace && !trace) trace = (await import('./trace.ts')).openTrace(options.trace, options.traceContent);
      // Each run's: after /model the key may be another provider's.
      trace?.hide([...(await import('../config/secret-values.ts')).secretValues(h.config), ...h.session.secrets]);
      const sink = humanSink({ stdout, stderr }, { ...(await terminalOptions(false, cwd)), header: runs === 0 });
      human = sink;
      runs++;
      const { ttyApprover } = await import('../policy/approve.ts');
      const tty = ttyApprover(process.stdin, process.stderr, controller.signal);
      ask = async (command, rule) => {
        sink.hold();
        // Only keys typed at the question answer it; those typed before wait for the next prompt.
        typed.setAside();
        // The answer is typed on this line, and must be seen.
        typed.echo();
        try {
          return await tty(command, rule);
        } finally {
          typed.hide();
          sink.release();
        }
      };
      watchdog?.arm(h.config.limits.deadline_ms, onSignal);
      await h.run(task, { sink: teeSinks(sink, ...(trace ? [trace] : [])), signal: controller.signal });
    } finally {
      process.off('SIGINT', onSigint);
      turnSigint = undefined;
      busy = undefined;
      ask = undefined;
      typed.echo();
      typed.giveBack();
    }
    // The watchdog ended the turn already (the main thread was stuck until now): it exits the process.
    if (watchdog && !watchdog.finishing()) await new Promise(() => {});
    watchdog?.resume();
    watchdog?.arm(null, onSignal, false);
    for (const warning of h.recording.warnings.splice(0)) say(`conch: ${terminalSafe(warning)}`);
  };

  const slash: SlashContext = {
    write: (text) => stderr.write(wrapWords(text, stderr.columns)),
    tools: async () => (await ready()).session.catalog.tools().map((t) => ({ name: t.name, description: t.description })),
    currentModel: async () => {
      const { provider, fallbacks } = (await ready()).config;
      // A host starts only with a model (no model is a setup problem), so provider is set here.
      const { name, model, type, baseUrl } = provider!;
      return { provider: name, model, type, ...(baseUrl ? { baseUrl } : {}), fallbacks: fallbacks.map((f) => `${f.name}/${f.model}`) };
    },
    model: async (name) => {
      const id = (await ready()).recording.id;
      // Both go on with this conversation: a model that cannot start must not lose it.
      const session = id && runs > 0 ? { resume: id } : current.session;
      await restart({ flags: { ...current.flags, model: name, modelSource: '/model' }, session }, { ...current, session });
    },
    clear: async () => {
      const id = (await ready()).recording.id;
      const { session } = current;
      const stored = id && (runs > 0 || ((session.continue || session.resume !== undefined) && !session.fork)) ? id : null;
      await restart({ flags: current.flags, session: { ephemeral: options.session.ephemeral } });
      runs = 0;
      return stored;
    },
    problem: async (error) => {
      if ((await setupProblem(error)) === null) throw error;
    },
  };

  // A closed terminal or a polite kill: a run under way is cancelled (its cleanup runs), then the
  // session ends; at the prompt it ends at once.
  let busy: AbortController | undefined;
  let quit = false;
  // The signal that ended the session: conch exits as shells expect of it (SIGTERM 143, SIGHUP 129).
  let endedBy: StopSignal | undefined;
  const onHangup = (name: string) => {
    quit = true;
    endedBy ??= stopSignal(name);
    if (busy) busy.abort(new SignalStop(endedBy));
    else void finish().then((code) => process.exit(code));
  };
  process.on('SIGHUP', onHangup);
  process.on('SIGTERM', onHangup);
  const finish = async (): Promise<number> => {
    const h = host ?? (await pending?.catch(() => undefined));
    if (!h) return endedBy ? SIGNAL_EXIT_CODES[endedBy] : EXIT_CODES.completed;
    await h.dispose();
    // dispose() adds what went wrong at the end (spans the collector never got).
    const late = h.warnings.splice(0);
    for (const warning of late) say(`conch: ${terminalSafe(warning)}`);
    if (h.recording.id && runs > 0) stderr.write(`session ${h.recording.id}  (conch -c to continue)\n`);
    return endedBy ? SIGNAL_EXIT_CODES[endedBy] : EXIT_CODES.completed;
  };

  // A command may wait for a host to start (/tools, /model): the prompt is closed meanwhile, so
  // Ctrl-C is a SIGINT that must not end the session; a second one exits, as during a run.
  const guarded = async <T>(command: () => Promise<T>): Promise<T> => {
    const { killAllNow } = await import('../process/spawn.ts');
    let interrupts = 0;
    const onSigint = () => {
      if (++interrupts === 1) stderr.write('\nconch: the command finishes first (Ctrl-C again to exit now)\n');
      else {
        killAllNow();
        process.exit(EXIT_CODES.cancelled);
      }
    };
    process.on('SIGINT', onSigint);
    turnSigint = onSigint;
    typed.hide();
    try {
      return await command();
    } finally {
      process.off('SIGINT', onSigint);
      turnSigint = undefined;
      typed.echo();
    }
  };

  say('conch · Enter sends, \\ at the end of a line continues, /help lists commands, Ctrl-D exits', dim);
  // A setup problem (no model, a bad config) ends the session as it would end a one-shot run, even
  // while the prompt waits for the first line.
  let startup: unknown;
  const startHost = () => {
    pending ??= start(current);
    pending.catch((error) => {
      startup ??= error;
      editor.cancel();
    });
  };
  try {
    if (options.firstTask) {
      startHost();
      await runOne(options.firstTask);
    }
    while (!quit) {
      const next = editor.read();
      // The prompt is on screen; now the host starts, while the user types.
      startHost();
      const input = await next;
      if (startup) throw startup;
      if (input.kind === 'eof') break;
      const text = input.text.trim();
      if (!text) continue;
      // Everything submitted, as a shell keeps it (a mistyped command is recalled to be fixed).
      await history.add(input.text);
      for (const line of history.warnings.splice(0)) say(`conch: ${terminalSafe(line)}`);
      if (isSlashCommand(text)) {
        const answer = await guarded(() => slashCommand(text, slash));
        if (answer === 'exit') break;
        continue;
      }
      await runOne(input.text);
      if (quit) break;
    }
  } catch (error) {
    const code = await setupProblem(error);
    if (code === null) throw error;
    await (host ?? (await pending?.catch(() => undefined)))?.dispose();
    return code;
  }
  return finish();
}
