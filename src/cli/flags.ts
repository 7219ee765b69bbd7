// conch's commands and flags: one table that drives both the parser (argv.ts) and the help (cac),
// and the typed CliFlags built from what was parsed.
import type { CliFlags } from '../config/types.ts';
import { plainDecimal, plainWhole } from '../core/numbers.ts';
import { stdout } from '../core/stdio.ts';
import { UsageError, type FlagSpec, type HelpFacts, type ParsedArgs } from './argv.ts';
import { isHttpUrl } from '../core/http-url.ts';

const GLOBAL: FlagSpec[] = [
  { usage: '-m, --model <provider/model>', description: 'Model to use, e.g. anthropic/claude-sonnet-5-5 or openai/gpt-5' },
  { usage: '--max-output-tokens <n>', description: "Output-token limit of each model call (default: the model family's)" },
  { usage: '--thinking <level>', description: 'Reasoning: off, low, medium or high (where the model supports it)' },
  { usage: '--temperature <t>', description: 'Sampling temperature, 0 to 2 (where the model accepts one)' },
  { usage: '--fallback-model <provider/model>', description: 'Next model of the route when the current one is unavailable (repeatable)', repeatable: true },
  { usage: '--max-cost <usd>', description: 'End the run before a model call the remaining budget may not cover (limit cost_usd)' },
  { usage: '--base-url <url>', description: 'Base URL of the provider (a local OpenAI-compatible server: Ollama, vLLM, llama.cpp)' },
  { usage: '--max-turns <n>', description: 'Limit on model calls (0 = unlimited)' },
  { usage: '--max-tool-calls <n>', description: 'Limit on tool calls (0 = unlimited)' },
  { usage: '--timeout <duration>', description: 'Run deadline: seconds, or 30s / 5m / 1h / 2d (default 1h, at most 365d)' },
  { usage: '--limit <NAME=VALUE>', description: 'Set any limit, e.g. tool_result_bytes=1048576 (repeatable; see README)', repeatable: true },
  { usage: '--unrestricted', description: 'Disable the workspace checks and the process sandbox, on purpose' },
  { usage: '--no-network', description: 'Shell commands get no network (loopback only)' },
  { usage: '--allow-net <host[:port]>', description: 'Shell commands reach only these hosts, through a proxy (repeatable; *.example.org, @preset)', repeatable: true },
  { usage: '--no-shell', description: 'No bash tool; plugins cannot run commands' },
  { usage: '--no-filesystem', description: 'No read, write or edit tools' },
  { usage: '--read-only', description: 'No write or edit; shell commands run under the read-only sandbox profile' },
  { usage: '--allow-home-writes', description: 'Let a run in (or above) your home directory write; ~/.ssh, start-up files, ~/.local/bin stay protected' },
  { usage: '--tools <list>', description: 'Exactly these tools, comma-separated' },
  { usage: '--no-plugins', description: 'Load no plugins' },
  { usage: '--no-mcp', description: 'Start no MCP servers (config.json mcpServers, .mcp.json)' },
  { usage: '--tools-dir <dir>', description: 'Also load plugins from DIR (repeatable)', repeatable: true },
  { usage: '--plugin <name>', description: 'Enable a first-party plugin from plugins/ (repeatable)', repeatable: true },
  { usage: '--project-tools', description: "Load this workspace's .conch/tools without `conch trust`" },
  { usage: '--policy <file>', description: 'Static policy file: narrows tools, paths, commands and the sandbox' },
  { usage: '--stop-on-deny', description: 'End the run as policy_denied at the first policy denial' },
  { usage: '--allow-write <dir>', description: 'Extra writable root outside the workspace (repeatable)', repeatable: true },
  { usage: '--profile <name>', description: (facts) => `Sandbox profile: ${facts.profiles}` },
  { usage: '--env <NAME=VALUE>', description: 'Pass a CONCH_TASK_* variable to shell commands (repeatable)', repeatable: true },
  { usage: '--skill <name>', description: "Put this skill's instructions into the task up front (repeatable; see `conch skills`)", repeatable: true },
];

/**
 * The flags that change which tools (plugins, MCP servers, skills) the model is offered: what
 * `conch tools` and `conch mcp` list depends on these and on nothing else of a run's (the model, its
 * budget and limits, the deadline), so their help lists only these.
 */
const CATALOG_FLAGS = new Set([
  'unrestricted', 'no-network', 'allow-net', 'no-shell', 'no-filesystem', 'read-only', 'allow-home-writes', 'tools', 'no-plugins', 'no-mcp',
  'tools-dir', 'plugin', 'project-tools', 'policy', 'allow-write', 'profile', 'skill',
]);
const CATALOG: FlagSpec[] = GLOBAL.filter((f) => CATALOG_FLAGS.has(/--([a-z][a-z0-9-]*)/.exec(f.usage)![1]!));

