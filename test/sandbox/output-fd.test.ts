// A sandboxed command gets its output pipe as an extra fd that the shell moves onto its fds 1 and 2
// first thing (sandbox/index.ts outputOnFd, process/merged-output.ts): bwrap's first process in the
// sandbox keeps its own stdio until it exits, after bwrap, so holding the pipe there made the end of
// every command's output wait for the sandbox's teardown. The command must not notice.
import { afterEach, beforeEach, describe, expect, test } from 'bun:test';
import { bashExecutor, canRun, fixture, type Fixture } from './harness.ts';

let fx: Fixture;
beforeEach(() => (fx = fixture()));
afterEach(() => fx.cleanup());

const bash = async (command: string) => (await bashExecutor(fx))(command);

describe.skipIf(!canRun || process.platform !== 'linux')('the output of a sandboxed command', () => {
  test("the sandbox's first process does not hold the command's output pipe", async () => {
    const result = await bash('readlink /proc/self/fd/1 /proc/self/fd/2 /proc/1/fd/1 /proc/1/fd/2');
    expect(result.exitCode).toBe(0);
    const [out, err, initOut, initErr] = result.output.trim().split('\n');
    expect(out).toMatch(/^pipe:\[\d+\]$/);
    expect(err).toBe(out);
    expect(initOut).toBe('/dev/null');
    expect(initErr).not.toBe(out);
  });

  test('stdout and stderr interleave in write order; $0, $# and the other fds are as before', async () => {
    const result = await bash('echo a; echo b >&2; echo c; echo "$0 $#"; ls /proc/self/fd | tr "\\n" " "');
    // ls's own directory fd is the 3 it lists.
    expect(result).toMatchObject({ exitCode: 0, output: 'a\nb\nc\n/bin/sh 0\n0 1 2 3 ' });
  });

  test('a syntax error is reported with its line number, on the first line and on a later one', async () => {
    const first = await bash('echo (');
    expect(first.exitCode).toBe(2);
    expect(first.output).toMatch(/^\/bin\/sh: 1: Syntax error: .*\n$/);
    const later = await bash('echo ok\necho (');
    expect(later.exitCode).toBe(2);
    expect(later.output).toMatch(/^ok\n\/bin\/sh: 2: Syntax error: .*\n$/);
  });

  test('a command that closes its output early still ends with everything it wrote', async () => {
    const result = await bash('printf "%s\\n" one two; exec >&- 2>&-; sleep 0.2');
    expect(result).toMatchObject({ exitCode: 0, output: 'one\ntwo\n' });
  });
});
