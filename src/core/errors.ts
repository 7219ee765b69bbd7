// The errors a user can cause, shared across layers; each carries a message that names the fix.
// Hosts tell them from bugs with instanceof, never by comparing names.

/** A refusal by the workspace policy, the command rules or a policy file. */
export class PolicyError extends Error {
  constructor(
    /** Stable id of the deciding rule, e.g. 'workspace.outside' or 'docs.no-force'. */
    readonly rule: string,
    message: string,
  ) {
    super(message);
    this.name = 'PolicyError';
  }
}

/** A user-caused configuration problem: names the file, the key and the fix. */
export class ConfigError extends Error {
  constructor(
    message: string,
    readonly file?: string,
    readonly key?: string,
  ) {
    super(message);
    this.name = 'ConfigError';
  }
}

/** The run cannot start (no usable model, sandbox or workspace); the message says what to fix. */
export class SetupError extends Error {
  override name = 'SetupError';
}

/**
 * What code threw, as text: an Error's message, else the value as a string. Plugin code can throw
 * anything, including a value with no text at all (Object.create(null), a toString that throws);
 * describing it must not throw in turn.
 */
export function thrownText(value: unknown): string {
  try {
    return String(value instanceof Error ? value.message : value);
  } catch {
    return 'a value that cannot be shown as text';
  }
}

/** Why a directory could not be made or a file written, in words (the errno), for a message that then names the fix. */
export function mkdirFailure(error: unknown): string {
  const code = (error as NodeJS.ErrnoException | null)?.code;
  if (code === 'EACCES' || code === 'EPERM') return 'permission denied';
  if (code === 'EROFS') return 'a read-only file system';
  if (code === 'ENOTDIR' || code === 'EEXIST') return 'a file is in the way';
  return thrownText(error);
}

/** A file of conch's own in its config folder (trusted.json, a starter plugin) that cannot be written: the path, why, the fix. */
export function configWriteFailure(path: string, error: unknown): string {
  return `cannot write ${path} (${mkdirFailure(error)}): make the folder writable, or set XDG_CONFIG_HOME to a directory you can write`;
}
