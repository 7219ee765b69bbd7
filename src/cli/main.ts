// Entry point. Answers --version, --help and the bare command without loading anything heavy;
// every subcommand imports its code lazily so a run pays only for what it uses.
import cac from 'cac';
import pkg from '../../package.json' with { type: 'json' };
import type { CliFlags } from '../config/types.ts';
import { EXIT_CODES } from '../agent/outcome.ts';
import { stderr, stdinIsTTY, stdout } from './output.ts';

const argv = process.argv.slice(2);

// cac registers dashed boolean flags under their camelCase name, so its parser does not know they
// are booleans and `--read-only fix it` would eat "fix it" as the flag's value. Spelling the value
// out keeps the task where it belongs.
const DASHED_BOOLEANS = new Set(['--read-only', '--allow-home-writes', '--project-tools', '--stop-on-deny', '--trace-content']);
const parseArgv = process.argv.map((arg, i) => (i >= 2 && DASHED_BOOLEANS.has(arg) ? `${arg}=true` : arg));

function globalOptions(command: ReturnType<ReturnType<typeof cac>['command']>) {
  return command
    .option('-m, --model <provider/model>', 'Model to use, e.g. anthropic/claude-sonnet-5-5 or openai/gpt-5')
    .option('--base-url <url>', 'Base URL of the provider (a local OpenAI-compatible server: Ollama, vLLM, llama.cpp)')
    .option('--max-turns <n>', 'Limit on model calls (0 = unlimited)')
    .option('--max-tool-calls <n>', 'Limit on tool calls (0 = unlimited)')
    .option('--timeout <duration>', 'Run deadline: seconds, or 30s / 5m / 1h / 2d (default 1h, at most 365d)')
    .option('--limit <NAME=VALUE>', 'Set any limit, e.g. tool_result_bytes=1048576 (repeatable; see README)')
    .option('--unrestricted', 'Disable the workspace checks and the process sandbox, on purpose')
    .option('--no-network', 'Shell commands get no network (loopback only)')
    .option('--no-shell', 'No bash tool; plugins cannot run commands')
    .option('--no-filesystem', 'No read, write or edit tools')
    .option('--read-only', 'No write or edit; shell commands run under the read-only sandbox profile')
    .option('--allow-home-writes', 'Let a run in (or above) your home directory write; ~/.ssh, shell start-up files stay protected')
    .option('--tools <list>', 'Exactly these tools, comma-separated')
    .option('--no-plugins', 'Load no plugins')
    .option('--tools-dir <dir>', 'Also load plugins from DIR (repeatable)')
    .option('--plugin <name>', 'Enable a first-party plugin from plugins/ (repeatable)')
    .option('--project-tools', "Load this workspace's .conch/tools without `conch trust`")
    .option('--policy <file>', 'Static policy file: narrows tools, paths, commands and the sandbox')
    .option('--stop-on-deny', 'End the run as policy_denied at the first policy denial')
    .option('--allow-write <dir>', 'Extra writable root outside the workspace (repeatable)')
    .option('--profile <name>', 'Sandbox profile: workspace-write (default) or read-only')
    .option('--env <NAME=VALUE>', 'Pass a CONCH_TASK_* variable to shell commands (repeatable)');
}

const cli = cac('conch');
globalOptions(cli.command('[...task]', 'Run a task (the default command)'))
  .option('--json', 'Print exactly one JSON document on stdout when the run ends')
  .option('--trace <file>', 'Write every event as a JSON line to FILE')
  .option('--trace-content', 'Include arguments, paths and output in the trace')
  .action((task: string[], options: Record<string, unknown>) => runCommand(task, options));
globalOptions(cli.command('run [...task]', 'Run a task (same as the default command)'))
  .option('--json', 'Print exactly one JSON document on stdout when the run ends')
  .option('--trace <file>', 'Write every event as a JSON line to FILE')
  .option('--trace-content', 'Include arguments, paths and output in the trace')
  .action((task: string[], options: Record<string, unknown>) => runCommand(task, options));
globalOptions(cli.command('tools [action] [name]', 'List the tool catalog as the model sees it; `tools new NAME` writes a starter plugin'))
  .option('--json', 'Print the catalog as JSON')
  .action(async (action: string | undefined, name: string | undefined, options: Record<string, unknown>) => {
    const { toolsCommand } = await import('./commands.ts');
    process.exitCode = await toolsCommand(action, name, toFlags(options), Boolean(options.json));
  });
cli
  .command('skills', 'List the Agent Skills found here: source, whether the model is offered each, problems')
  .option('--json', 'Print the skills as JSON')
  .action(async (options: Record<string, unknown>) => {
    const { skillsCommand } = await import('./commands.ts');
    process.exitCode = await skillsCommand(Boolean(options.json));
  });
