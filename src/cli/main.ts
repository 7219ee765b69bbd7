// Entry point. Answers --version, --help and the bare command without loading anything heavy;
// every subcommand imports its code lazily so a run pays only for what it uses.
import { EXIT_CODES } from '../agent/outcome.ts';
import { closest, parseArgs, UnknownFlagError, unknownFlag, usageHint, UsageError, type ParsedArgs } from './argv.ts';
import { ALL_FLAGS, checkFlagsOf, COMMANDS, flagsOf, isCommand, outputHelp, toFlags } from './flags.ts';
import { stderr, stdinIsTTY, stdout, stdoutLost } from '../core/stdio.ts';
import { setupEnvelope } from './envelope.ts';
import { answeredVersion, VERSION_LINE } from './version.ts';

const argv = process.argv.slice(2);
/** The subcommand whose --help a usage error points to, once it is known (`conch tools --all`). */
let helpCommand = '';

async function main(): Promise<void> {
  const parsed = parseCommandLine();
  const [first, ...rest] = parsed.positionals;
  const command = first !== undefined && isCommand(first) ? first : '';
  const args = command ? rest : parsed.positionals;
  if (command && command !== 'run') helpCommand = command;
  checkFlagsOf(command, parsed);
  if (parsed.flags.has('help')) return outputHelp(command || undefined);
  if (parsed.flags.has('version')) return void stdout.write(`${VERSION_LINE}\n`);
  // A subcommand's words after `--` are still its words (`conch sessions -- rm ID`), never dropped.
  const operands = [...args, ...parsed.afterDashes];
  if (!cwdExists()) return setupError('the current directory no longer exists (it was removed after the shell entered it); cd to an existing directory and run conch again.', parsed.flags.has('json'));
  const flags = () => toFlags(parsed);
  const json = parsed.flags.has('json');
  switch (command) {
    case '':
    case 'run': {
      // One word a typo away from a command is far more likely the typo than a task.
      const oneWord = !command && args.length === 1 && parsed.afterDashes.length === 0 ? args[0]! : undefined;
      const near = oneWord !== undefined ? closest(oneWord, Object.keys(COMMANDS).filter(Boolean)) : undefined;
      if (near) throw new UsageError(`did you mean 'conch ${near}'? To run '${oneWord}' as a task: conch run ${oneWord}`);
      // As other tools take it (`git version`, `docker version`): never a model call to ask the version.
      if (oneWord === 'version') throw new UsageError(`did you mean 'conch --version'? To run 'version' as a task: conch run version`);
      return runCommand(command, operands, parsed);
    }
    case 'tools': {
      if (operands.length > 2) throw new UsageError(`'conch tools' takes an action and a name, got: ${operands.join(' ')}`);
      const { toolsCommand } = await import('./commands.ts');
      process.exitCode = await toolsCommand(operands[0], operands[1], flags(), json);
      return;
    }
    case 'mcp': {
      if (operands.length) throw new UsageError(`'conch mcp' takes no arguments, got: ${operands.join(' ')}`);
      const { mcpCommand } = await import('./mcp-command.ts');
      process.exitCode = await mcpCommand(flags(), json);
      return;
    }
    case 'skills': {
      if (operands.length) throw new UsageError(`'conch skills' takes no arguments, got: ${operands.join(' ')}`);
      const { skillsCommand } = await import('./commands.ts');
      process.exitCode = await skillsCommand(json);
      return;
    }
    case 'trust': {
      if (operands.length) throw new UsageError(`'conch trust' takes no arguments, got: ${operands.join(' ')}`);
      const { trust } = await import('./commands.ts');
      process.exitCode = await trust();
      return;
    }
    case 'sandbox': {
      // No action to take by default (tools and sessions list): the command says what it does, as bare `conch` does.
      if (args.length === 0 && parsed.afterDashes.length === 0) return outputHelp('sandbox');
      const { sandboxCommand } = await import('./commands.ts');
      const profile = parsed.flags.get('profile')?.[0];
      process.exitCode = await sandboxCommand(args[0], [...args.slice(1), ...parsed.afterDashes], { network: !parsed.flags.has('no-network'), ...(profile !== undefined && { profile }) });
      return;
    }
    case 'sessions': {
      if (operands.length > 2) throw new UsageError(`'conch sessions' takes an action and an id, got: ${operands.join(' ')}`);
      const { sessionsCommand } = await import('./sessions-command.ts');
      process.exitCode = await sessionsCommand(operands[0], operands[1], { json, all: parsed.flags.has('all'), olderThan: parsed.flags.get('older-than')?.[0] });
      return;
    }
    case 'help': {
      if (operands.length === 0) return outputHelp();
      if (operands.length === 1 && operands[0] !== '' && isCommand(operands[0]!)) return outputHelp(operands[0]);
      throw new UsageError(notACommand(operands));
    }
    case 'acp': {
      if (operands.length) throw new UsageError(`'conch acp' takes no arguments, got: ${operands.join(' ')}`);
      const { serveAcp } = await import('../acp/server.ts');
      // Loaded only when a session first imports plugins, as for a run.
      const watchdog = async () => (await import('./watchdog.ts')).startWatchdog('acp', false, null, 'conch acp');
      await serveAcp(flags(), { ephemeral: parsed.flags.has('ephemeral'), watchdog });
    }
  }
}

