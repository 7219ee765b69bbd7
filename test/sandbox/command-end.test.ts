// When runProcess returns a sandboxed command's result, nothing the command started is still
// running, even a background process that closed its output (so nothing holds the pipe): conch
// reaps a finished sandbox's remains in the background, but only once its namespace runs nothing
// but its own exit (src/process/orphans.ts, settleOrphans untilIdle).
import { afterEach, beforeEach, describe, expect, test } from 'bun:test';
import { readdirSync, readFileSync } from 'node:fs';
import { canRun, executed, fixture, type Fixture } from './harness.ts';

let fx: Fixture;
beforeEach(() => (fx = fixture()));
afterEach(() => fx.cleanup());

/** Live (not zombie) processes whose command line is `sleep MARKER`. */
function sleepers(marker: string): string[] {
  return readdirSync('/proc')
    .filter((pid) => /^\d+$/.test(pid))
    .filter((pid) => {
      try {
        if (!readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes(`sleep\0${marker}`)) return false;
        return !/^State:\s*Z/m.test(readFileSync(`/proc/${pid}/status`, 'latin1'));
      } catch {
        return false;
      }
    });
}

describe.skipIf(!canRun || process.platform !== 'linux')('the end of a sandboxed command', () => {
  test('a background process with its output closed is gone when the result returns, command after command', async () => {
    const marker = `${Math.floor(Math.random() * 900 + 100)}.${process.pid % 1000}`;
    const left: string[][] = [];
    for (let i = 0; i < 10; i++) {
      const result = await executed(fx, `nohup sleep ${marker} >/dev/null 2>&1 & echo started`);
      expect(result).toMatchObject({ exitCode: 0, output: 'started\n' });
      expect(result.cleanupError).toBeUndefined();
      left.push(sleepers(marker));
    }
    expect(left).toEqual(Array.from({ length: 10 }, () => []));
  }, 60_000);
});
