import { describe, expect, test } from 'bun:test';
import { idleGc } from '../../src/agent/idle-gc.ts';

describe('idle collection between turns', () => {
  test('asks for a collection at the first turn end, then at most once per interval', () => {
    let now = 1000;
    const asked: number[] = [];
    const gc = idleGc(() => asked.push(now), () => now, 50);
    expect(gc.turnEnded()).toBe(true);
    now += 10;
    expect(gc.turnEnded()).toBe(false);
    now += 39;
    expect(gc.turnEnded()).toBe(false);
    now += 1;
    expect(gc.turnEnded()).toBe(true);
    now += 500;
    expect(gc.turnEnded()).toBe(true);
    expect(asked).toEqual([1000, 1050, 1550]);
  });

  test('the default collector is Bun.gc without waiting for it', () => {
    const original = Bun.gc;
    const calls: unknown[][] = [];
    Bun.gc = ((...args: unknown[]) => {
      calls.push(args);
      return 0;
    }) as typeof Bun.gc;
    try {
      idleGc(undefined, () => 0, 50).turnEnded();
    } finally {
      Bun.gc = original;
    }
    expect(calls).toEqual([[false]]);
  });
});
