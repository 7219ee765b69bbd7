// The Seatbelt profile cannot run on this machine, so it is checked as text: a golden rendering of
// the generated rules, a small SBPL reader that proves the output parses and that every string
// decodes back to the path it came from, and the regexes run against real path names.
import { describe, expect, test } from 'bun:test';
import { loadProfile, loadProtectedDefaults } from '../../src/sandbox/profiles.ts';
import { defaultPatterns, patternFromGlob } from '../../src/sandbox/protected-paths.ts';
import {
  globRegex,
  regexLiteral,
  renderSeatbeltProfile,
  sbString,
  seatbeltArgv,
  SeatbeltPathError,
  type SeatbeltInput,
} from '../../src/sandbox/seatbelt.ts';

type Node = { kind: 'list'; items: Node[] } | { kind: 'string'; value: string } | { kind: 'regex'; value: string } | { kind: 'atom'; value: string };

/** Reads SBPL the way TinyScheme would for what we emit: lists, atoms, "strings" with escapes, #"regex". */
function parse(text: string): Node[] {
  let i = 0;
  const read = (): Node => {
    const ch = text[i]!;
    if (ch === '(') {
      i++;
      const items: Node[] = [];
      for (;;) {
        skip();
        if (i >= text.length) throw new Error('unbalanced: missing )');
        if (text[i] === ')') {
          i++;
          return { kind: 'list', items };
        }
        items.push(read());
      }
    }
    if (ch === ')') throw new Error(`unbalanced: stray ) at ${i}`);
    if (ch === '"') {
      i++;
      let value = '';
      while (text[i] !== '"') {
        if (i >= text.length) throw new Error('unterminated string');
        if (text[i] === '\\') {
          const next = text[i + 1]!;
          if (next !== '\\' && next !== '"') throw new Error(`unexpected escape \\${next}`);
          value += next;
          i += 2;
        } else value += text[i++];
      }
      i++;
      return { kind: 'string', value };
    }
    if (ch === '#' && text[i + 1] === '"') {
      const end = text.indexOf('"', i + 2);
      if (end === -1) throw new Error('unterminated regex');
      const value = text.slice(i + 2, end);
      i = end + 1;
      return { kind: 'regex', value };
    }
    const start = i;
    while (i < text.length && !/[\s()"]/.test(text[i]!)) i++;
    return { kind: 'atom', value: text.slice(start, i) };
  };
  const skip = () => {
    for (;;) {
      while (i < text.length && /\s/.test(text[i]!)) i++;
      if (text[i] === ';') while (i < text.length && text[i] !== '\n') i++;
      else return;
    }
  };
  const out: Node[] = [];
  for (skip(); i < text.length; skip()) out.push(read());
  return out;
}

function collect(nodes: Node[], kind: 'string' | 'regex', head?: string): string[] {
  const found: string[] = [];
  const walk = (node: Node) => {
    if (node.kind !== 'list') return;
    const first = node.items[0];
    if (!head || (first?.kind === 'atom' && first.value === head)) {
      for (const item of node.items) if (item.kind === kind) found.push(item.value);
    }
    node.items.forEach(walk);
  };
  nodes.forEach(walk);
  return found;
}

function input(overrides: Partial<SeatbeltInput> = {}): SeatbeltInput {
  return {
    profile: loadProfile('workspace-write'),
    workspace: '/Users/ana/proj',
    tmpDir: '/private/var/folders/x/T/conch-run-1',
    writableRoots: ['/Users/ana/.cache/tool'],
    protected: [...defaultPatterns(loadProtectedDefaults()), patternFromGlob('config/secrets/**'), patternFromGlob('deploy/*.pem')],
    network: true,
    ...overrides,
  };
}

describe('Seatbelt profile rendering', () => {
  test('golden: the generated write rules', () => {
    const text = renderSeatbeltProfile(input());
    const start = text.indexOf('(allow file-write*\n  (require-all');
    const end = text.indexOf('\n\n', text.indexOf('(deny file-write-unlink'));
    expect(text.slice(start, end)).toBe(`(allow file-write*
  (require-all
    (require-any
      (subpath "/private/var/folders/x/T/conch-run-1")
      (subpath "/Users/ana/proj")
      (subpath "/Users/ana/.cache/tool"))
    (require-not
      (require-any
        (subpath "/Users/ana/proj/.git")
        (subpath "/Users/ana/proj/.conch")
        (subpath "/Users/ana/proj/.env")
        (subpath "/Users/ana/proj/HEAD")
        (regex #"^/Users/ana/proj/\\.env\\.[^/]*(/.*)?$")
        (subpath "/Users/ana/proj/config/secrets")
        (regex #"^/Users/ana/proj/deploy/[^/]*\\.pem(/.*)?$")))))

; the protected paths once more as a denial, last so that it wins whatever the rule order semantics
(deny file-write*
        (subpath "/Users/ana/proj/.git")
        (subpath "/Users/ana/proj/.conch")
        (subpath "/Users/ana/proj/.env")
        (subpath "/Users/ana/proj/HEAD")
        (regex #"^/Users/ana/proj/\\.env\\.[^/]*(/.*)?$")
        (subpath "/Users/ana/proj/config/secrets")
        (regex #"^/Users/ana/proj/deploy/[^/]*\\.pem(/.*)?$"))

; the workspace root and the directories leading to a nested protected path cannot be renamed or
; removed (renaming a parent would otherwise move the protection away from the name); creating and
; changing files inside them stays allowed
(deny file-write-unlink
  (literal "/Users/ana/proj")
  (literal "/Users/ana/proj/config")
  (literal "/Users/ana/proj/deploy"))`);
  });

  test("a writable root's own .git, .env … are denied as the workspace's are, relative to the root", () => {
    const text = renderSeatbeltProfile(input({ rootProtected: defaultPatterns(loadProtectedDefaults()) }));
    const deny = text.slice(text.indexOf('(deny file-write*'), text.indexOf('(deny file-write-unlink'));
    expect(deny).toContain('(subpath "/Users/ana/.cache/tool/.git")');
    expect(deny).toContain('(subpath "/Users/ana/.cache/tool/.env")');
    expect(deny).toContain('(regex #"^/Users/ana/\\.cache/tool/\\.env\\.[^/]*(/.*)?$")');
    expect(deny).not.toContain('/Users/ana/.cache/tool/config/secrets');
  });

  test('a workspace or writable root that is itself a git dir is denied as a whole', () => {
    const text = renderSeatbeltProfile(input({ gitDirRoots: ['/Users/ana/proj', '/Users/ana/.cache/tool'] }));
    const deny = text.slice(text.indexOf('(deny file-write*'), text.indexOf('(deny file-write-unlink'));
    const filters = (text: string) => text.split('\n').map((line) => line.trim().replace(/\)+$/, ')'));
    expect(filters(deny)).toContain('(subpath "/Users/ana/proj")');
    expect(filters(deny)).toContain('(subpath "/Users/ana/.cache/tool")');
    const plain = renderSeatbeltProfile(input());
    expect(filters(plain.slice(plain.indexOf('(deny file-write*'), plain.indexOf('(deny file-write-unlink')))).not.toContain('(subpath "/Users/ana/proj")');
  });

  test('structure: deny by default, parses, no markers left, network per flag', () => {
    const open = renderSeatbeltProfile(input());
    const closed = renderSeatbeltProfile(input({ network: false }));
    for (const text of [open, closed]) {
      const nodes = parse(text);
      expect(nodes[0]).toEqual({ kind: 'list', items: [{ kind: 'atom', value: 'version' }, { kind: 'atom', value: '1' }] });
      expect(nodes[1]).toEqual({ kind: 'list', items: [{ kind: 'atom', value: 'deny' }, { kind: 'atom', value: 'default' }] });
      expect(text).not.toMatch(/\{\{[A-Z]+\}\}/);
      expect(text).not.toMatch(/\(allow default\)|\(allow file-write\*\)\n|\(allow network\*\)/);
    }
    expect(collect(parse(open), 'string', 'remote')).toEqual(['*:*']);
    expect(open).toContain('(allow network-outbound (remote ip "*:*"))');
    expect(closed).not.toMatch(/\(allow network/);
    expect(closed).toContain('network off');
  });

  test('hidden paths: their contents cannot be read, except below a writable root inside them', () => {
    expect(renderSeatbeltProfile(input())).toContain('; no hidden paths');
    const text = renderSeatbeltProfile(input({ hidden: ['/Users/ana', '/Users/ana/proj/keys', '/etc/ssl/k"ey.pem'] }));
    const start = text.indexOf('(deny file-read-data');
    expect(start).toBeGreaterThan(text.indexOf('(allow file-read*)')); // later, so it wins
    const rule = text.slice(start, text.indexOf('\n\n', start));
    expect(rule).toBe(`(deny file-read-data
  (require-all
    (subpath "/Users/ana")
    (require-not
      (require-any
        (subpath "/Users/ana/proj")
        (subpath "/Users/ana/.cache/tool")
      )))
  (subpath "/Users/ana/proj/keys")
  (subpath "/etc/ssl/k\\"ey.pem"))`);
    expect(parse(rule)).toHaveLength(1);
  });

  test("conch's own directories in the workspace: neither read nor written, the run's temp dir inside excepted, and their parents pinned", () => {
    const state = '/Users/ana/proj/tmp/conch-501';
    const run = '/Users/ana/proj/tmp/conch-run-1';
    const text = renderSeatbeltProfile(input({ tmpDir: `${run}/tmp`, writableRoots: [], protected: [], own: [state, run] }));
    const runFilter = `(require-all
  (subpath "${run}")
  (require-not
    (require-any
      (subpath "${run}/tmp")
    )))`;
    const indented = (filter: string, indent: string) => filter.replaceAll(/^/gm, indent);
    const section = (head: string) => text.slice(text.indexOf(head), text.indexOf('\n\n', text.indexOf(head)));
    expect(section('(deny file-read-data')).toBe(`(deny file-read-data\n  (subpath "${state}")\n${indented(runFilter, '  ')})`);
    const denied = `        (subpath "${state}")\n${indented(runFilter, '        ')}`;
    expect(section('(allow file-write*\n  (require-all')).toContain(`    (require-not\n      (require-any\n${denied}))))`);
    expect(section('(deny file-write*')).toBe(`(deny file-write*\n${denied})`);
    expect(section('(deny file-write-unlink')).toBe('(deny file-write-unlink\n  (literal "/Users/ana/proj")\n  (literal "/Users/ana/proj/tmp"))');
    expect(() => parse(text)).not.toThrow();
    // Outside every writable root (TMPDIR elsewhere, as usual): their contents are still unreadable, nothing is pinned.
    const apart = renderSeatbeltProfile(input({ own: ['/private/var/folders/x/T/conch-501'] }));
    expect(apart).toContain('(deny file-read-data\n  (subpath "/private/var/folders/x/T/conch-501"))');
    const unlink = apart.indexOf('(deny file-write-unlink');
    expect(apart.slice(unlink, apart.indexOf('\n\n', unlink))).not.toContain('/private/var');
  });

  test('read-only: only the temp dir is writable; writable roots are ignored', () => {
    const text = renderSeatbeltProfile(input({ profile: loadProfile('read-only') }));
    const writable = text.slice(text.indexOf('(require-any'), text.indexOf('(require-not'));
    expect(collect(parse(`(${writable})`), 'string', 'subpath')).toEqual(['/private/var/folders/x/T/conch-run-1']);
  });

  test('escaping: quotes, backslashes and regex metacharacters in paths survive the round trip', () => {
    const workspace = '/Users/ana/we"ird\\ (dir) [v1.0]+$^*?{x}|';
    const text = renderSeatbeltProfile(input({ workspace, writableRoots: [] }));
    const nodes = parse(text);
    // every path literal decodes to exactly the path
    expect(collect(nodes, 'string', 'subpath')).toContain(workspace);
    expect(collect(nodes, 'string', 'subpath')).toContain(`${workspace}/.git`);
    expect(collect(nodes, 'string', 'literal')).toContain(workspace);
    // the regexes hold the real names and nothing else
    const envRegex = new RegExp(collect(nodes, 'regex', 'regex').find((r) => r.includes('env'))!);
    expect(envRegex.test(`${workspace}/.env.local`)).toBe(true);
    expect(envRegex.test(`${workspace}/.env.new-name`)).toBe(true);
    expect(envRegex.test(`${workspace}/.env.local/inner`)).toBe(true);
    expect(envRegex.test(`${workspace}/.envrc`)).toBe(false);
    expect(envRegex.test(`${workspace}/sub/.env.local`)).toBe(false);
    expect(envRegex.test('/Users/ana/weXird\\ (dir) [v1.0]+$^*?{x}|/.env.local')).toBe(true); // quote widened to [^/]
  });

  test('sbString and regexLiteral', () => {
    expect(sbString('/a"b\\c')).toBe('"/a\\"b\\\\c"');
    expect(regexLiteral('a.b(c)"d')).toBe('a\\.b\\(c\\)[^/]d');
    expect(() => sbString('/a\nb')).toThrow(SeatbeltPathError);
    expect(() => renderSeatbeltProfile(input({ workspace: '/tmp/a\tb' }))).toThrow(/control character/);
  });

  test('glob regexes', () => {
    const match = (pattern: string, path: string) => new RegExp(globRegex('/w', pattern)).test(path);
    expect(match('**/.env', '/w/.env')).toBe(true);
    expect(match('**/.env', '/w/a/b/.env')).toBe(true);
    expect(match('**/.env', '/w/a/b/.envx')).toBe(false);
    expect(match('keys/{prod,staging}.pem', '/w/keys/prod.pem')).toBe(true);
    expect(match('keys/{prod,staging}.pem', '/w/keys/dev.pem')).toBe(false);
    expect(match('a?c', '/w/abc')).toBe(true);
    expect(match('a?c', '/w/a/c')).toBe(false);
    expect(match('!(x)', '/w/anything')).toBe(true); // unsupported constructs widen, never narrow
  });

  test('sandbox-exec is used by absolute path', () => {
    expect(seatbeltArgv('(version 1)', ['/bin/sh', '-c', 'true'])).toEqual(['/usr/bin/sandbox-exec', '-p', '(version 1)', '/bin/sh', '-c', 'true']);
  });
});
