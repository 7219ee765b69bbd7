// STUB: interface fixed; implementation owned by the process work (issue 3, bash).
export interface SpawnOptions {
  /** Full argv; argv[0] absolute or found on env.PATH. */
  argv: string[];
  cwd: string;
  /** The complete environment of the child (nothing is inherited). */
  env: Record<string, string>;
  timeoutMs: number;
  signal?: AbortSignal;
  /** Bytes of output kept for the result (head + tail, middle elided with a marker). */
  maxShownBytes: number;
  /** Directory for the full-output log written when output is truncated. */
  logDir: string;
  /** File descriptors handed to the child as fd 3, 4, … (bwrap --seccomp). */
  extraFds?: number[];
  /** Grace between SIGTERM and SIGKILL of the process group. */
  killGraceMs?: number;
  onOutput?: (chunk: string) => void;
}

export interface ProcessResult {
  exitCode: number | null;
  signal: string | null;
  output: string;
  truncated: boolean;
  totalBytes: number;
  logPath: string | null;
  timedOut: boolean;
  cancelled: boolean;
  cleanupError?: string;
  durationMs: number;
}

export async function runProcess(options: SpawnOptions): Promise<ProcessResult> {
  throw new Error('not implemented');
}

/** The small clean environment for commands: PATH, HOME, LANG, TERM=dumb, TMPDIR… plus CONCH_TASK_* extras. */
export function cleanEnv(parent: Record<string, string | undefined>, extra: Record<string, string>): Record<string, string> {
  throw new Error('not implemented');
}
