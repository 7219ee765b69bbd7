// Command rules: which literal commands the shell may run, checked before anything starts.
//
// Honest scope: a rule constrains the literal command line conch is asked to run — the program it
// resolves to and its arguments. It does not constrain what an allowed program does afterwards
// (a permitted `make` runs whatever the Makefile says); containing that is the sandbox's job.
// Deny-only rule sets also cannot see inside constructs they cannot parse (a pipe, `&&`, …): such a
// command is refused only when some layer has an allow rule, an ask rule, or a deny/ask default.
//
// Variables: a leading `NAME=value` (or `env NAME=value cmd`) changes what an allowed program does
// (GIT_CONFIG_* makes `git status` run commands, NODE_OPTIONS and PERL5OPT load code, GIT_DIR picks
// another repository's config). Where a layer checks commands (an allow list, an ask rule, or a
// deny/ask default) a command that sets any variable is unprovable unless the allow or ask rule it
// matches lists every name it sets in its optional `env`, exact names, no patterns:
//   { "id": "tests", "executable": "make", "args": ["test"], "env": ["CI", "VERBOSE"] }
// Deny rules ignore `env` and match whatever the command sets.
//
// Changeable paths: an executable reached through a directory commands in this run can write (the
// workspace, a writable root, /tmp), or found on PATH after an entry in one, can be swapped between
// this check and the exec, so it proves nothing about a rule naming a program elsewhere: `d/git`
// with `d -> /usr/bin` does not match a /usr/bin/git rule. Rules naming a program inside those
// directories match it as usual.
//
// Layers (user config, project config, policy file) are evaluated separately and combined so that
// a later layer can only narrow: any layer's deny wins, any layer's ask asks, and a command must be
// allowed by every layer that has an allow list.
import { delimiter, isAbsolute, join, normalize, resolve } from 'node:path';
import type { CommandDecision } from '../core/command-decision.ts';
import type { CommandLayer, CommandRule, ShellRules } from '../config/command-layer.ts';
import { parseCommand } from './command-parse.ts';
import { changeableAt, findOnPath, realDir, sameProgram } from './executable.ts';

export { findOnPath };




export type ApprovalAnswer = 'once' | 'always' | 'deny';
export type Approver = (command: string, rule: string) => Promise<ApprovalAnswer>;

export interface GuardOptions {
  /** Find `name` on `PATH` (a colon list); null when not found. Never realpath the result. */
  resolveExecutable(name: string, path: string): string | null | Promise<string | null>;
  /** The PATH of the clean environment commands run with. */
  path: string;
  /** Present only on an interactive terminal; without it `ask` means deny. */
  approver?: Approver;
  /** Directories commands in this run can change: the workspace root, writable roots, /tmp. */
  mutableRoots?: string[];
}

export type CommandGuard = (command: string, cwd: string) => Promise<CommandDecision>;


/** The layers of Config.shellRules (typed `unknown` in the fixed Config interface). */
export function shellRuleLayers(value: unknown): CommandLayer[] | null {
  const layers = Array.isArray(value) ? value : (value as ShellRules | null)?.layers;
  return Array.isArray(layers) && layers.length ? (layers as CommandLayer[]) : null;
}

/** The changeable roots of Config.shellRules, for GuardOptions.mutableRoots. */
export function shellRuleRoots(value: unknown): string[] {
  const roots = Array.isArray(value) ? undefined : (value as ShellRules | null)?.mutableRoots;
  return Array.isArray(roots) ? roots : [];
}

/** Variables that make a program load or run other code before it starts (named in messages). */
const CODE_LOADING_VAR = /^(LD_|DYLD_|BASH_FUNC_)|^(BASH_ENV|ENV)$/;

function describeRule(rule: CommandRule): string {
  const args = rule.args.length ? ` ${rule.args.join(' ')}` : '';
  return `${rule.executable}${args} (${rule.match})`;
}

function argsMatch(rule: CommandRule, args: string[]): boolean {
  if (rule.match === 'exact' && args.length !== rule.args.length) return false;
  if (args.length < rule.args.length) return false;
  return rule.args.every((a, i) => args[i] === a);
}