async function runCommand(command: string, task: string[], parsed: ParsedArgs) {
  const tasksFile = parsed.flags.get('tasks-file')?.[0];
  const { maxConcurrent } = await import('./tasks.ts');
  const concurrency = maxConcurrent(parsed.flags.get('max-concurrent')?.[0]);
  // `conch run A B`: each argument a task of its own; `conch A B` stays one task of two words.
  if (tasksFile !== undefined && task.length) throw new UsageError(`give the tasks as arguments or in --tasks-file ${tasksFile}, not both`);
  if (tasksFile !== undefined || (command === 'run' && task.length > 1)) return runTasks(tasksFile ?? task, concurrency, parsed);
  const session = {
    continue: parsed.flags.has('continue'),
    resume: parsed.flags.get('resume')?.[0],
    fork: parsed.flags.has('fork'),
    ephemeral: parsed.flags.has('ephemeral'),
  };
  const trace = parsed.flags.get('trace')?.[0];
  const traceContent = parsed.flags.has('trace-content');
  const outputSchema = parsed.flags.get('output-schema')?.[0];
  const json = parsed.flags.has('json');
  const terminal = stdinIsTTY() && stdout.isTTY && stderr.isTTY;
  if (parsed.flags.has('interactive') || (task.length === 0 && terminal && !json)) {
    if (json) throw new UsageError('--interactive and --json do not go together: --json prints one document for one run');
    if (outputSchema !== undefined) throw new UsageError('--output-schema checks the answer of one run; it does not go with --interactive. Give the task: conch --output-schema FILE "what to do"');
    if (!terminal) throw new UsageError('--interactive needs a terminal on stdin, stdout and stderr; without one, give the task: conch "what to do"');
    if (traceContent && !trace) throw new UsageError('--trace-content needs --trace FILE: it says what to include in the trace.');
    const { runInteractive } = await import('./interactive.ts');
    process.exit(await runInteractive(toFlags(parsed), { firstTask: task.join(' ') || undefined, session, trace, traceContent }));
  }
  const { runCli } = await import('./run.ts');
  const code = await runCli(task.join(' '), toFlags(parsed), { json, trace, traceContent, session, outputSchema });
  // The run is over: exit even if something abandoned (a tool stuck in a blocking call) still
  // holds the event loop. Nothing is lost: output.ts writes reach the fd before they return.
  process.exit(code);
}

async function runTasks(tasks: string[] | string, maxConcurrent: number, parsed: ParsedArgs) {
  if (Array.isArray(tasks)) {
    const empty = tasks.findIndex((t) => t.trim() === '');
    if (empty !== -1) throw new UsageError(`task ${empty + 1} is empty; each argument of 'conch run' is a task`);
  }
  for (const name of ['interactive', 'continue', 'resume', 'fork']) {
    if (parsed.flags.has(name)) {
      throw new UsageError(`--${name} does not go with several tasks: each task is a new session of its own (run one task to ${name === 'interactive' ? 'talk' : 'continue a session'})`);
    }
  }
  const { runTasksCli } = await import('./run-tasks.ts');
  const trace = parsed.flags.get('trace')?.[0];
  const out = { json: parsed.flags.has('json'), trace, traceContent: parsed.flags.has('trace-content'), session: { ephemeral: parsed.flags.has('ephemeral') }, maxConcurrent, outputSchema: parsed.flags.get('output-schema')?.[0] };
  process.exit(await runTasksCli(tasks, toFlags(parsed), out));
}

