// The command line, read exactly as typed. cac's parser (mri) turns numeric-looking values into
// numbers ("802e16" → 8.02e18, "" → 0), takes `--timeout -5` for a flag named -5, and reports flags
// in camelCase; so conch reads argv itself and keeps cac only for the help text. (Not with
// node:util's parseArgs, which splits words the same way: loading node:util costs every start
// 1.7 MiB of memory.) Every value is the string the user typed; a value flag given twice, or given
// empty, is a usage error naming the flag.

/** What the help knows only once it is asked for (found on disk, so not read at every start). */
export interface HelpFacts {
  /** The sandbox profiles installed: 'workspace-write (default) or read-only'. */
  profiles: string;
}

/** One flag as cac's help shows it: '-m, --model <provider/model>' or '--read-only'. */
export interface FlagSpec {
  usage: string;
  description: string | ((facts: HelpFacts) => string);
  /** May be given more than once; each value is kept. */
  repeatable?: boolean;
}

export interface ParsedArgs {
  /** Words that are not flags or flag values, in order (the command, then its arguments). */
  positionals: string[];
  /** Everything after a bare `--`, untouched. */
  afterDashes: string[];
  /** Long name (no dashes) → the values typed, in order; a boolean flag has no values. */
  flags: Map<string, string[]>;
}

export class UsageError extends Error {
  override name = 'UsageError';
}

/**
 * A flag no command knows, at `index` in argv. The words are split before the command is known, so
 * the caller, which then knows it, names the near flag from that command's own (unknownFlag).
 */
export class UnknownFlagError extends UsageError {
  constructor(
    readonly typed: string,
    readonly index: number,
    message: string,
  ) {
    super(message);
  }
}

/** The line under a usage error: where that command's usage is. */
export function usageHint(command: string): string {
  return `Run 'conch ${command ? `${command} ` : ''}--help' for usage.\n`;
}

interface Flag {
  long: string;
  short?: string;
  takesValue: boolean;
  repeatable: boolean;
  /** What the value is, as the help names it: 'provider/model', 'id'. */
  placeholder?: string;
}

function flagOf(spec: FlagSpec): Flag {
  const long = /--([a-z][a-z0-9-]*)/.exec(spec.usage)?.[1];
  if (!long) throw new Error(`flag spec without a long name: ${spec.usage}`);
  const short = /(?:^|\s)-([a-zA-Z])\b/.exec(spec.usage)?.[1];
  const placeholder = /[<[]([^>\]]+)[>\]]/.exec(spec.usage)?.[1];
  return { long, ...(short && { short }), takesValue: /[<[]/.test(spec.usage), repeatable: spec.repeatable === true, ...(placeholder && { placeholder }) };
}

/**
 * Read argv against the flags a command knows: a bare `--` ends the flags, a word of two or more
 * characters starting with `-` is a flag, any other word is a positional. `--name=value` and
 * `--name value` both work, and the value is the next word whatever it looks like (`--timeout -5`
 * is a value for --timeout to judge) except another long flag, which means the value was left out;
 * a short flag is one letter on its own (`-m x`, `-m=x`), never a group (`-ic`) or glued to its
 * value (`-mx`); a single-valued flag given twice, an empty value, a value for a switch and an
 * unknown flag are usage errors naming the flag, the first one met.
 */
export function parseArgs(argv: string[], specs: FlagSpec[]): ParsedArgs {
  const flags = specs.map(flagOf);
  const byLong = new Map(flags.map((f) => [f.long, f]));
  const byShort = new Map(flags.filter((f) => f.short).map((f) => [f.short!, f]));
  const parsed: ParsedArgs = { positionals: [], afterDashes: [], flags: new Map() };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (arg === '--') {
      parsed.afterDashes = argv.slice(i + 1);
      break;
    }
    if (arg.length < 2 || !arg.startsWith('-')) {
      parsed.positionals.push(arg);
      continue;
    }
    const eq = arg.indexOf('=');
    const typed = eq === -1 ? arg : arg.slice(0, eq);
    const flag = typed.startsWith('--') ? byLong.get(typed.slice(2)) : typed.length === 2 ? byShort.get(typed[1]!) : undefined;
    if (!flag) throw new UnknownFlagError(typed, i, unknownFlag(typed, specs));
    const shown = `--${flag.long}`;
    const values = parsed.flags.get(flag.long);
    if (!flag.takesValue) {
      if (eq !== -1) throw new UsageError(`${shown} takes no value (got '${arg}')`);
      parsed.flags.set(flag.long, values ?? []);
      continue;
    }
    const value = eq !== -1 ? arg.slice(eq + 1) : argv[++i];
    if (value === undefined || (eq === -1 && value.startsWith('--'))) throw new UsageError(`${shown} needs a value: ${shown} ${(flag.placeholder ?? 'value').toUpperCase()}${NEEDS_HINT[flag.long] ?? ''}`);
    if (value === '') throw new UsageError(`${shown} was given an empty value`);
    if (values && !flag.repeatable) throw new UsageError(`${shown} was given more than once ('${values[0]}', then '${value}'); give it once`);
    parsed.flags.set(flag.long, [...(values ?? []), value]);
  }
  return parsed;
}

/** Where to find a value the user may not have at hand. */
const NEEDS_HINT: Record<string, string> = {
  resume: ' (`conch sessions` lists the ids; -c continues the latest)',
  model: ' (e.g. anthropic/claude-sonnet-5-5; with --base-url, a model name the server serves)',
};

/** The message for a flag `typed` that is not among `specs`, with the one of them it is nearest to. */
export function unknownFlag(typed: string, specs: FlagSpec[]): string {
  const near = closest(typed.replace(/^-+/, ''), specs.map((spec) => flagOf(spec).long));
  return `unknown option '${typed}'${near ? ` (did you mean '--${near}'?)` : ''}`;
}

/** The one candidate at most one edit (insert, delete, change or swap of neighbours) away, if any. */
export function closest(word: string, candidates: string[]): string | undefined {
  return candidates.find((c) => c !== word && editDistance(word, c) <= 1);
}

/** Optimal string alignment distance: Levenshtein plus swapping two adjacent characters. */
function editDistance(a: string, b: string): number {
  if (Math.abs(a.length - b.length) > 1) return 2;
  const d = Array.from({ length: a.length + 1 }, (_, i) => Array.from({ length: b.length + 1 }, (_, j) => (i === 0 ? j : j === 0 ? i : 0)));
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      d[i]![j] = Math.min(d[i - 1]![j]! + 1, d[i]![j - 1]! + 1, d[i - 1]![j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) d[i]![j] = Math.min(d[i]![j]!, d[i - 2]![j - 2]! + 1);
    }
  }
  return d[a.length]![b.length]!;
}
