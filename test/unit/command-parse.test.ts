import { describe, expect, test } from 'bun:test';
import { type Construct, parseCommand } from '../../src/policy/command-parse.ts';

type Ok = [command: string, argv: string[], assignments?: [string, string][]];

const PARSED: Ok[] = [
  // plain words and whitespace
  ['git status', ['git', 'status']],
  ['  git   status  ', ['git', 'status']],
  ['git\tstatus', ['git', 'status']],
  ['/usr/bin/git status', ['/usr/bin/git', 'status']],
  ['./scripts/build.sh --fast', ['./scripts/build.sh', '--fast']],
  ['bin/tool', ['bin/tool']],
  ['wc -l src/a.ts', ['wc', '-l', 'src/a.ts']],
  ['git log --format=%H -n 3', ['git', 'log', '--format=%H', '-n', '3']],
  ['grep -rn TODO src', ['grep', '-rn', 'TODO', 'src']],
  ['echo a=b', ['echo', 'a=b']],
  ['echo 100%', ['echo', '100%']],
  ['echo $', ['echo', '$']],
  ['echo a$ b', ['echo', 'a$', 'b']],
  ['echo a~b', ['echo', 'a~b']],
  ['echo a]b', ['echo', 'a]b']],
  ['echo a[b', ['echo', 'a[b']],
  ['[ -f x ]', ['[', '-f', 'x', ']']],
  ['find . -name x -exec rm {} +', ['find', '.', '-name', 'x', '-exec', 'rm', '{}', '+']],
  ['echo a#b', ['echo', 'a#b']],
  ['git status # a comment', ['git', 'status']],
  ['git status #', ['git', 'status']],
  ['echo ünïcødé', ['echo', 'ünïcødé']],
  // single quotes
  ["echo 'a b'", ['echo', 'a b']],
  ["echo 'a\"b'", ['echo', 'a"b']],
  ["echo '$HOME' '*' '~' '`x`' '|;&'", ['echo', '$HOME', '*', '~', '`x`', '|;&']],
  ["echo ''", ['echo', '']],
  ["echo 'a'b'c'", ['echo', 'abc']],
  ["echo 'a\\nb'", ['echo', 'a\\nb']],
  // double quotes
  ['echo "a b"', ['echo', 'a b']],
  ['echo "a \\"quoted\\" b"', ['echo', 'a "quoted" b']],
  ['echo "\\$HOME"', ['echo', '$HOME']],
  ['echo "back\\\\slash"', ['echo', 'back\\slash']],
  ['echo "\\n stays"', ['echo', '\\n stays']],
  ['echo "a*b?c[d]"', ['echo', 'a*b?c[d]']],
  ['echo "it\'s"', ['echo', "it's"]],
  ['echo "$"', ['echo', '$']],
  ['echo ""', ['echo', '']],
  ['echo "line\\\ncontinued"', ['echo', 'linecontinued']],
  // backslash escapes
  ['echo a\\ b', ['echo', 'a b']],
  ['echo \\$HOME', ['echo', '$HOME']],
  ['echo \\*', ['echo', '*']],
  ['echo \\|', ['echo', '|']],
  ['echo \\;', ['echo', ';']],
  ['echo \\~', ['echo', '~']],
  ['echo \\"', ['echo', '"']],
  ['git \\\nstatus', ['git', 'status']],
  ['find . -exec rm {} \\;', ['find', '.', '-exec', 'rm', '{}', ';']],
  // leading assignments
  ['FOO=1 make test', ['make', 'test'], [['FOO', '1']]],
  ['A=1 B=two cmd x', ['cmd', 'x'], [['A', '1'], ['B', 'two']]],
  ['EMPTY= cmd', ['cmd'], [['EMPTY', '']]],
  ["MSG='hello world' cmd", ['cmd'], [['MSG', 'hello world']]],
  ['"FOO"=1 cmd', ['FOO=1', 'cmd']],
  ['F\\OO=1 cmd', ['FOO=1', 'cmd']],
  ['cmd FOO=1', ['cmd', 'FOO=1']],
  ['1A=x cmd', ['1A=x', 'cmd']],
  // env wrapper
  ['env FOO=1 git status', ['git', 'status'], [['FOO', '1']]],
  ['env A=1 B=2 ls -la', ['ls', '-la'], [['A', '1'], ['B', '2']]],
  ['X=0 env Y=1 cmd', ['cmd'], [['X', '0'], ['Y', '1']]],
  ['/usr/bin/env FOO=1 cmd', ['cmd'], [['FOO', '1']]],
  ['env -- cmd arg', ['cmd', 'arg']],
  ['env cmd', ['cmd']],
  ['env', ['env']],
  ['env FOO=1', ['env', 'FOO=1']],
  ['env FOO=1 env BAR=2 cmd', ['cmd'], [['FOO', '1'], ['BAR', '2']]],
  ['"env" FOO=1 cmd', ['cmd'], [['FOO', '1']]],
];

