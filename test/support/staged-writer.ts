// A process caught between staging a file and renaming it over the target (test/unit/temp-leftovers.test.ts):
// writeFileAtomic stops in beforeRename, says "staged <temp name>" and then waits (to be SIGKILLed),
// or with `exit` ends the process right there as a second Ctrl-C does. Usage: bun staged-writer.ts TARGET wait|exit
import { basename } from 'node:path';
import { writeFileAtomic } from '../../src/workspace/atomic.ts';

const [target, mode] = process.argv.slice(2) as [string, 'wait' | 'exit'];
await writeFileAtomic(target, new TextEncoder().encode('new content\n'), {
  beforeRename: async (temp) => {
    process.stdout.write(`staged ${basename(temp)}\n`);
    if (mode === 'exit') process.exit(130);
    setInterval(() => {}, 60_000); // alive, idle, until killed
    await new Promise(() => {});
  },
});
