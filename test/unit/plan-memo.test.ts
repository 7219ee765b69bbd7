// When a stamp of the workspace root is too recent to keep (src/sandbox/plan-memo.ts): a change in
// the same clock tick as the stamped one would leave the times unchanged, and the reused plan would
// miss what it made (a .env.* file the user created between two commands stayed writable). The
// tick is a jiffy on most file systems, but a whole second on ext4 with 128-byte inodes and two on
// FAT: there, times half a second old are not safely in the past.
import { expect, test } from 'bun:test';
import { racyTimes } from '../../src/sandbox/plan-memo.ts';

const at = (mtimeMs: number, ctimeMs = mtimeMs) => ({ mtimeMs, ctimeMs });

test('fine-grained times: racy for 100 ms', () => {
  expect(racyTimes(at(10_000.123_456), 10_050)).toBe(true);
  expect(racyTimes(at(10_000.123_456), 10_200)).toBe(false);
  expect(racyTimes(at(9_000.5, 10_000.4), 10_050)).toBe(true);
});

test('times on a whole second (a coarse file system): racy until two ticks of FAT have passed', () => {
  expect(racyTimes(at(10_000), 10_500)).toBe(true);
  expect(racyTimes(at(10_000), 11_900)).toBe(true);
  expect(racyTimes(at(10_000), 12_200)).toBe(false);
  // One time off the second: the file system keeps finer times.
  expect(racyTimes(at(10_000, 10_000.25), 10_500)).toBe(false);
});
