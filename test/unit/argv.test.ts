// The argv parser keeps every value as typed and refuses what cannot be meant, for any flag.
import { describe, expect, test } from 'bun:test';
import { closest, parseArgs, UsageError, type FlagSpec } from '../../src/cli/argv.ts';

const SPECS: FlagSpec[] = [
  { usage: '-m, --model <provider/model>', description: '' },
  { usage: '--resume <id>', description: '' },
  { usage: '--limit <NAME=VALUE>', description: '', repeatable: true },
  { usage: '--read-only', description: '' },
  { usage: '--no-network', description: '' },
];

const parse = (argv: string[]) => parseArgs(argv, SPECS);
const refused = (argv: string[]) => {
  try {
    parse(argv);
  } catch (error) {
    expect(error).toBeInstanceOf(UsageError);
    return (error as Error).message;
  }
  throw new Error(`accepted: ${argv.join(' ')}`);
};

describe('parseArgs', () => {
  test('values are the strings typed, numeric-looking or not', () => {
    for (const v of ['802e16', '42', '0x10', '1e3', '-5', '007']) {
      expect(parse(['--resume', v]).flags.get('resume')).toEqual([v]);
      expect(parse([`--resume=${v}`]).flags.get('resume')).toEqual([v]);
    }
  });

  test('short and long names, booleans, positionals and everything after --', () => {
    const p = parse(['-m', 'a/b', '--read-only', 'fix', 'it', '--no-network', '--', '--read-only', '-x']);
    expect(p.flags.get('model')).toEqual(['a/b']);
    expect(p.flags.has('read-only')).toBe(true);
    expect(p.flags.has('no-network')).toBe(true);
    expect(p.positionals).toEqual(['fix', 'it']);
    expect(p.afterDashes).toEqual(['--read-only', '-x']);
  });

  test('a short flag is one letter on its own: -m x and -m=x, never a group or a glued value', () => {
    expect(parse(['-m=a/b']).flags.get('model')).toEqual(['a/b']);
    expect(parse(['-m', '-']).flags.get('model')).toEqual(['-']);
    expect(refused(['-mfoo'])).toBe("unknown option '-mfoo'");
    expect(refused(['-mm', 'a/b'])).toBe("unknown option '-mm'");
  });

  test('a repeatable flag keeps every value in order', () => {
    expect(parse(['--limit', 'a=1', '--limit=b=2']).flags.get('limit')).toEqual(['a=1', 'b=2']);
  });

  test('a single-valued flag given twice is refused, naming it', () => {
    expect(refused(['--resume', 'a', '--resume', 'b'])).toContain('--resume was given more than once');
    expect(refused(['-m', 'a/b', '--model', 'c/d'])).toContain('--model was given more than once');
  });

  test('an empty value, a missing value and a value for a boolean are refused', () => {
    expect(refused(['--resume', ''])).toContain('--resume was given an empty value');
    expect(refused(['--resume='])).toContain('--resume was given an empty value');
    expect(refused(['--resume'])).toContain('--resume needs a value');
    expect(refused(['--resume', '--read-only'])).toContain('--resume needs a value');
    expect(refused(['--resume', '--', 'x'])).toContain('--resume needs a value');
    expect(refused(['--read-only=yes'])).toContain('--read-only takes no value');
  });

  test('a missing value is shown as the help names it, and where to find an id', () => {
    expect(refused(['--resume'])).toBe('--resume needs a value: --resume ID (`conch sessions` lists the ids; -c continues the latest)');
    expect(refused(['--limit'])).toBe('--limit needs a value: --limit NAME=VALUE');
    expect(refused(['-m'])).toStartWith('--model needs a value: --model PROVIDER/MODEL (e.g. anthropic/claude-sonnet-5-5');
  });

  test('an unknown flag is named as typed, with the near one when there is one', () => {
    expect(refused(['--bogus-flag'])).toBe("unknown option '--bogus-flag'");
    expect(refused(['--read-onyl'])).toBe("unknown option '--read-onyl' (did you mean '--read-only'?)");
    expect(refused(['-x'])).toBe("unknown option '-x'");
  });
});

test('closest: one insertion, deletion, change or swap away, and only then', () => {
  const commands = ['tools', 'trust', 'sandbox', 'run'];
  expect(closest('tool', commands)).toBe('tools');
  expect(closest('turst', commands)).toBe('trust');
  expect(closest('rnu', commands)).toBe('run');
  expect(closest('tools', commands)).toBeUndefined();
  expect(closest('review', commands)).toBeUndefined();
  expect(closest('to', commands)).toBeUndefined();
});