cli.command('trust', "Trust this workspace: its .conch/tools plugins (records the folder's hash) and .agents/skills").action(async () => {
  const { trust } = await import('./commands.ts');
  process.exitCode = await trust();
});
cli
  .command('sandbox [action] [...command]', 'Inspect the sandbox: `sandbox check`, or `sandbox run [--no-network] [--profile NAME] -- CMD ARGS…`')
  .option('--no-network', 'Run without network')
  .option('--profile <name>', 'Sandbox profile: workspace-write or read-only')
  .action(async (action: string | undefined, rest: string[], options: Record<string, unknown>) => {
    const { sandboxCommand } = await import('./commands.ts');
    const afterDashes = (options['--'] as string[] | undefined) ?? [];
    process.exitCode = await sandboxCommand(action, [...rest, ...afterDashes], {
      network: !argv.includes('--no-network'),
      profile: typeof options.profile === 'string' ? options.profile : 'workspace-write',
    });
  });
globalOptions(cli.command('acp', 'Serve the Agent Client Protocol on stdio (for editors)')).action(async (options: Record<string, unknown>) => {
  const { serveAcp } = await import('../acp/server.ts');
  await serveAcp(toFlags(options));
});
// cac shows "(default: true)" beside every --no-X flag, which reads as if the flag were on.
cli.help((sections) => sections.map((section) => ({ ...section, body: section.body.replaceAll(' (default: true)', '') })));

/** Only flags the user actually gave: cac fills negated options with `true`, which must not widen config. */
function toFlags(o: Record<string, unknown>): CliFlags {
  const list = (v: unknown) => (v === undefined ? undefined : (Array.isArray(v) ? v : [v]).map(String));
  const given = (flag: string) => argv.includes(flag);
  const num = (v: unknown, flag: string) => {
    if (v === undefined) return undefined;
    const n = Number(v);
    if (!Number.isInteger(n) || n < 0) usageError(`${flag} takes a whole number (0 = unlimited), got '${v}'`);
    return n;
  };
  return {
    model: o.model as string | undefined,
    baseUrl: o.baseUrl as string | undefined,
    maxTurns: num(o.maxTurns, '--max-turns'),
    maxToolCalls: num(o.maxToolCalls, '--max-tool-calls'),
    timeout: o.timeout as string | undefined,
    unrestricted: o.unrestricted ? true : undefined,
    network: given('--no-network') ? false : undefined,
    shell: given('--no-shell') ? false : undefined,
    filesystem: given('--no-filesystem') ? false : undefined,
    plugins: given('--no-plugins') ? false : undefined,
    readOnly: o.readOnly ? true : undefined,
    allowHomeWrites: o.allowHomeWrites ? true : undefined,
    tools: o.tools === undefined ? undefined : String(o.tools),
    toolsDir: list(o.toolsDir),
    plugin: list(o.plugin),
    projectTools: o.projectTools ? true : undefined,
    policy: o.policy as string | undefined,
    stopOnDeny: o.stopOnDeny ? true : undefined,
    limit: list(o.limit),
    allowWrite: list(o.allowWrite),
    profile: o.profile as string | undefined,
    env: list(o.env),
  };
}

async function runCommand(task: string[], options: Record<string, unknown>) {
  const { runCli } = await import('./run.ts');
  const code = await runCli(task.join(' '), toFlags(options), {
    json: Boolean(options.json),
    trace: typeof options.trace === 'string' ? options.trace : undefined,
    traceContent: Boolean(options.traceContent),
  });
  // The run is over: exit even if something abandoned (a tool stuck in a blocking call) still
  // holds the event loop. Nothing is lost: output.ts writes reach the fd before they return.
  process.exit(code);
}

function usageError(message: string): never {
  stderr.write(`conch: ${message}\nRun 'conch --help' for usage.\n`);
  // --json promises one document on stdout, even when the command line itself is wrong.
  if (argv.includes('--json')) {
    const doc = { version: 1, status: 'failed', code: 'config_invalid', message, exitCode: EXIT_CODES.setup_error };
    stdout.write(`${JSON.stringify(doc)}\n`);
  }
  process.exit(EXIT_CODES.setup_error);
}

if (argv.length === 0 && stdinIsTTY()) {
  cli.outputHelp();
} else if (argv.length === 1 && (argv[0] === '--version' || argv[0] === '-v')) {
  // console.log, not process.stdout.write: Bun sets up the stdout stream lazily, at ~20 ms.
  console.log(`conch ${pkg.version}`);
} else {
  try {
    cli.parse(parseArgv, { run: false });
    await cli.runMatchedCommand();
  } catch (error) {
    // cac reports unknown options and missing values by throwing; those are usage errors, not bugs.
    if (error instanceof Error && error.name === 'CACError') usageError(error.message);
    throw error;
  }
}
