// A process contending for the user lock (test/sandbox/user-lock.test.ts): N times, under the lock,
// read a counter file, yield the CPU, write it back plus one. Usage: bun user-lock-child.ts FILE N
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
}
console.log(`unlocked ${unlocked}`);
