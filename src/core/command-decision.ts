// What the command rules (policy/) answer for one command, and what the shell pipeline (shell/)
// asks; declared below both so neither imports the other.
export type CommandDecision = { allowed: true } | { allowed: false; rule: string; message: string };