/** One command as the rules see it. */
interface Candidate {
  text: string;
  /** The program as written. */
  name: string;
  exe: string | null;
  args: string[];
  /** Names of the variables it sets, in order, without repeats. */
  vars: string[];
  /** Its lookup passes through a directory the run can change. */
  changeable: boolean;
}

type Verdict =
  | { kind: 'allow' }
  | { kind: 'deny'; rule: string; message: string }
  /** remember: the key an "always" answer is stored under (the rule, or the exact command). */
  | { kind: 'ask'; rule: string; message: string; remember: string };

const SEVERITY = { allow: 0, ask: 1, deny: 2 } as const;

const quoted = (names: string[]) => names.map((n) => `"${n}"`).join(', ');

/** Why setting `vars` cannot be checked, and the fix (naming `rule` when one matched). */
function variablesWhy(vars: string[], name: string, rule: CommandRule | null, source: string): string {
  const loading = vars.filter((v) => CODE_LOADING_VAR.test(v));
  const what = `${vars.length > 1 ? 'the variables' : 'the variable'} ${vars.join(', ')}`;
  const effect = loading.length
    ? `${loading.join(', ')} ${loading.length > 1 ? 'make' : 'makes'} programs load other code`
    : `variables can change what "${name}" does (GIT_CONFIG_* makes git run commands, NODE_OPTIONS or PERL5OPT load code)`;
  const permit = rule ? `, or add "env": [${quoted(vars)}] to rule "${rule.id}" (${source}) to permit ${vars.length > 1 ? 'them' : 'it'}` : '';
  return `it sets ${what}, and ${effect}${rule ? `; rule "${rule.id}" does not list ${vars.length > 1 ? 'them' : 'it'} in its "env"` : ''}. Run the command without the assignment${vars.length > 1 ? 's' : ''}${permit}`;
}

