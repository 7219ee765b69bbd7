// The interactive prompt's history file (src/cli/history.ts): records survive, several processes
// can append at once, and a damaged file never stops the prompt.
import { afterEach, beforeEach, describe, expect, test } from 'bun:test';
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openHistory, parse } from '../../src/cli/history.ts';

let root: string;
let file: string;
beforeEach(() => {
  root = mkdtempSync(join(tmpdir(), 'conch-history-'));
  file = join(root, 'state', 'conch', 'history');
});
afterEach(() => rmSync(root, { recursive: true, force: true }));

const warnings: string[] = [];
const warn = (line: string) => warnings.push(line);
beforeEach(() => void (warnings.length = 0));

describe('the prompt history on file', () => {
  test('entries, multi-line ones included, come back in order in a new store; the file is 0600 in a 0700 folder', () => {
    const first = openHistory(file, warn);
    expect(first.entries).toEqual([]);
    first.add('one');
    first.add('two lines\nof text with "quotes" and \\ and \t');
    first.add('three');
    expect(openHistory(file, warn).entries).toEqual(['one', 'two lines\nof text with "quotes" and \\ and \t', 'three']);
    expect(readFileSync(file, 'utf8').split('\n')).toHaveLength(4);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(statSync(join(root, 'state', 'conch')).mode & 0o777).toBe(0o700);
    expect(warnings).toEqual([]);
  });

  test('empty input and a repeat of the newest entry are not stored; an older repeat is', () => {
    const h = openHistory(file, warn);
    for (const t of ['a', '', '   ', 'a', 'b', 'a']) h.add(t);
    expect(h.entries).toEqual(['a', 'b', 'a']);
    expect(openHistory(file, warn).entries).toEqual(['a', 'b', 'a']);
    // A new store knows the newest entry on file too.
    const again = openHistory(file, warn);
    again.add('a');
    expect(openHistory(file, warn).entries).toEqual(['a', 'b', 'a']);
  });

  test('the file keeps the newest entries: trimmed back to the cap once it grows a tenth past it', () => {
    const h = openHistory(file, warn, 20);
    for (let i = 0; i < 22; i++) h.add(`entry ${i}`);
    // Up to a tenth over the cap before a trim: no rewrite at every submission.
    expect(parse(readFileSync(file, 'utf8')).records).toBe(22);
    h.add('entry 22');
    const { entries, records } = parse(readFileSync(file, 'utf8'));
    expect(records).toBe(20);
    expect(entries[0]).toBe('entry 3');
    expect(entries.at(-1)).toBe('entry 22');
    expect(h.entries).toHaveLength(20);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    // Trimming counts what was on file before this store opened too.
    const later = openHistory(file, warn, 20);
    for (let i = 0; i < 3; i++) later.add(`later ${i}`);
    expect(parse(readFileSync(file, 'utf8')).records).toBe(20);
    expect(openHistory(file, warn, 20).entries.at(-1)).toBe('later 2');
  });

  test('lines that are no record are skipped, with one warning naming the file', () => {
    mkdirSync(join(root, 'state', 'conch'), { recursive: true });
    writeFileSync(file, `"good one"\n{not json\n42\n"good two"\n\n"cut off mid-wr`);
    const h = openHistory(file, warn);
    expect(h.entries).toEqual(['good one', 'good two']);
    // The last line, without its newline, may be another process's append under way: not counted.
    expect(warnings).toEqual([`${file}: 2 lines of the prompt history are not a JSON string and were skipped.`]);
    // The store goes on: new entries are added after the damage and read back.
    h.add('after');
    expect(parse(readFileSync(file, 'utf8'))).toEqual({ entries: ['good one', 'good two', 'after'], bad: 3, records: 6 });
  });

  test('a file that cannot be read or written: the prompt goes on, with one warning for the session', () => {
    if (process.getuid?.() === 0) return; // root reads and writes whatever the mode says
    mkdirSync(join(root, 'state', 'conch'), { recursive: true });
    writeFileSync(file, '"secret"\n');
    chmodSync(file, 0o000);
    const h = openHistory(file, warn);
    expect(h.entries).toEqual([]);
    h.add('one');
    h.add('two');
    expect(h.entries).toEqual(['one', 'two']);
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toContain(`the prompt history ${file} cannot be read (permission denied)`);
  });

  test('a link at the history file (or at its trim file) is neither read nor written through', () => {
    mkdirSync(join(root, 'state', 'conch'), { recursive: true });
    const target = join(root, 'bashrc');
    writeFileSync(target, '"planted"\n');
    chmodSync(target, 0o644);
    symlinkSync(target, file);
    const h = openHistory(file, warn, 1);
    expect(h.entries).toEqual([]);
    h.touch();
    h.add('export TOKEN=one');
    expect(readFileSync(target, 'utf8')).toBe('"planted"\n');
    expect(statSync(target).mode & 0o777).toBe(0o644);
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toContain(`the prompt history ${file} cannot be read (it is a link`);
    // The trim writes a file beside it, by a name known in advance.
    rmSync(file);
    const trimmed = openHistory(file, warn, 1);
    symlinkSync(target, `${file}.${process.pid}.tmp`);
    for (const text of ['a', 'b', 'c']) trimmed.add(text);
    expect(readFileSync(target, 'utf8')).toBe('"planted"\n');
    expect(readFileSync(file, 'utf8')).toBe('"c"\n');
  });

  test('a folder that cannot be made: entries stay in memory, one warning says how to turn history off', () => {
    writeFileSync(join(root, 'state'), 'a file where the folder would go');
    const h = openHistory(file, warn);
    h.add('one');
    h.add('two');
    expect(h.entries).toEqual(['one', 'two']);
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toContain(`the prompt history cannot be saved to ${file}`);
    expect(warnings[0]).toContain('CONCH_HISTORY=0');
  });

  const big = 'x'.repeat(20_000);
  /** Four processes adding 200 entries each (of 20 kB) to one file, kept to `keep` entries. */
  const appendAtOnce = async (keep: number) => {
    const script = join(root, 'append.ts');
    writeFileSync(
      script,
      `import { openHistory } from ${JSON.stringify(join(import.meta.dir, '../../src/cli/history.ts'))};
const h = openHistory(process.argv[2], (l) => console.error(l), ${keep});
for (let i = 0; i < 200; i++) h.add(process.argv[3] + ' ' + i + '\\n' + ${JSON.stringify(big)});
`,
    );
    const writers = ['a', 'b', 'c', 'd'].map((name) => Bun.spawn([process.execPath, script, file, name], { stdout: 'pipe', stderr: 'pipe' }));
    const results = await Promise.all(writers.map(async (w) => ({ code: await w.exited, stderr: await new Response(w.stderr).text() })));
    expect(results).toEqual(writers.map(() => ({ code: 0, stderr: '' })));
    return parse(readFileSync(file, 'utf8'));
  };

  test('processes appending at once: every record arrives whole, none interleaved with another', async () => {
    const { entries, bad, records } = await appendAtOnce(100_000);
    expect(bad).toBe(0);
    expect(records).toBe(800);
    for (const name of ['a', 'b', 'c', 'd']) {
      const own = entries.filter((e) => e.startsWith(`${name} `));
      expect(own.map((e) => e.split('\n')[0])).toEqual(Array.from({ length: 200 }, (_, i) => `${name} ${i}`));
      expect(own.every((e) => e.endsWith(big))).toBe(true);
    }
  }, 60_000);

  test('processes appending while others trim: the file stays whole records, within the cap and its tenth', async () => {
    const { entries, bad, records } = await appendAtOnce(50);
    expect(bad).toBe(0);
    expect(records).toBeLessThanOrEqual(55);
    expect(entries.every((e) => /^[abcd] \d+\n/.test(e) && e.endsWith(big))).toBe(true);
    // The newest survive: each writer's last entry was added after its last trim could drop it.
    for (const name of ['a', 'b', 'c', 'd']) expect(entries.filter((e) => e.startsWith(`${name} 199\n`)).length).toBeLessThanOrEqual(1);
    // A trim keeps the newest records and drops older ones, so what is left of each writer is its
    // last ones, none missing: a gap, or a last one gone while older ones stay, is an append a trim
    // lost (written after the trim read the file, to the file its rename then replaced).
    for (const name of ['a', 'b', 'c', 'd']) {
      const own = entries.filter((e) => e.startsWith(`${name} `)).map((e) => Number(e.split('\n')[0]!.split(' ')[1]));
      expect(own).toEqual(Array.from({ length: own.length }, (_, i) => 200 - own.length + i));
    }
  }, 60_000);
});

test('a reader that meets an append half written sees the records before it, and no damage', () => {
  expect(parse('"one"\n"two"\n"thr')).toEqual({ entries: ['one', 'two'], bad: 0, records: 2 });
  expect(parse('"one"\n')).toEqual({ entries: ['one'], bad: 0, records: 1 });
  expect(parse('')).toEqual({ entries: [], bad: 0, records: 0 });
});
