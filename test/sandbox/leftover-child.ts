// A conch stand-in for the placeholder recovery tests, run as its own process so that it can be
// killed with SIGKILL like a real conch. Usage: bun leftover-child.ts WORKSPACE TMPDIR, then lines on
// stdin: "prepare" (prepare a command and keep it), "release" (release everything prepared),
// "exit" (exit normally). Each line is answered with one line on stdout once done.
import { prepareSandboxed, type PreparedCommand } from '../../src/sandbox/index.ts';
import { livePlaceholders } from '../../src/sandbox/placeholders.ts';

const [workspace, tmpDir] = process.argv.slice(2) as [string, string];
const prepared: PreparedCommand[] = [];
const decoder = new TextDecoder();
let buffered = '';

for await (const chunk of Bun.stdin.stream()) {
  buffered += decoder.decode(chunk);
  let newline: number;
  while ((newline = buffered.indexOf('\n')) >= 0) {
    const line = buffered.slice(0, newline);
    buffered = buffered.slice(newline + 1);
    if (line === 'prepare') {
      prepared.push(
        await prepareSandboxed({
          profile: 'workspace-write',
          network: false,
          writableRoots: [],
          protectedGlobs: [],
          command: 'true',
          cwd: workspace,
          workspace,
          tmpDir,
        }),
      );
      console.log(`prepared ${livePlaceholders().size}`);
    } else if (line === 'release') {
      for (const item of prepared.splice(0)) await item.release();
      console.log('released');
    } else if (line === 'exit') {
      console.log('bye');
      process.exit(0);
    }
  }
}