/** argv split into words; `conch sandbox run ls -la` is told where the command's own flags go. */
function parseCommandLine(): ParsedArgs {
  try {
    return parseArgs(argv, ALL_FLAGS);
  } catch (caught) {
    let error = caught;
    const [first, second] = argv.filter((a) => !a.startsWith('-'));
    if (first === 'sandbox') helpCommand = first;
    // The words before an unknown flag say which command it was given to: the near flag offered is
    // one that command takes (`conch tools --modle` is not told of --model), and so is its help.
    if (error instanceof UnknownFlagError) {
      const before = parseArgs(argv.slice(0, error.index), ALL_FLAGS).positionals[0];
      const command = before !== undefined && isCommand(before) ? before : '';
      if (command && command !== 'run') helpCommand = command;
      error = new UsageError(unknownFlag(error.typed, flagsOf(command)));
    }
    if (error instanceof UsageError && first === 'sandbox' && second === 'run' && !argv.includes('--')) {
      throw new UsageError(`${error.message}; the command's own options go after --: conch sandbox run [--no-network] [--profile NAME] -- CMD ARGS…`);
    }
    // Claude Code's print mode is conch's only mode: say so to hands used to typing it.
    if (error instanceof UsageError && /^unknown option '(-p|--print)'/.test(error.message)) {
      const words = argv.filter((a) => a !== '-p' && a !== '--print').map((a) => (/[\s"'$`\\]/.test(a) ? `'${a.replaceAll("'", `'\\''`)}'` : a));
      throw new UsageError(`${error.message}; conch needs no flag to print the answer and exit: conch ${words.join(' ') || '"what to do"'} (--json for one JSON document)`);
    }
    // No flag has a space in it: a word with one is a task that happens to start with a dash.
    const task = argv.find((a) => a.startsWith('-') && /\s/.test(a) && error instanceof UsageError && error.message.includes(`'${a.split('=')[0]}'`));
    if (task !== undefined) {
      throw new UsageError(`${(error as UsageError).message}; a task that starts with a dash goes after --: conch -- "${task}"`);
    }
    throw error;
  }
}

/** `conch help WORD…` where WORD is no command: the help is what was asked for, never a model run. */
function notACommand(words: string[]): string {
  const names = Object.keys(COMMANDS).filter(Boolean);
  const asTask = `To run 'help ${words.join(' ')}' as a task: conch -- help ${words.join(' ')}`;
  if (words.length > 1) return `'conch help' takes one command name, got: ${words.join(' ')}. ${asTask}`;
  const near = closest(words[0]!, names);
  // A question ends its own sentence: no full stop after the question mark.
  const hint = near ? `did you mean 'conch help ${near}'?` : `the commands are ${names.join(', ')}.`;
  return `'${words[0]}' is not a command; ${hint} ${asTask}`;
}

/** Every command works in the current directory; one removed under the shell cannot even be named. */
function cwdExists(): boolean {
  try {
    process.cwd();
    return true;
  } catch {
    return false;
  }
}

function setupError(message: string, json: boolean): never {
  stderr.write(`conch: ${message}\n`);
  if (json) stdout.write(`${JSON.stringify(setupEnvelope(null, message))}\n`);
  process.exit(EXIT_CODES.setup_error);
}

function usageError(message: string): never {
  stderr.write(`conch: ${message}\n${usageHint(helpCommand)}`);
  // --json promises one document on stdout, even when the command line itself is wrong.
  if (argv.includes('--json')) {
    stdout.write(`${JSON.stringify(setupEnvelope(null, message))}\n`);
  }
  process.exit(EXIT_CODES.setup_error);
}

/**
 * Output that reached no one (stdout closed, its reader gone) is no success: a script must not take
 * the answer it never got for one. A run that failed on its own keeps its own code.
 */
function reportLostOutput(): void {
  if (stdoutLost() && !process.exitCode) process.exitCode = EXIT_CODES.failed;
}

// No top-level await: the bundle is CommonJS (src/build.ts), whose bytecode spares the parse.
async function start(): Promise<void> {
  process.on('exit', reportLostOutput);
  if (argv.length === 0 && stdinIsTTY() && !(stdout.isTTY && stderr.isTTY)) {
    await outputHelp();
  } else if (!answeredVersion(argv)) {
    try {
      await main();
    } catch (error) {
      // A wrong command line is the user's to fix, not a bug.
      if (error instanceof UsageError) usageError(error.message);
      throw error;
    }
  }
}

void start();
