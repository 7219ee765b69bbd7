// The pure parts of `conch run A B C`: the exit code of several outcomes, the summary, the order in
// which concurrent tasks' output reaches the terminal, and reading a tasks file.
import { afterEach, beforeEach, expect, test } from 'bun:test';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { exitCodeFor, SignalStop } from '../../src/agent/outcome.ts';
import { batchExitCode, batchSummary, summaryLine } from '../../src/cli/batch.ts';
import { OrderedOutput } from '../../src/cli/ordered-output.ts';
import { maxConcurrent, readTasksFile } from '../../src/cli/tasks.ts';

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'conch-tasks-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

const ended = (...statuses: string[]) => statuses.map((s) => (s === 'output_invalid' ? { status: 'failed', code: 'output_invalid' } : { status: s })) as never;

test('exit code: 0 only when every task completed, else the most severe: cancelled > failed > output_invalid > timed_out > limit_exceeded > policy_denied', () => {
  expect(batchExitCode(ended('completed', 'completed'))).toBe(0);
  expect(batchExitCode(ended('completed', 'policy_denied'))).toBe(3);
  expect(batchExitCode(ended('policy_denied', 'limit_exceeded'))).toBe(4);
  expect(batchExitCode(ended('limit_exceeded', 'timed_out', 'completed'))).toBe(124);
  expect(batchExitCode(ended('timed_out', 'output_invalid'))).toBe(5);
  expect(batchExitCode(ended('output_invalid', 'failed'))).toBe(1);
  expect(batchExitCode(ended('failed', 'cancelled', 'completed'))).toBe(130);
  // A signal other than Ctrl-C keeps its own code over everything, as for one run.
  const byTerm = { status: 'cancelled', signal: 'SIGTERM' } as const;
  expect(batchExitCode([byTerm, { status: 'cancelled' }, { status: 'failed' }])).toBe(143);
  expect(batchExitCode([{ status: 'cancelled', signal: 'SIGHUP' }, { status: 'cancelled', signal: 'SIGINT' }])).toBe(129);
});

test('exitCodeFor: a cancel by a signal exits 128 + its number; a cancel without one 130', () => {
  expect(exitCodeFor({ status: 'cancelled' })).toBe(130);
  expect(exitCodeFor({ status: 'cancelled', signal: 'SIGINT' })).toBe(130);
  expect(exitCodeFor({ status: 'cancelled', signal: 'SIGTERM' })).toBe(143);
  expect(exitCodeFor({ status: 'cancelled', signal: 'SIGHUP' })).toBe(129);
  expect(exitCodeFor({ status: 'failed', code: 'output_invalid' })).toBe(5);
  expect(new SignalStop('SIGTERM').message).toBe('terminated by signal SIGTERM');
  expect(new SignalStop('SIGINT').message).toBe('cancelled by the user');
});

test('summary counts every status and says them in one line', () => {
  expect(batchSummary(ended('completed', 'failed', 'completed'), 12)).toEqual({
    tasks: 3, completed: 2, failed: 1, cancelled: 0, timed_out: 0, limit_exceeded: 0, policy_denied: 0, exitCode: 1, durationMs: 12,
  });
  expect(summaryLine(ended('completed', 'failed', 'completed'))).toBe('3 tasks: 2 completed, 1 failed (task 2)');
  expect(summaryLine(ended('timed_out', 'completed', 'failed', 'timed_out'))).toBe('4 tasks: 1 completed, 1 failed (task 3), 2 timed_out (tasks 1, 4)');
  // All alike: nothing to tell apart.
  expect(summaryLine(ended('failed', 'failed'))).toBe('2 tasks: 2 failed');
  expect(summaryLine(ended('completed'))).toBe('1 task: 1 completed');
});

test('output: the first unfinished task streams live, later ones show in task order once those before are done', () => {
  const written: string[] = [];
  const real = { stdout: { write: (t: string) => written.push(`out:${t}`) }, stderr: { write: (t: string) => written.push(`err:${t}`) } };
  const output = new OrderedOutput(real, 3);
  const [a, b, c] = [output.section(0), output.section(1), output.section(2)];
  a.stdout.write('a1');
  c.stdout.write('c1');
  b.stderr.write('b1');
  c.done();
  expect(written).toEqual(['out:a1']);
  output.pause(); // a question on the terminal: even the live task waits
  a.stdout.write('a2');
  expect(written).toEqual(['out:a1']);
  output.resume();
  expect(written).toEqual(['out:a1', 'out:a2']);
  a.done();
  expect(written).toEqual(['out:a1', 'out:a2', 'err:b1']);
  b.stdout.write('b2'); // b is live now
  expect(written.at(-1)).toBe('out:b2');
  b.done();
  expect(written).toEqual(['out:a1', 'out:a2', 'err:b1', 'out:b2', 'out:c1']);
});

test('tasks file: one task a line (blank lines skipped, a BOM dropped) or a JSON array; problems name the file', () => {
  const file = join(dir, 'tasks');
  writeFileSync(file, '\uFEFFfirst\r\n\n   second  \n');
  expect(readTasksFile(file)).toEqual(['first', 'second']);
  writeFileSync(file, ' ["a\\nb", "c"]');
  expect(readTasksFile(file)).toEqual(['a\nb', 'c']);
  writeFileSync(file, '["a", 3]');
  expect(() => readTasksFile(file)).toThrow(`--tasks-file ${file}: task 2 of the array is 3; every task is a string that is not empty.`);
  writeFileSync(file, '[]');
  expect(() => readTasksFile(file)).toThrow(`--tasks-file ${file}: the file holds no task`);
  expect(() => readTasksFile(dir)).toThrow(`--tasks-file ${dir}: cannot read it (it is a directory)`);
});

test('--max-concurrent: a whole number above 0, 3 by default', () => {
  expect(maxConcurrent(undefined)).toBe(3);
  expect(maxConcurrent('8')).toBe(8);
  for (const bad of ['0', '-1', '2.5', 'x']) expect(() => maxConcurrent(bad)).toThrow(`got '${bad}'`);
});

test('tasks file: a first line that only starts with [ ("[wip] fix it") is told why it was read as JSON', () => {
  const file = join(dir, 'tasks');
  writeFileSync(file, '[wip] fix the login\nadd tests\n');
  expect(() => readTasksFile(file)).toThrow(
    `--tasks-file ${file}: not valid JSON (JSON Parse error: Unexpected identifier "wip"). It starts with '[', so it is read as a JSON array of strings; for one task a line, start the first line with something other than '['.`,
  );
});

test('tasks file: a file without end (/dev/zero) or over 16 MiB is a setup error, read no further than the cap', () => {
  expect(() => readTasksFile('/dev/zero')).toThrow('--tasks-file /dev/zero: more than 16 MiB, which is no list of tasks');
  const file = join(dir, 'big');
  writeFileSync(file, `${'task\n'.repeat(16 * 1024 * 1024 / 5 + 1)}`);
  expect(() => readTasksFile(file)).toThrow(`--tasks-file ${file}: more than 16 MiB`);
  writeFileSync(file, `${'task\n'.repeat(1000)}`);
  expect(readTasksFile(file)).toHaveLength(1000);
});
