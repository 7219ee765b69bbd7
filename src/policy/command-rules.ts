// Command rules: which literal commands the shell may run, checked before anything starts.
//
// Honest scope: a rule constrains the literal command line conch is asked to run — the program it
// resolves to and its arguments. It does not constrain what an allowed program does afterwards
// (a permitted `make` runs whatever the Makefile says); containing that is the sandbox's job.
// Deny-only rule sets also cannot see inside constructs they cannot parse (a pipe, `&&`, …): such a
// command is refused only when some layer has an allow rule, an ask rule, or a deny/ask default.
//
// Layers (user config, project config, policy file) are evaluated separately and combined so that
// a later layer can only narrow: any layer's deny wins, any layer's ask asks, and a command must be
// allowed by every layer that has an allow list.
import { accessSync, constants, realpathSync, statSync } from 'node:fs';
import { basename, delimiter, dirname, isAbsolute, join, normalize, resolve } from 'node:path';
import type { CommandDecision } from '../tools/exec.ts';
import { type Assignment, parseCommand } from './command-parse.ts';

export interface CommandRule {
  /** Stable id, named in every decision this rule makes. */
  id: string;
  /** Absolute path, or a bare name resolved through the sandbox PATH like the command's own. */
  executable: string;
  args: string[];
  /** prefix: the command's arguments start with `args`; exact: they equal `args`. */
  match: 'prefix' | 'exact';
}

export type CommandDefault = 'allow' | 'deny' | 'ask';

export interface CommandLayer {
  /** Where the rules came from, for messages: 'user config', 'project config', 'policy file'. */
  source: string;
  /** Prefix of the ids of implicit rules ("<prefix>.default", "<prefix>.allow"). */
  idPrefix: string;
  /**
   * What an unmatched command gets. Absent: deny when the layer has allow rules, else allow. A
   * non-empty allow list denies the unmatched even under "allow"; "ask" and "deny" apply as said.
   */
  default?: CommandDefault;
  allow: CommandRule[];
  deny: CommandRule[];
  ask: CommandRule[];
}

export type ApprovalAnswer = 'once' | 'always' | 'deny';
export type Approver = (command: string, rule: string) => Promise<ApprovalAnswer>;

export interface GuardOptions {
  /** Find `name` on `PATH` (a colon list); null when not found. Never realpath the result. */
  resolveExecutable(name: string, path: string): string | null | Promise<string | null>;
  /** The PATH of the clean environment commands run with. */
  path: string;
  /** Present only on an interactive terminal; without it `ask` means deny. */
  approver?: Approver;
}

export type CommandGuard = (command: string, cwd: string) => Promise<CommandDecision>;

/** Config.shellRules as loadConfig fills it (typed `unknown` in the fixed Config interface). */
export function shellRuleLayers(value: unknown): CommandLayer[] | null {
  return Array.isArray(value) && value.length ? (value as CommandLayer[]) : null;
}

/** Environment variables that make a program load or run other code before it starts. */
const CODE_LOADING_VAR = /^(LD_|DYLD_|BASH_FUNC_)|^(BASH_ENV|ENV)$/;

/** The usual executable lookup: the first PATH entry holding an executable regular file. */
export function findOnPath(name: string, path: string): string | null {
  for (const dir of path.split(delimiter)) {
    if (!dir || !isAbsolute(dir)) continue; // a relative PATH entry would depend on the cwd
    const candidate = join(dir, name);
    try {
      if (!statSync(candidate).isFile()) continue;
      accessSync(candidate, constants.X_OK);
      return candidate;
    } catch {
      // not here
    }
  }
  return null;
}

// Two spellings name the same program when their directories are the same directory: /bin/rm is
// /usr/bin/rm on a merged-/usr system. The file itself is not followed (python3 stays python3).
function sameProgram(a: string, b: string, dirs: Map<string, string>): boolean {
  if (a === b) return true;
  if (basename(a) !== basename(b)) return false;
  const real = (dir: string) => {
    let r = dirs.get(dir);
    if (r === undefined) {
      try {
        r = realpathSync(dir);
      } catch {
        r = dir;
      }
      dirs.set(dir, r);
    }
    return r;
  };
  return real(dirname(a)) === real(dirname(b));
}

function describeRule(rule: CommandRule): string {
  const args = rule.args.length ? ` ${rule.args.join(' ')}` : '';
  return `${rule.executable}${args} (${rule.match})`;
}

function argsMatch(rule: CommandRule, args: string[]): boolean {
  if (rule.match === 'exact' && args.length !== rule.args.length) return false;
  if (args.length < rule.args.length) return false;
  return rule.args.every((a, i) => args[i] === a);
}

type Verdict =
  | { kind: 'allow' }
  | { kind: 'deny'; rule: string; message: string }
  /** remember: the key an "always" answer is stored under (the rule, or the exact command). */
  | { kind: 'ask'; rule: string; message: string; remember: string };

const SEVERITY = { allow: 0, ask: 1, deny: 2 } as const;

