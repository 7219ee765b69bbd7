// `conch acp`'s side of the watchdog (cli/watchdog.ts: a thread of its own that ends conch when
// plugin code stops the main thread). cli/main.ts hands in the way to start it, since acp/ sits
// below cli/; it starts when a session is about to import plugins or offers MCP tools (an MCP
// schema that backtracks holds the main thread as plugin code can). Then a plugin that never
// finishes loading ends conch once its load time is up, a prompt's deadline holds whatever its
// tools do, and SIGTERM from the editor ends conch even when the main thread cannot answer.

/** What acp/ needs of cli/watchdog.ts's Watchdog. */
export interface HostWatchdog {
  arm(deadlineMs: number | null, onSignal: (name: string) => void, fresh?: boolean): void;
  loading(limitMs: number | null): void;
}

export class AcpGuard {
  private dog: Promise<HostWatchdog> | null = null;
  private loads = 0;
  private loadLimit: number | null = null;
  /** When each running prompt must end; the watchdog keeps the earliest. */
  private readonly deadlines = new Map<symbol, number>();

  constructor(
    private readonly start: (() => Promise<HostWatchdog>) | undefined,
    private readonly onSignal: (name: string) => void,
  ) {}

  /** For startRun's beforePluginImport; the returned `done` once the session has started (or failed to). */
  loader(): { beforePluginImport: (loadTimeoutMs: number) => Promise<void>; done: () => void } {
    let counted = false;
    return {
      beforePluginImport: async (loadTimeoutMs) => {
        if (!this.start) return;
        this.dog ??= this.start().then((dog) => (dog.arm(null, this.onSignal, false), dog));
        const dog = await this.dog;
        counted = true;
        this.loads++;
        this.loadLimit = Math.max(this.loadLimit ?? 0, loadTimeoutMs);
        dog.loading(this.loadLimit);
      },
      done: () => {
        if (!counted) return;
        counted = false;
        if (--this.loads === 0) {
          this.loadLimit = null;
          void this.dog?.then((dog) => dog.loading(null));
        }
      },
    };
  }

  /** Start the watchdog (once) and keep the running prompts' deadlines: a session offers MCP tools. */
  async watch(): Promise<void> {
    if (!this.start) return;
    this.dog ??= this.start().then((dog) => (dog.arm(null, this.onSignal, false), dog));
    await this.dog;
    this.rearm();
  }

  /** A prompt starts: its deadline holds from now. Call the result when it ends. */
  turn(deadlineMs: number): () => void {
    const key = Symbol('turn');
    this.deadlines.set(key, Date.now() + deadlineMs);
    this.rearm();
    return () => {
      this.deadlines.delete(key);
      this.rearm();
    };
  }

  private rearm(): void {
    if (!this.dog) return;
    const earliest = this.deadlines.size ? Math.min(...this.deadlines.values()) : null;
    // Never fresh: one session's prompt starting does not answer a signal meant for all of conch.
    void this.dog.then((dog) => dog.arm(earliest === null ? null : Math.max(0, earliest - Date.now()), this.onSignal, false));
  }
}
