import { expect, test } from 'bun:test';
import { plainDecimal, plainWhole } from '../../src/core/numbers.ts';

test('plainDecimal takes digits with one optional decimal point, nothing Number() would also read', () => {
  for (const [text, value] of [['0', 0], ['2', 2], ['0.7', 0.7], ['.5', 0.5], ['10.25', 10.25]] as const) expect(plainDecimal(text)).toBe(value);
  for (const text of ['0x1', '0b1', '0o7', '1e3', '1e', 'Infinity', 'NaN', ' 1', '1 ', '', '.', '1.', '+1', '-1', '1_000', '1,5']) expect(plainDecimal(text)).toBeNull();
});

test('plainWhole takes digits only', () => {
  expect(plainWhole('0')).toBe(0);
  expect(plainWhole('1048576')).toBe(1048576);
  for (const text of ['0x10', '1e3', '1.0', ' 5', '', '-1']) expect(plainWhole(text)).toBeNull();
});