const EPHEMERAL: FlagSpec = { usage: '--ephemeral', description: 'Store nothing: no session file for this run' };
const OTEL: FlagSpec = { usage: '--otel', description: 'Export an OpenTelemetry trace per run over OTLP (also on when OTEL_EXPORTER_OTLP_ENDPOINT is set)' };

const RUN: FlagSpec[] = [
  ...GLOBAL,
  { usage: '--json', description: 'Print exactly one JSON document on stdout when the run ends' },
  { usage: '--trace <file>', description: 'Write every event as a JSON line to FILE' },
  { usage: '--trace-content', description: 'Include arguments, paths and output in the trace' },
  { usage: '--output-schema <file>', description: 'The final answer must be one JSON value valid against this JSON Schema (one repair turn, else output_invalid, exit 5)' },
  { usage: '-c, --continue', description: "Continue this workspace's most recent session" },
  { usage: '--resume <id>', description: 'Continue an earlier session of this workspace by id (a unique prefix will do)' },
  { usage: '--fork', description: 'With -c or --resume: a new session from that point; the original stays as it was' },
  EPHEMERAL,
  OTEL,
  { usage: '-i, --interactive', description: 'A conversation on the terminal, each message one more run of one session (the default on a terminal without a task)' },
  { usage: '--tasks-file <file>', description: 'Run the tasks in FILE (one a line, or a JSON array of strings), each its own run' },
  { usage: '--max-concurrent <n>', description: 'With several tasks: how many run at once (default 3)' },
];

/** What every command accepts (cac adds --help to the help by itself). */
const ALWAYS: FlagSpec[] = [
  { usage: '-h, --help', description: 'Display this message' },
  { usage: '-v, --version', description: 'Display version number' },
];

export interface CommandSpec {
  /** The command and its arguments as the help shows them. */
  usage: string;
  description: string;
  flags: FlagSpec[];
}

/** '' is the default command: `conch "task"`. */
export const COMMANDS: Record<string, CommandSpec> = {
  '': { usage: '[...task]', description: 'Run a task (the default command; `conch run WORD` for a one-word task)', flags: RUN },
  run: { usage: 'run [...task]', description: 'Run each argument as a task of its own, several at once (one task: same as the default command)', flags: RUN },
  tools: {
    usage: 'tools [action] [name]',
    description: 'List the tool catalog as the model sees it; `tools new NAME` writes a starter plugin',
    flags: [...CATALOG, { usage: '--json', description: 'Print the catalog as JSON' }],
  },
  mcp: {
    usage: 'mcp',
    description: 'List the MCP servers: whether each started, its tools, why a failed one failed',
    flags: [...CATALOG, { usage: '--json', description: 'Print the servers as JSON' }],
  },
  skills: {
    usage: 'skills',
    description: 'List the Agent Skills found here: source, whether the model is offered each, problems',
    flags: [{ usage: '--json', description: 'Print the skills as JSON' }],
  },
  trust: { usage: 'trust', description: "Trust this workspace: its .conch/tools plugins (records the folder's hash), .agents/skills, .mcp.json servers and .conch/config.json model", flags: [] },
  sandbox: {
    usage: 'sandbox [action] [...command]',
    description: 'Inspect the sandbox: `sandbox check`, or `sandbox run [--no-network] [--profile NAME] -- CMD ARGS…`',
    flags: [
      { usage: '--no-network', description: 'Run without network' },
      { usage: '--profile <name>', description: (facts) => `Sandbox profile: ${facts.profiles}` },
    ],
  },
  acp: { usage: 'acp', description: 'Serve the Agent Client Protocol on stdio (for editors)', flags: [...GLOBAL, EPHEMERAL, OTEL] },
  sessions: {
    usage: 'sessions [action] [id]',
    description: 'Stored sessions: list (this workspace), `show ID`, `rm ID`, `prune --older-than 30d`',
    flags: [
      { usage: '--json', description: 'Print as JSON (list, show)' },
      { usage: '--all', description: 'List the sessions of every workspace' },
      { usage: '--older-than <duration>', description: 'prune: remove sessions last active longer ago than this (30d, 12h)' },
    ],
  },
  help: { usage: 'help [command]', description: 'Show this help, or the help of one command', flags: [] },
};

/** Every flag any command knows: how argv is split into words before the command is known. */
export const ALL_FLAGS: FlagSpec[] = [...ALWAYS, ...new Map(Object.values(COMMANDS).flatMap((c) => c.flags).map((f) => [f.usage, f])).values()];

/** Whether `word` names a command: COMMANDS' own keys only (`conch constructor` is a task, not Object's). */
export function isCommand(word: string): boolean {
  return Object.hasOwn(COMMANDS, word);
}

/** The flags `command` takes ('' is the default command). */
export function flagsOf(command: string): FlagSpec[] {
  return [...ALWAYS, ...COMMANDS[command]!.flags];
}

