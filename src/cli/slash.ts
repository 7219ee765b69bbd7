// Slash commands of the interactive mode: answered by conch, never sent to the model.
import { DEFAULT_MODELS } from '../config/model.ts';
import { terminalSafe } from './tool-lines.ts';

export interface SlashContext {
  write(text: string): void;
  tools(): Promise<{ name: string; description: string }[]>;
  /** The model the next task goes to, and the rest of its fallback route. */
  currentModel(): Promise<ModelInUse>;
  /** Go on with another model (the same session). */
  model(name: string): Promise<void>;
  /** A new session; the id of the one left when it is stored (resumable), else null. */
  clear(): Promise<string | null>;
  /** A problem the user can fix (a model that cannot be started): said, and the session goes on. */
  problem(error: unknown): Promise<void>;
}

export interface ModelInUse {
  /** Provider name as the header shows it ('anthropic', a config provider, 'openai-compatible'). */
  provider: string;
  model: string;
  type: 'anthropic' | 'openai';
  baseUrl?: string;
  fallbacks: string[];
}

const EXAMPLE = '/model anthropic/claude-sonnet-5-5';

const HELP = [
  ['/help', 'this list'],
  ['/model', 'the model in use and its provider'],
  ['/model NAME', `go on with another model, e.g. ${EXAMPLE}`],
  ['/tools', 'the tools the model is offered'],
  ['/clear', 'start a new session (this one stays stored: conch sessions, conch --resume ID)'],
  ['/exit', 'end the session (so do Ctrl-D, and Ctrl-C twice at an empty prompt)'],
] as const;

export const SLASH_COMMANDS = [...new Set(HELP.map(([usage]) => usage.split(' ')[0]!))];

/**
 * Whether a submission is for conch: it starts with a command's shape (/name), not with a path
 * (/etc/hosts, or a pasted error that begins with the file it is about), which goes to the model.
 */
export function isSlashCommand(text: string): boolean {
  return /^\/[A-Za-z][\w-]*(\s|$)/.test(text);
}

/** The commands a line being typed may become (Tab completes them); none once it has an argument. */
export function slashCompletions(line: string): string[] {
  if (!/^\/\S*$/.test(line)) return [];
  return SLASH_COMMANDS.filter((name) => name.startsWith(line));
}

/** 'exit' when the session should end. */
export async function slashCommand(line: string, ctx: SlashContext): Promise<'exit' | void> {
  const [command = '', ...args] = line.trim().split(/\s+/);
  switch (command) {
    case '/help':
      ctx.write(`${HELP.map(([usage, what]) => `  ${usage.padEnd(13)} ${what}`).join('\n')}\n` +
        '  Enter sends; a line ending in \\ continues on the next; ↑/↓ go through earlier submissions;\n' +
        '  Tab completes a command.\n' +
        '  Ctrl-C cancels a run (the model and its command) and returns here.\n');
      return;
    case '/exit':
    case '/quit':
      return 'exit';
    case '/tools': {
      // Names and descriptions come from MCP servers and plugins.
      const tools = (await ctx.tools()).map((t) => ({ name: terminalSafe(t.name), description: terminalSafe(t.description) }));
      const width = Math.max(0, ...tools.map((t) => t.name.length));
      // One line per tool: a description that wraps breaks the columns.
      const room = Math.max(20, (process.stdout.columns || 100) - width - 5);
      ctx.write(tools.length ? `${tools.map((t) => `  ${t.name.padEnd(width)}  ${firstSentence(t.description, room)}`).join('\n')}\n` : '  (no tools)\n');
      return;
    }
    case '/model':
      if (args.length === 0) {
        try {
          ctx.write(describeModel(await ctx.currentModel()));
        } catch (error) {
          await ctx.problem(error);
        }
        return;
      }
      if (args.length !== 1) {
        ctx.write(`conch: /model takes one name (provider/model), e.g. ${EXAMPLE}; /model alone shows the one in use\n`);
        return;
      }
      try {
        await ctx.model(args[0]!);
        ctx.write(`conch: model ${args[0]} from the next task on\n`);
      } catch (error) {
        await ctx.problem(error);
      }
      return;
    case '/clear':
      try {
        // Nothing asked yet, or --ephemeral: there is no previous one to speak of.
        const left = await ctx.clear();
        ctx.write(left ? `conch: a new session; the previous one is stored (conch --resume ${left})\n` : 'conch: a new session\n');
      } catch (error) {
        await ctx.problem(error);
      }
      return;
    default:
      ctx.write(`conch: unknown command ${command.slice(0, 40)}; /help lists the commands (not sent to the model)\n`);
  }
}

/** An example on the provider in use: one the user has no key for would only be refused. */
function sameProvider(provider: string): string {
  const known = (DEFAULT_MODELS as Record<string, string>)[provider];
  return `${provider}/${known ?? 'MODEL'}`;
}

function describeModel(m: ModelInUse): string {
  // A bare --base-url server's models are named without a provider (`/model qwen2.5-coder`).
  const bare = m.provider === 'openai-compatible';
  const where = bare ? `an OpenAI-compatible server at ${m.baseUrl}` : `provider ${m.provider}, ${m.type === 'anthropic' ? 'Anthropic' : 'OpenAI'} API${m.baseUrl ? ` at ${m.baseUrl}` : ''}`;
  const route = m.fallbacks.length ? `\n  then, when it is unavailable: ${m.fallbacks.join(', ')}` : '';
  return `conch: model ${bare ? m.model : `${m.provider}/${m.model}`} (${where})${route}\n` +
    `  /model NAME goes on with another in this conversation, e.g. /model ${bare ? 'qwen2.5-coder' : sameProvider(m.provider)}\n`;
}

/** The description's first sentence, cut at a word with an ellipsis when it would not fit in `room`. */
function firstSentence(text: string, room: number): string {
  const line = text.split('\n', 1)[0] ?? '';
  const end = line.search(/\.\s/);
  const sentence = end === -1 ? line : line.slice(0, end + 1);
  if (sentence.length <= room) return sentence;
  const cut = sentence.slice(0, room - 1);
  const space = cut.lastIndexOf(' ');
  return `${(space > room / 2 ? cut.slice(0, space) : cut).replace(/[\s,;:]+$/, '')}…`;
}
