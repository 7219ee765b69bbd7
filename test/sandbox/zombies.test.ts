// A long-lived conch (conch acp) runs many sandboxed commands; the cancelled ones must not leave
// zombies behind. conch is a child subreaper (src/process/orphans.ts): a sandbox whose bwrap is
// killed with its command's group is re-parented to conch, dies of --die-with-parent, and only
// conch can reap it. Here this test process plays conch and counts its own defunct children.
import { afterEach, beforeEach, describe, expect, test } from 'bun:test';
import { readdirSync, readFileSync } from 'node:fs';
import { canRun, executed, fixture, type Fixture } from './harness.ts';

let fx: Fixture;
beforeEach(() => (fx = fixture()));
afterEach(() => fx.cleanup());

/** This process's children that are zombies, as "pid name". */
function defunctChildren(): string[] {
  const out: string[] = [];
  for (const task of readdirSync('/proc/self/task')) {
    for (const pid of readFileSync(`/proc/self/task/${task}/children`, 'latin1').split(' ').filter(Boolean)) {
      try {
        const status = readFileSync(`/proc/${pid}/status`, 'latin1');
        if (/^State:\s*Z/m.test(status)) out.push(`${pid} ${/^Name:\s*(.*)$/m.exec(status)?.[1]}`);
      } catch {
        // reaped meanwhile
      }
    }
  }
  return out;
}

async function cancelledCommand(): Promise<string | undefined> {
  const abort = new AbortController();
  const result = await executed(fx, 'echo started; sleep 30', { network: false }, { signal: abort.signal, killGraceMs: 0, onOutput: () => abort.abort() });
  expect(result.cancelled).toBe(true);
  return result.cleanupError;
}

describe.skipIf(!canRun || process.platform !== 'linux')('zombies', () => {
  test('30 cancelled sandboxed commands leave no defunct child and report no cleanup failure', async () => {
    const failures: string[] = [];
    for (let i = 0; i < 30; i++) {
      const failure = await cancelledCommand();
      if (failure) failures.push(failure);
    }
    expect(failures).toEqual([]);
    expect(defunctChildren()).toEqual([]);
  }, 60_000);
});
