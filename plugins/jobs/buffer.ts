// The output of one background job: an append-only stream addressed by character offset, of which
// only the most recent part is kept so a chatty job cannot eat the host's memory.

export class OutputBuffer {
  /** Characters dropped from the front so far; offsets below this are gone. */
  private dropped = 0;
  private kept = '';
  private waiters: (() => void)[] = [];

  constructor(private readonly maxChars: number) {}

  append(chunk: string): void {
    if (!chunk) return;
    this.kept += chunk;
    const excess = this.kept.length - this.maxChars;
    if (excess > 0) {
      this.kept = this.kept.slice(excess);
      this.dropped += excess;
    }
    this.wake();
  }

  /** Total characters ever written. */
  get total(): number {
    return this.dropped + this.kept.length;
  }

  /** Up to `limit` characters from `offset`; an offset that was already dropped starts at the oldest kept. */
  read(offset: number, limit: number): { text: string; from: number; next: number; skipped: number } {
    const from = Math.min(Math.max(offset, this.dropped), this.total);
    const text = this.kept.slice(from - this.dropped, from - this.dropped + limit);
    return { text, from, next: from + text.length, skipped: from - Math.min(offset, this.total) };
  }

  /** Resolves at the next append or wake(), whichever comes first. */
  changed(): Promise<void> {
    return new Promise((resolve) => this.waiters.push(resolve));
  }

  wake(): void {
    const waiters = this.waiters;
    this.waiters = [];
    for (const resolve of waiters) resolve();
  }
}
