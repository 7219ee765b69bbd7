// The shell_log_bytes limit: a command's full-output log stops growing at it, so a flood cannot fill
// the disk; the command runs on and the model is told where the log was cut. Through the real CLI
// (sandboxed), the local model server and the read tool paging the log.
import { describe, expect, test } from 'bun:test';
import { anthropicEnv, runConch, useHarness, writeConfig } from '../support/cli.ts';

const harness = useHarness();
const run = (args: string[]) =>
  runConch({ dirs: harness.dirs, args: ['--model', 'anthropic/test-model', ...args], env: anthropicEnv(harness.server.anthropicBaseUrl) });
const resultText = (i: number) => JSON.stringify(harness.server.requests[i]!.body.messages.at(-1).content);

/** bash floods, then the model reads past the end of the log it was given: the error says how long the log is. */
function scriptFlood() {
  harness.server.script((req) => {
    const turn = harness.server.requests.length;
    if (turn === 1) return { toolCalls: [{ name: 'bash', arguments: { command: 'yes | head -c 3000000; echo end-of-flood' } }] };
    if (turn === 2) {
      const path = /the first \d+ bytes in ([^ ]+) \(/.exec(JSON.stringify(req.body.messages.at(-1).content))?.[1];
      if (!path) return { text: 'no cut log named' };
      return { toolCalls: [{ name: 'read', arguments: { path, offset: 1000000 } }] };
    }
    return { text: 'done' };
  });
}

describe('the shell_log_bytes limit', () => {
  test('config limits.shell_log_bytes: the log holds that many bytes, the result says so, the command ran to its end', async () => {
    await writeConfig(harness.dirs, { limits: { shell_log_bytes: 100000 } });
    scriptFlood();
    const r = await run(['go']);
    expect(r.code).toBe(0);
    expect(resultText(1)).toContain('end-of-flood');
    expect(resultText(1)).toContain('output truncated: 3000013 bytes total, the first 100000 bytes in ');
    expect(resultText(1)).toContain('(the log was cut at 100000 bytes: limit shell_log_bytes)');
    // 100000 bytes of "y\n": 50000 lines, not the 1.5 million the command wrote.
    expect(resultText(2)).toContain('it has 50000 lines');
  });

  test('--limit shell_log_bytes=N sets it for one run', async () => {
    scriptFlood();
    const r = await run(['--limit', 'shell_log_bytes=4000', 'go']);
    expect(r.code).toBe(0);
    expect(resultText(1)).toContain('(the log was cut at 4000 bytes: limit shell_log_bytes)');
    expect(resultText(2)).toContain('it has 2000 lines');
  });
});