/** A flag the command does not take is an error, not silently ignored. */
export function checkFlagsOf(command: string, parsed: ParsedArgs): void {
  const known = new Set(flagsOf(command).map((f) => /--([a-z][a-z0-9-]*)/.exec(f.usage)![1]));
  for (const name of parsed.flags.keys()) {
    if (!known.has(name)) throw new UsageError(`'conch ${command || 'run'}' has no option '--${name}'`);
  }
}

/** The help, overall or for one command, from the same table (cac formats it). */
export async function outputHelp(command?: string): Promise<void> {
  const [{ default: cac }, { profileChoicesText }] = await Promise.all([import('cac'), import('../sandbox/profile-names.ts')]);
  const facts: HelpFacts = { profiles: profileChoicesText() };
  const cli = cac('conch');
  for (const [name, spec] of Object.entries(COMMANDS)) {
    const c = cli.command(spec.usage, spec.description);
    for (const f of spec.flags) c.option(f.usage, typeof f.description === 'string' ? f.description : f.description(facts));
    if (name === command) c.action(() => {});
  }
  // Answered before any command (src/cli/version.ts), so it is listed with the top-level flags only.
  if (!command) cli.option('-v, --version', 'Print the version');
  // cac's help of one command leaves out what the command does (the actions of `sessions`, say).
  const about = command && isCommand(command) ? COMMANDS[command]!.description : undefined;
  cli.help((sections) => {
    // cac pads every option line for a default it then leaves out: no line ends in spaces.
    const out = sections.map((section) => ({ ...section, body: section.body.replaceAll(' (default: true)', '').replace(/[ \t]+$/gm, '') }));
    if (about) out.splice(2, 0, { body: `  ${about}` });
    return out;
  });
  // cac prints a command's help when that command is matched with --help, with console.info, which
  // reports no failed write: through conch's stdout, help that reached no one is exit 1 (main.ts).
  const info = console.info;
  console.info = (text: string) => void stdout.write(`${text}\n`);
  try {
    cli.parse(['', 'conch', ...(command ? [command] : []), '--help'], { run: false });
  } finally {
    console.info = info;
  }
}

/** The flags as CliFlags: strings as typed, whole numbers checked, only what the user gave. */
export function toFlags(parsed: ParsedArgs): CliFlags {
  const all = (name: string) => parsed.flags.get(name);
  const one = (name: string) => all(name)?.[0];
  const on = (name: string) => (parsed.flags.has(name) ? true : undefined);
  const off = (name: string) => (parsed.flags.has(name) ? false : undefined);
  const count = (name: string, what = 'a whole number (0 = unlimited)', min = 0) => {
    const v = one(name);
    if (v === undefined) return undefined;
    const n = plainWhole(v);
    if (n === null || n < min) throw new UsageError(`--${name} takes ${what}, got '${v}'`);
    return n;
  };
  const number = (name: string, min: number, max: number, what: string) => {
    const v = one(name);
    if (v === undefined) return undefined;
    const n = plainDecimal(v);
    if (n === null || n < min || n > max) throw new UsageError(`--${name} takes ${what}, got '${v}'`);
    return n;
  };
  // 0 is no limit for a count, but an output limit of 0 tokens would leave no room for an answer.
  const maxOutputTokens = count('max-output-tokens', 'a whole number of tokens above 0', 1);
  const thinking = one('thinking');
  if (thinking !== undefined && !['off', 'low', 'medium', 'high'].includes(thinking)) {
    throw new UsageError(`--thinking takes off, low, medium or high, got '${thinking}'`);
  }
  const baseUrl = one('base-url');
  if (baseUrl !== undefined && !isHttpUrl(baseUrl)) {
    throw new UsageError(`--base-url takes an http:// or https:// URL, e.g. http://localhost:11434/v1; got '${baseUrl}'`);
  }
  return {
    model: one('model'),
    fallbackModel: all('fallback-model'),
    maxOutputTokens,
    thinking: thinking as CliFlags['thinking'],
    temperature: number('temperature', 0, 2, 'a number from 0 to 2 in plain decimal, such as 0.7'),
    maxCost: number('max-cost', 0, Number.MAX_SAFE_INTEGER, 'US dollars, a number ≥ 0 in plain decimal such as 0.50 (0 = unlimited)'),
    baseUrl,
    maxTurns: count('max-turns'),
    maxToolCalls: count('max-tool-calls'),
    timeout: one('timeout'),
    unrestricted: on('unrestricted'),
    network: off('no-network'),
    shell: off('no-shell'),
    filesystem: off('no-filesystem'),
    plugins: off('no-plugins'),
    mcp: off('no-mcp'),
    readOnly: on('read-only'),
    allowHomeWrites: on('allow-home-writes'),
    tools: one('tools'),
    toolsDir: all('tools-dir'),
    plugin: all('plugin'),
    projectTools: on('project-tools'),
    policy: one('policy'),
    stopOnDeny: on('stop-on-deny'),
    limit: all('limit'),
    allowWrite: all('allow-write'),
    allowNet: all('allow-net'),
    profile: one('profile'),
    env: all('env'),
    skill: all('skill'),
    otel: on('otel'),
  };
}
