// STUB: interface fixed; implementation owned by the sandbox work (issue 4).
export type SandboxProfileName = 'workspace-write' | 'read-only';

export interface SandboxSettings {
  profile: SandboxProfileName;
  network: boolean;
  /** Extra writable roots (absolute), besides the workspace and temp. */
  writableRoots: string[];
  /** Extra protected globs, workspace-relative; added to the defaults, never replacing them. */
  protectedGlobs: string[];
}

export interface SandboxRequest extends SandboxSettings {
  /** The shell command, run as /bin/sh -c COMMAND inside. */
  command: string;
  /** Canonical cwd inside the workspace. */
  cwd: string;
  /** Canonical workspace root. */
  workspace: string;
  /** Private temp dir for this run (writable inside). */
  tmpDir: string;
}

export interface PreparedCommand {
  argv: string[];
  /** Extra fds for the child, as fd 3, 4, … */
  extraFds: number[];
  /** Undo host-side preparation (placeholders, fds). Safe to call twice. */
  release(): Promise<void>;
}

export interface SandboxStatus {
  ok: boolean;
  backend: 'bwrap' | 'seatbelt' | 'none';
  /** What works or what is wrong, specifically. */
  detail: string;
  /** How to fix it, when not ok. */
  fix?: string;
}

/** Probe once per process with a real minimal sandbox; cached. */
export async function probeSandbox(): Promise<SandboxStatus> {
  throw new Error('not implemented');
}

/** Build the sandboxed argv for a command. Throws SandboxUnavailableError when probe fails. */
export async function prepareSandboxed(request: SandboxRequest): Promise<PreparedCommand> {
  throw new Error('not implemented');
}

export class SandboxUnavailableError extends Error {
  constructor(readonly status: SandboxStatus) {
    super(`${status.detail}${status.fix ? ` ${status.fix}` : ''}`);
    this.name = 'SandboxUnavailableError';
  }
}
