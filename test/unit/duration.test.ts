// One duration type: parsed and bounded once where a person gives it, honoured by every timer.
import { afterEach, describe, expect, jest, test } from 'bun:test';
import { checkDurationMs, delay, MAX_DURATION_MS, parseDuration, startTimer } from '../../src/core/duration.ts';

describe('parseDuration', () => {
  test('seconds, and every unit up to days', () => {
    expect(parseDuration(90)).toEqual({ ok: true, ms: 90_000 });
    expect(parseDuration('90')).toEqual({ ok: true, ms: 90_000 });
    expect(parseDuration('250ms')).toEqual({ ok: true, ms: 250 });
    expect(parseDuration('1.5s')).toEqual({ ok: true, ms: 1500 });
    expect(parseDuration('600h')).toEqual({ ok: true, ms: 2_160_000_000 });
    expect(parseDuration('365d')).toEqual({ ok: true, ms: MAX_DURATION_MS });
  });
  test('zero, negative, too long and unreadable are refused, each saying why', () => {
    expect(parseDuration('0')).toEqual({ ok: false, problem: 'must be more than 0 (at most 365d)' });
    expect(parseDuration(-5)).toEqual({ ok: false, problem: 'must be more than 0 (at most 365d)' });
    expect(parseDuration('-5')).toEqual({ ok: false, problem: 'must be more than 0 (at most 365d)' });
    expect(parseDuration('366d')).toEqual({ ok: false, problem: 'is longer than the maximum of 365d (31536000000 ms)' });
    expect(parseDuration(Infinity)).toMatchObject({ ok: false });
    expect(parseDuration('5 minutes')).toEqual({ ok: false, problem: 'expected seconds or a duration such as 30s, 5m, 1h or 2d' });
  });
});

describe('checkDurationMs', () => {
  test('a whole number of ms above 0 and at most the maximum', () => {
    expect(checkDurationMs(3_000_000_000)).toEqual({ ok: true, ms: 3_000_000_000 });
    expect(checkDurationMs(MAX_DURATION_MS + 1)).toMatchObject({ ok: false });
    expect(checkDurationMs(0)).toMatchObject({ ok: false });
    expect(checkDurationMs(0, { zero: true })).toEqual({ ok: true, ms: 0 });
    expect(checkDurationMs(1.5)).toEqual({ ok: false, problem: 'must be a whole number of milliseconds' });
  });
});

describe('startTimer', () => {
  afterEach(() => jest.useRealTimers());

  test('a wait longer than one setTimeout can hold fires at its time, not at once', () => {
    jest.useFakeTimers();
    let fired = 0;
    startTimer(3_000_000_000, () => fired++);
    jest.advanceTimersByTime(2 ** 31);
    expect(fired).toBe(0);
    jest.advanceTimersByTime(3_000_000_000 - 2 ** 31 - 1);
    expect(fired).toBe(0);
    jest.advanceTimersByTime(1);
    expect(fired).toBe(1);
  });
  test('clear stops a chained timer in any of its links', () => {
    jest.useFakeTimers();
    let fired = 0;
    const t = startTimer(3_000_000_000, () => fired++);
    jest.advanceTimersByTime(2 ** 31);
    t.clear();
    jest.advanceTimersByTime(3_000_000_000);
    expect(fired).toBe(0);
  });
  test('a non-duration is a bug, not a 1 ms timer', () => {
    expect(() => startTimer(Number.NaN, () => {})).toThrow(RangeError);
    expect(() => startTimer(-1, () => {})).toThrow(RangeError);
  });
  test('delay rejects when its signal fires first', async () => {
    const c = new AbortController();
    const waiting = delay(3_000_000_000, c.signal, () => new Error('stopped'));
    c.abort();
    await expect(waiting).rejects.toThrow('stopped');
  });
});