export function createCommandGuard(layers: CommandLayer[], opts: GuardOptions): CommandGuard {
  const active = layers.filter((l) => l.allow.length || l.deny.length || l.ask.length || (l.default && l.default !== 'allow'));
  const remembered = new Set<string>();
  const dirCache = new Map<string, string>();
  const ruleExecutables = new Map<string, string | null>();
  let prompting: Promise<unknown> = Promise.resolve();

  const ruleExecutable = async (rule: CommandRule): Promise<string | null> => {
    if (isAbsolute(rule.executable)) return normalize(rule.executable);
    if (!ruleExecutables.has(rule.executable)) {
      ruleExecutables.set(rule.executable, await opts.resolveExecutable(rule.executable, opts.path));
    }
    return ruleExecutables.get(rule.executable) ?? null;
  };
  const matches = async (rules: CommandRule[], exe: string | null, args: string[]) => {
    if (exe === null) return undefined;
    for (const rule of rules) {
      const target = await ruleExecutable(rule);
      if (target !== null && sameProgram(target, exe, dirCache) && argsMatch(rule, args)) return rule;
    }
    return undefined;
  };

  // A command whose argv cannot be known: refused wherever an allow list, an ask rule or a
  // non-allow default shows the user wants commands checked, asked about where only asking applies.
  const unprovable = (command: string, what: string): Verdict => {
    const strict = active.find((l) => l.allow.length || l.default === 'deny');
    const why = `cannot be checked against the command rules: it uses ${what}. Rules only accept one simple command (a program and literal arguments); run it without shell constructs`;
    if (strict) {
      const rule = strict.allow.length && strict.default !== 'deny' ? `${strict.idPrefix}.allow` : `${strict.idPrefix}.default`;
      return { kind: 'deny', rule, message: `command denied (${rule}, ${strict.source}): it ${why}.` };
    }
    const asking = active.find((l) => l.ask.length || l.default === 'ask');
    if (asking) {
      const rule = asking.ask[0]?.id ?? `${asking.idPrefix}.default`;
      return { kind: 'ask', rule, message: `command ${why}.`, remember: `command:${command}` };
    }
    return { kind: 'allow' };
  };

  const judgeLayer = async (layer: CommandLayer, exe: string | null, name: string, args: string[], command: string): Promise<Verdict> => {
    const denied = await matches(layer.deny, exe, args);
    if (denied) {
      return { kind: 'deny', rule: denied.id, message: `command denied by rule "${denied.id}" (${layer.source}: deny ${describeRule(denied)}).` };
    }
    const ask = await matches(layer.ask, exe, args);
    if (ask) return { kind: 'ask', rule: ask.id, message: `command matches "ask" rule "${ask.id}" (${describeRule(ask)}).`, remember: `rule:${ask.id}` };
    if (await matches(layer.allow, exe, args)) return { kind: 'allow' };
    const fallback = layer.default ?? (layer.allow.length ? 'deny' : 'allow');
    if (fallback === 'allow' && !layer.allow.length) return { kind: 'allow' };
    const rule = layer.allow.length && layer.default !== 'ask' && layer.default !== 'deny' ? `${layer.idPrefix}.allow` : `${layer.idPrefix}.default`;
    if (fallback === 'ask') {
      return { kind: 'ask', rule, message: `command is not matched by any rule of the ${layer.source} (default "ask").`, remember: `command:${command}` };
    }
    const where = exe === null ? `"${name}" was not found on the sandbox PATH, so no rule can allow it` : `${exe} ${args.join(' ')}`.trimEnd() + ' is not matched by any allow rule';
    const allowed = layer.allow.slice(0, 8).map((r) => `"${r.id}": ${describeRule(r)}`);
    const list = allowed.length ? ` Allowed: ${allowed.join('; ')}${layer.allow.length > 8 ? '; …' : ''}.` : '';
    return { kind: 'deny', rule, message: `command denied (${rule}, ${layer.source}): ${where}.${list}` };
  };

  const decide = async (command: string, cwd: string): Promise<Verdict> => {
    const parsed = parseCommand(command);
    if (!parsed.ok) return unprovable(command, parsed.message);
    const name = parsed.argv[0]!;
    const risky = parsed.assignments.find((a: Assignment) => CODE_LOADING_VAR.test(a.name));
    if (risky) return unprovable(command, `the variable ${risky.name}, which makes programs load other code`);
    let exe: string | null;
    if (isAbsolute(name)) exe = normalize(name);
    else if (name.includes('/')) exe = resolve(cwd, name);
    else if (parsed.assignments.some((a) => a.name === 'PATH')) {
      return unprovable(command, `a PATH assignment, which changes which "${name}" runs`);
    } else exe = await opts.resolveExecutable(name, opts.path);
    const args = parsed.argv.slice(1);

    let worst: Verdict = { kind: 'allow' };
    for (const layer of active) {
      const v = await judgeLayer(layer, exe, name, args, command);
      if (SEVERITY[v.kind] > SEVERITY[worst.kind]) worst = v;
      if (worst.kind === 'deny') break;
    }
    return worst;
  };

  const ask = async (command: string, v: Extract<Verdict, { kind: 'ask' }>): Promise<CommandDecision> => {
    if (remembered.has(v.remember)) return { allowed: true };
    if (!opts.approver) {
      return { allowed: false, rule: v.rule, message: `"ask" rule ${v.rule} needs a terminal; denied (no TTY to ask on: pipes, CI and --json cannot answer). ${v.message}` };
    }
    const approver = opts.approver;
    // One question at a time, and a second identical question is answered by the first "always".
    // A failing prompt fails closed: the command does not run.
    const answer = prompting.then(async () => (remembered.has(v.remember) ? 'once' : approver(command, v.rule))).catch((): ApprovalAnswer => 'deny');
    prompting = answer;
    const result = await answer;
    if (result === 'deny') return { allowed: false, rule: v.rule, message: `the user declined this command at the prompt for rule "${v.rule}".` };
    if (result === 'always') remembered.add(v.remember);
    return { allowed: true };
  };

  return async (command, cwd) => {
    if (active.length === 0) return { allowed: true };
    const v = await decide(command, cwd);
    if (v.kind === 'allow') return { allowed: true };
    if (v.kind === 'ask') return ask(command, v);
    return { allowed: false, rule: v.rule, message: v.message };
  };
}
