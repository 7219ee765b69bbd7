// The terminal lines of a finished command: what they count must be what the command printed.
import { expect, test } from 'bun:test';
import { finishedLines, type Paint } from '../../src/cli/tool-lines.ts';

const plain: Paint = { bold: (t) => t, dim: (t) => t, red: (t) => t, green: (t) => t, yellow: (t) => t, cyan: (t) => t };
const ctx = { paint: plain, width: 200, cwd: '/work/proj' };
const finished = (output: string, details: Record<string, unknown>) => ({
  type: 'tool.finished' as const, runId: 'r', seq: 1, time: '', callId: 'c', name: 'bash', isError: false, truncated: false, durationMs: 100, output, details,
});

test('a command whose output was cut in the middle is not said to have printed only the lines the model was shown', () => {
  // What `seq 1 200000` gives the model: a head, the omission marker, a tail, the status line.
  const head = Array.from({ length: 3 }, (_, i) => String(i + 1));
  const tail = Array.from({ length: 8 }, (_, i) => String(199993 + i));
  const log = '/work/proj/.tmp/output-1.log';
  const output = [...head, `[... 1237701 bytes omitted; full output (1288895 bytes) in ${log} ...]`, ...tail, `[exit code 0; output truncated: 1288895 bytes total, full output in ${log}]`].join('\n');
  const lines = finishedLines(finished(output, { exitCode: 0, durationMs: 100, logPath: log, totalBytes: 1288895 }), { command: 'seq 1 200000' }, ctx);
  expect(lines.slice(0, 5)).toEqual(['  │ 199996', '  │ 199997', '  │ 199998', '  │ 199999', '  │ 200000']);
  const status = lines[5]!;
  expect(status).not.toContain('earlier line');
  expect(status).toBe('  ✓ exit 0 · 0.1s · 1,288,895 bytes of output, cut in the middle');
  expect(lines[6]).toBe('  full output (removed when conch exits): .tmp/output-1.log');
});

test('the log of a cut command is named whole on a line of its own, even on a narrow terminal, and says it does not outlive conch', () => {
  // Outside the workspace (the run's private directory in /tmp): the path is long and absolute.
  const log = '/tmp/conch-run-4026531836-17605-342006-iQG1Yn/logs/output-1796181730483-42g7db.log';
  const output = ['1', `[... 99 bytes omitted; full output (200 bytes) in ${log} ...]`, '2', `[exit code 0; output truncated: 200 bytes total, full output in ${log}]`].join('\n');
  const lines = finishedLines(finished(output, { exitCode: 0, durationMs: 100, logPath: log, totalBytes: 200 }), { command: 'x' }, { ...ctx, width: 40 });
  expect(lines.at(-1)).toBe(`  full output (removed when conch exits): ${log}`);
  expect(lines.slice(0, -1).every((l) => l.length <= 40)).toBe(true);
});

test('output that was not cut still counts its earlier lines', () => {
  const output = ['a', 'b', 'c', 'd', 'e', 'f', 'g', '[exit code 0]'].join('\n');
  const lines = finishedLines(finished(output, { exitCode: 0, durationMs: 100 }), { command: 'x' }, ctx);
  expect(lines.at(-1)).toBe('  ✓ exit 0 · 0.1s · 2 earlier lines');
});
