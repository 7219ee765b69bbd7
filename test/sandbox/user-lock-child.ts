// A process contending for the user lock (test/sandbox/user-lock.test.ts): N times, under the lock,
// read a counter file, yield the CPU, write it back plus one; then yield outside it, as a conch
// process does between two uses of the lock. Without that pause it took the lock back at once,
// leaving it free only for microseconds: the other process, which polls, could wait for the whole
// loop, and on a loaded machine that is past the lock's 5 s bound. Usage: bun user-lock-child.ts FILE N
import { readFileSync, writeFileSync } from 'node:fs';
import { withUserLock } from '../../src/sandbox/user-lock.ts';

const [file, times] = process.argv.slice(2) as [string, string];
const pause = new Int32Array(new SharedArrayBuffer(4));
let unlocked = 0;
for (let i = 0; i < Number(times); i++) {
  const result = withUserLock(() => {
    const value = Number(readFileSync(file, 'utf8'));
    Atomics.wait(pause, 0, 0, 1); // widen the window a lost update would need
    writeFileSync(file, String(value + 1));
  });
  if (!result.locked) unlocked++;
  Atomics.wait(pause, 0, 0, 1);
}
console.log(`unlocked ${unlocked}`);
