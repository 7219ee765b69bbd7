// Another process and the user lock (test/sandbox/user-lock.test.ts). Usage: bun user-lock-holder.ts MODE [PATH]
//   hold          take the lock, say "held", and keep it (blocked) until killed
//   try           print what withUserLock gave, as JSON
//   place PATH    hold a placeholder for the protected directory PATH; print {"held": […]} or {"error": "…"}
import { writeSync } from 'node:fs';
import { withUserLock } from '../../src/sandbox/user-lock.ts';
import { PlaceholderScope } from '../../src/sandbox/placeholders.ts';

const [mode, path] = process.argv.slice(2);
if (mode === 'hold') {
  withUserLock(() => {
    writeSync(1, 'held\n');
    Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0);
  });
} else if (mode === 'try') {
  console.log(JSON.stringify(withUserLock(() => 'ran')));
} else if (mode === 'place') {
  const scope = new PlaceholderScope();
  try {
    console.log(JSON.stringify({ held: scope.hold([{ path: path!, kind: 'dir' }]).map((t) => t.path) }));
    scope.close();
  } catch (error) {
    console.log(JSON.stringify({ error: (error as Error).message }));
  }
}
