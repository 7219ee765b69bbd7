// Command rules as config files and policy files give them, one layer per source; policy/
// command-rules.ts evaluates them. Declared with the format (config/), below the evaluator.

export interface CommandRule {
  /** Stable id, named in every decision this rule makes. */
  id: string;
  /** Absolute path, or a bare name resolved through the sandbox PATH like the command's own. */
  executable: string;
  args: string[];
  /** prefix: the command's arguments start with `args`; exact: they equal `args`. */
  match: 'prefix' | 'exact';
  /** Allow and ask rules: variable names a matching command may set (`NAME=… cmd`, `env NAME=… cmd`). */
  env?: string[];
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

/** What loadConfig puts in Config.shellRules: the layers, and the roots the run can change. */
export interface ShellRules {
  layers: CommandLayer[];
  mutableRoots: string[];
}
