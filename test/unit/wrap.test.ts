import { describe, expect, test } from 'bun:test';
import { wrapWords } from '../../src/cli/wrap.ts';

describe('wrapWords', () => {
  test('breaks a long line at the last space that fits, continued lines indented', () => {
    expect(wrapWords('conch: the file ~/.config/conch/config.json is not valid JSON', 30)).toBe('conch: the file\n  ~/.config/conch/config.json\n  is not valid JSON');
  });

  test('no terminal width, or a line that fits: unchanged', () => {
    const line = 'conch: a line of some length that would need breaking';
    expect(wrapWords(line, undefined)).toBe(line);
    expect(wrapWords('conch: short', 40)).toBe('conch: short');
  });

  test('indented lines (a table) stay; each line of several is broken on its own', () => {
    const text = 'conch: first line that is long enough\n  /model NAME   goes on with another model here';
    expect(wrapWords(text, 24)).toBe('conch: first line that\n  is long enough\n  /model NAME   goes on with another model here');
  });

  test('a word wider than the line is left whole; widths are as shown, colours taking none', () => {
    expect(wrapWords(`a ${'x'.repeat(30)} b`, 20)).toBe(`a\n  ${'x'.repeat(30)}\n  b`);
    const dimmed = '\x1b[2mconch · Enter sends\x1b[0m';
    expect(wrapWords(dimmed, 20)).toBe(dimmed);
  });
});
