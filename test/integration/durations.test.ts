// Durations through the real CLI: deadlines longer than one setTimeout can hold (2^31 ms) are
// honoured, not turned into 1 ms timers; out-of-range ones are setup errors naming the flag.
import { describe, expect, test } from 'bun:test';
import { openaiEnv, runConch, useHarness } from '../support/cli.ts';

const harness = useHarness();

const run = (args: string[]) =>
  runConch({ dirs: harness.dirs, args: ['--model', 'openai/test-model', ...args], env: openaiEnv(harness.server.openaiBaseUrl) });

/** The tool results the model received in its last request. */
function lastToolResults(): string[] {
  const body = harness.server.requests.at(-1)!.body;
  return (body.messages ?? []).filter((m: any) => m.role === 'tool').map((m: any) => (typeof m.content === 'string' ? m.content : JSON.stringify(m.content)));
}

describe('long deadlines', () => {
  for (const args of [
    ['--timeout', '600h'],
    ['--limit', 'deadline_ms=3000000000'],
    ['--limit', 'tool_timeout_max_ms=3000000000'],
  ]) {
    test(`${args.join(' ')}: a run with a shell command completes`, async () => {
      harness.server.script([{ toolCalls: [{ name: 'bash', arguments: { command: 'sleep 0.2; echo still-here' } }] }, { text: 'done' }]);
      const r = await run(['--json', ...args, 'go']);
      expect(r.stderr).not.toContain('TimeoutOverflowWarning');
      expect(JSON.parse(r.stdout)).toMatchObject({ status: 'completed', output: 'done' });
      expect(r.code).toBe(0);
      const [result] = lastToolResults();
      expect(result).toContain('still-here');
      expect(result).not.toMatch(/deadline|abandoned|timed out/);
    });
  }
});

describe('durations out of range are setup errors naming the flag', () => {
  const cases: [string[], string][] = [
    [['--timeout', '9000h'], '--timeout 9000h: is longer than the maximum of 365d (31536000000 ms).'],
    [['--limit', 'deadline_ms=40000000000'], '--limit deadline_ms=40000000000: deadline_ms is longer than the maximum of 365d (31536000000 ms).'],
    [['--timeout', '0'], '--timeout 0: must be more than 0 (at most 365d).'],
    [['--limit', 'deadline_ms=0'], '--limit deadline_ms=0: deadline_ms must be more than 0 (at most 365d).'],
    [['--timeout=-5'], '--timeout -5: must be more than 0 (at most 365d).'],
    [['--timeout', '-5'], '--timeout -5: must be more than 0 (at most 365d).'],
  ];
  for (const [args, message] of cases) {
    test(args.join(' '), async () => {
      const r = await run([...args, 'go']);
      expect(r.code).toBe(2);
      // A flag's bad value is a usage error: its message, then where the usage is.
      expect(r.stderr).toBe(`conch: ${message}\nRun 'conch --help' for usage.\n`);
      expect(harness.server.requests).toHaveLength(0);
    });
  }
});
