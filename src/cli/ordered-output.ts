// The output of concurrent tasks, in task order: the first unfinished task writes straight through
// (it streams live), every later one is held until all before it are done, then shown at once and
// goes live itself. stdout and stderr keep their order within a task. A pause (an approval question
// owns the terminal) holds even the live task's writes until it ends.
import type { Streams } from './render.ts';

type Target = 'stdout' | 'stderr';

export interface Section extends Streams {
  /** This task wrote all it will: the next one may show. */
  done(): void;
}

export class OrderedOutput {
  private readonly held: [Target, string][][];
  private readonly finished: boolean[];
  private head = 0;
  private paused = 0;

  constructor(private readonly real: Streams, count: number) {
    this.held = Array.from({ length: count }, () => []);
    this.finished = Array.from({ length: count }, () => false);
  }

  section(index: number): Section {
    const writer = (target: Target) => ({
      write: (text: string) => this.write(index, target, text),
      get columns() {
        return real[target].columns;
      },
    });
    const real = this.real;
    return { stdout: writer('stdout'), stderr: writer('stderr'), done: () => this.done(index) };
  }

  pause(): void {
    this.paused++;
  }

  resume(): void {
    this.paused = Math.max(0, this.paused - 1);
    if (this.paused === 0) this.advance();
  }

  private write(index: number, target: Target, text: string): void {
    if (index === this.head && this.paused === 0) this.real[target].write(text);
    else this.held[index]!.push([target, text]);
  }

  private done(index: number): void {
    this.finished[index] = true;
    this.advance();
  }

  /** Show what the head holds; while the head is finished, move on to the next task. */
  private advance(): void {
    while (this.paused === 0 && this.head < this.held.length) {
      for (const [target, text] of this.held[this.head]!.splice(0)) this.real[target].write(text);
      if (!this.finished[this.head]) return;
      this.head++;
    }
  }
}