const REFUSED: [command: string, construct: Construct][] = [
  ['ls | wc -l', 'pipe'],
  ['ls |& cat', 'pipe'],
  ['git status; rm -rf /', 'sequence'],
  ['git status\nrm x', 'sequence'],
  ['git status # fine\nrm x', 'sequence'],
  ['make && make install', 'and'],
  ['test -f x || touch x', 'or'],
  ['sleep 10 &', 'background'],
  ['echo hi > out.txt', 'redirection'],
  ['echo hi >> out.txt', 'redirection'],
  ['cat < in.txt', 'redirection'],
  ['cmd 2>&1', 'redirection'],
  ['cmd &> log', 'redirection'],
  ['cat <<EOF', 'here-doc'],
  ['cat <<<"text"', 'here-string'],
  ['diff <(ls a) <(ls b)', 'process substitution'],
  ['tee >(wc)', 'process substitution'],
  ['(cd x && ls)', 'subshell'],
  ['echo )', 'subshell'],
  ['echo $(whoami)', 'command substitution'],
  ['echo "$(whoami)"', 'command substitution'],
  ['echo $((1+2))', 'arithmetic expansion'],
  ['echo `whoami`', 'backticks'],
  ['echo "`whoami`"', 'backticks'],
  ['echo $HOME', 'variable expansion'],
  ['echo ${HOME}', 'variable expansion'],
  ['echo "$HOME"', 'variable expansion'],
  ['echo "${HOME:-x}"', 'variable expansion'],
  ['echo $1', 'variable expansion'],
  ['echo $@', 'variable expansion'],
  ['echo $?', 'variable expansion'],
  ['FOO=$BAR cmd', 'variable expansion'],
  ["echo $'a\\nb'", 'dollar quoting'],
  ['echo $"msg"', 'dollar quoting'],
  ['ls *.ts', 'glob'],
  ['ls file?.txt', 'glob'],
  ['ls [abc].txt', 'glob'],
  ['echo {a,b}', 'brace expansion'],
  ['echo x{1..3}', 'brace expansion'],
  ['{ echo a; }', 'brace expansion'],
  ['cat ~/.ssh/id_rsa', 'tilde'],
  ['echo ~', 'tilde'],
  ['PATH=~/bin cmd', 'tilde'],
  ['cmd --prefix=~/x', 'tilde'],
  ['! git diff --quiet', 'negation'],
  ['if true', 'reserved word'],
  ['for x in a', 'reserved word'],
  ['time make', 'reserved word'],
  ['[[ -f x ]]', 'reserved word'],
  ['eval "rm -rf /"', 'shell builtin'],
  ['exec rm -rf /', 'shell builtin'],
  ['. ./script.sh', 'shell builtin'],
  ['source env.sh', 'shell builtin'],
  ['command rm x', 'shell builtin'],
  ['FOO=1 export BAR', 'shell builtin'],
  ['"eval" x', 'shell builtin'],
  ['env -i rm x', 'env option'],
  ['env -S "rm x"', 'env option'],
  ["echo 'unterminated", 'unterminated quote'],
  ['echo "unterminated', 'unterminated quote'],
  ['echo trailing\\', 'trailing backslash'],
  ['echo a\rb', 'control character'],
  ["echo 'a\u001b[2Jb'", 'control character'],
  ['', 'empty command'],
  ['   ', 'empty command'],
  ['# only a comment', 'empty command'],
  ['FOO=1', 'no command'],
  ['A=1 B=2', 'no command'],
];

describe('parseCommand: simple commands', () => {
  test.each(PARSED)('%p', (command, argv, assignments = []) => {
    const parsed = parseCommand(command);
    expect(parsed).toEqual({ ok: true, argv, assignments: assignments.map(([name, value]) => ({ name, value })) });
  });
});

describe('parseCommand: refused constructs', () => {
  test.each(REFUSED)('%p → %s', (command, construct) => {
    const parsed = parseCommand(command);
    expect(parsed.ok).toBe(false);
    if (parsed.ok) return;
    expect(parsed.construct).toBe(construct);
    expect(parsed.message.length).toBeGreaterThan(0);
  });
});

test('the table is large enough to mean something', () => {
  expect(PARSED.length + REFUSED.length).toBeGreaterThanOrEqual(60);
});

test('messages name the construct and where it is', () => {
  const parsed = parseCommand('git status | head');
  expect(parsed).toEqual({ ok: false, construct: 'pipe', message: "a pipe '|' at column 12" });
});