export function createCommandGuard(layers: CommandLayer[], opts: GuardOptions): CommandGuard {
  const active = layers.filter((l) => l.allow.length || l.deny.length || l.ask.length || (l.default && l.default !== 'allow'));
  const roots = [...new Set((opts.mutableRoots ?? []).flatMap((r) => [normalize(r), realDir(r)]))];
  const remembered = new Set<string>();
  let prompting: Promise<unknown> = Promise.resolve();

  // Resolved at every decision: nothing about the filesystem is remembered between commands.
  const ruleExecutable = async (rule: CommandRule): Promise<string | null> =>
    isAbsolute(rule.executable) ? normalize(rule.executable) : await opts.resolveExecutable(rule.executable, opts.path);
  const matching = async (rules: CommandRule[], c: Candidate) => {
    const found: { rule: CommandRule; target: string }[] = [];
    if (c.exe === null) return found;
    for (const rule of rules) {
      const target = await ruleExecutable(rule);
      if (target !== null && sameProgram(target, c.exe) && argsMatch(rule, c.args)) found.push({ rule, target });
    }
    return found;
  };
  // A name found on PATH also depends on every entry searched before it: a file created in one of
  // them between this check and the exec would run instead.
  const lookedAt = (name: string, exe: string): string[] => {
    if (name.includes('/')) return [exe];
    const before: string[] = [];
    for (const dir of opts.path.split(delimiter)) {
      if (!dir || !isAbsolute(dir)) continue;
      const candidate = join(dir, name);
      if (candidate === exe) break;
      before.push(candidate);
    }
    return [...before, exe];
  };
  /** Why a rule that matches `c` still cannot vouch for it, or null when it can. */
  const unproven = (m: { rule: CommandRule; target: string }, c: Candidate, layer: CommandLayer): string | null => {
    const unlisted = c.vars.filter((v) => !(m.rule.env ?? []).includes(v));
    if (unlisted.length) return variablesWhy(unlisted, c.name, m.rule, layer.source);
    if (c.changeable && changeableAt(m.target, roots) === null) {
      return `it reaches "${c.name}" through a directory that commands in this run can change, so it cannot be proven to be ${m.target} (rule "${m.rule.id}") when it runs. Run "${m.rule.executable}" itself instead`;
    }
    return null;
  };

  // Refused where the layer wants commands checked (an allow list or default deny), asked about
  // (each exact command) where it only asks.
  const layerUnprovable = (layer: CommandLayer, c: Candidate, why: string, askRule?: string): Verdict => {
    if (layer.allow.length || layer.default === 'deny') {
      const rule = layer.allow.length && layer.default !== 'deny' ? `${layer.idPrefix}.allow` : `${layer.idPrefix}.default`;
      return { kind: 'deny', rule, message: `command denied (${rule}, ${layer.source}): it cannot be checked against the command rules: ${why}.` };
    }
    const rule = askRule ?? layer.ask[0]?.id ?? `${layer.idPrefix}.default`;
    return { kind: 'ask', rule, message: `command cannot be checked against the command rules: ${why}.`, remember: `command:${c.text}` };
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

  const judgeLayer = async (layer: CommandLayer, c: Candidate): Promise<Verdict> => {
    const denied = (await matching(layer.deny, c))[0]?.rule;
    if (denied) {
      return { kind: 'deny', rule: denied.id, message: `command denied by rule "${denied.id}" (${layer.source}: deny ${describeRule(denied)}).` };
    }
    const asks = await matching(layer.ask, c);
    if (asks.length) {
      const ask = asks.find((m) => unproven(m, c, layer) === null)?.rule;
      if (!ask) return layerUnprovable(layer, c, unproven(asks[0]!, c, layer)!, asks[0]!.rule.id);
      return { kind: 'ask', rule: ask.id, message: `command matches "ask" rule "${ask.id}" (${describeRule(ask)}).`, remember: `rule:${ask.id}` };
    }
    const allows = await matching(layer.allow, c);
    if (allows.length) {
      if (allows.some((m) => unproven(m, c, layer) === null)) return { kind: 'allow' };
      return layerUnprovable(layer, c, unproven(allows[0]!, c, layer)!);
    }
    const fallback = layer.default ?? (layer.allow.length ? 'deny' : 'allow');
    if (fallback === 'allow' && !layer.allow.length) {
      // Ask rules alone: a variable could make an unmatched command do what an ask rule covers.
      if (c.vars.length && layer.ask.length) return layerUnprovable(layer, c, variablesWhy(c.vars, c.name, null, layer.source));
      return { kind: 'allow' };
    }
    const rule = layer.allow.length && layer.default !== 'ask' && layer.default !== 'deny' ? `${layer.idPrefix}.allow` : `${layer.idPrefix}.default`;
    if (fallback === 'ask') {
      return { kind: 'ask', rule, message: `command is not matched by any rule of the ${layer.source} (default "ask").`, remember: `command:${c.text}` };
    }
    const where =
      c.exe === null ? `"${c.name}" was not found on the sandbox PATH, so no rule can allow it` : `${c.exe} ${c.args.join(' ')}`.trimEnd() + ' is not matched by any allow rule';
    const allowed = layer.allow.slice(0, 8).map((r) => `"${r.id}": ${describeRule(r)}`);
    const list = allowed.length ? ` Allowed: ${allowed.join('; ')}${layer.allow.length > 8 ? '; …' : ''}.` : '';
    return { kind: 'deny', rule, message: `command denied (${rule}, ${layer.source}): ${where}.${list}` };
  };

  const decide = async (command: string, cwd: string): Promise<Verdict> => {
    const parsed = parseCommand(command);
    if (!parsed.ok) return unprovable(command, parsed.message);
    const name = parsed.argv[0]!;
    let exe: string | null;
    if (isAbsolute(name)) exe = normalize(name);
    else if (name.includes('/')) exe = resolve(cwd, name);
    else if (parsed.assignments.some((a) => a.name === 'PATH')) {
      return unprovable(command, `a PATH assignment, which changes which "${name}" runs`);
    } else exe = await opts.resolveExecutable(name, opts.path);
    const c: Candidate = {
      text: command,
      name,
      exe,
      args: parsed.argv.slice(1),
      vars: [...new Set(parsed.assignments.map((a) => a.name))],
      changeable: exe !== null && lookedAt(name, exe).some((p) => changeableAt(p, roots) !== null),
    };

    let worst: Verdict = { kind: 'allow' };
    for (const layer of active) {
      const v = await judgeLayer(layer, c);
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
