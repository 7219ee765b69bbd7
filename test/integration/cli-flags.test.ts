// The command line as typed: flags keep their text, wrong ones are usage errors that name them
// (one JSON document under --json, never a stack trace), and commands are told apart from tasks.
import { describe, expect, test } from 'bun:test';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { anthropicEnv, runConch, useHarness } from '../support/cli.ts';

const harness = useHarness();

const conch = (args: string[], env: Record<string, string> = anthropicEnv(harness.server.anthropicBaseUrl)) =>
  runConch({ dirs: harness.dirs, args, env });

/** The test model, unless the test is about --model. */
const withModel = (args: string[]) => (args.includes('--model') ? args : ['--model', 'anthropic/test-model', ...args]);

/** Exit 2 with a message naming `flag`, no stack trace, and no model call. */
async function usageError(args: string[], flag: string): Promise<string> {
  const r = await conch(withModel(args));
  expect(r.code).toBe(2);
  expect(r.stderr).toContain(flag);
  expect(r.stderr).not.toMatch(/TypeError|\n\s+at /);
  expect(harness.server.requests).toHaveLength(0);
  return r.stderr;
}

/**
 * The same under --json: exactly one document on stdout, naming the flag, with no run id (the
 * command line was wrong, so no run began), and on stderr the pointer to the help.
 */
async function usageErrorJson(args: string[], flag: string): Promise<void> {
  const r = await conch(withModel(['--json', ...args]));
  expect(r.code).toBe(2);
  const lines = r.stdout.trim().split('\n');
  expect(lines).toHaveLength(1);
  expect(JSON.parse(lines[0]!)).toMatchObject({ runId: null, status: 'failed', code: 'config_invalid', exitCode: 2 });
  expect(JSON.parse(lines[0]!).message).toContain(flag);
  expect(r.stderr).toContain(flag);
  expect(r.stderr).toEndWith("Run 'conch --help' for usage.\n");
}

describe('flags are reported as typed', () => {
  test('an unknown flag is named as typed, not in camelCase', async () => {
    const stderr = await usageError(['--bogus-flag', 'go'], "'--bogus-flag'");
    expect(stderr).not.toContain('bogusFlag');
  });

  test('a task that starts with a dash (conch "-v is broken, fix it") is told to go after --, where it runs', async () => {
    const stderr = await usageError(['-v is broken, fix it'], "unknown option '-v is broken, fix it'");
    expect(stderr).toContain(`conch -- "-v is broken, fix it"`);
    await usageErrorJson(['--verbose flag: add it'], 'conch -- "--verbose flag: add it"');
    harness.server.script([{ text: 'fixed' }]);
    const r = await conch(withModel(['--', '-v is broken, fix it']));
    expect(r.code).toBe(0);
    expect(JSON.stringify(harness.server.requests[0]!.body.messages)).toContain('-v is broken, fix it');
  });

  test("Claude Code's -p / --print is told that conch prints the answer without a flag", async () => {
    for (const flag of ['-p', '--print']) {
      const stderr = await usageError([flag, 'fix the tests'], `unknown option '${flag}'`);
      expect(stderr).toContain("no flag to print the answer and exit: conch --model anthropic/test-model 'fix the tests' (--json");
    }
  });

  test('--timeout -5 is a value error for --timeout, not an unknown option', async () => {
    const stderr = await usageError(['--timeout', '-5', 'go'], '--timeout');
    expect(stderr).toContain('-5');
    expect(stderr.toLowerCase()).not.toContain('unknown option');
  });

  test('values keep the text typed: numeric-looking strings are not turned into numbers', async () => {
    expect(await usageError(['--tools', '1e3', 'go'], '1e3')).not.toContain('1000');
    expect(await usageError(['--policy', '0x10', 'go'], '0x10')).not.toContain('/16');
    expect(await usageError(['--resume', '802e16', 'go'], "'802e16'")).not.toContain('8020000000000000000');
  });
});

describe('every flag is checked for type and repetition before use', () => {
  test('a bad flag value is a usage error like an unknown flag: runId null under --json, whichever check found it', async () => {
    const schema = join(harness.dirs.home, 'no-such-schema.json');
    const bad: [string[], string][] = [
      [['--timeout', '5x'], '--timeout 5x'],
      [['--limit', 'foo=1'], '--limit foo=1'],
      [['--limit', 'tool_calls=x'], '--limit tool_calls=x'],
      [['--env', 'FOO=1'], '--env FOO=1'],
      [['--env', 'CONCH_TASK_X'], '--env CONCH_TASK_X'],
      [['--profile', 'frost'], '--profile frost'],
      [['--allow-net', 'bad..host'], '--allow-net'],
      [['--plugin', 'nosuch'], '--plugin'],
      [['--fallback-model', 'nope/x'], '--fallback-model'],
      [['--output-schema', schema], '--output-schema'],
      [['--max-turns', 'x'], '--max-turns'],
      [['--skill', 'nosuch'], '--skill nosuch'],
      [['--resume', 'abc'], "no session 'abc'"],
    ];
    for (const [args, flag] of bad) await usageErrorJson([...args, 'go'], flag);
    // Several tasks: the same document shape, the same null.
    await usageErrorJson(['run', '--timeout', '5x', 'one', 'two'], '--timeout 5x');
    // A subcommand starts no run: no run id, and the pointer is to its own help.
    const tools = await conch(['tools', '--json', '--profile', 'frost']);
    expect(tools.code).toBe(2);
    expect(JSON.parse(tools.stdout)).toMatchObject({ runId: null, message: expect.stringContaining('--profile frost') });
    expect(tools.stderr).toEndWith("Run 'conch tools --help' for usage.\n");
  });

  test('one limit set by two flags, or by --limit twice, and one --env variable twice, are setup errors, never a value dropped in silence', async () => {
    const both: [string[], string][] = [
      [['--max-turns', '3', '--limit', 'model_calls=5'], '--max-turns 3 and --limit model_calls=5 both set the limit model_calls; give one of them.'],
      [['--limit', 'deadline_ms=5', '--timeout', '1h'], '--timeout 1h and --limit deadline_ms=5 both set the limit deadline_ms'],
      [['--max-tool-calls', '2', '--limit', 'tool_calls=9'], '--max-tool-calls 2 and --limit tool_calls=9 both set the limit tool_calls'],
      [['--max-cost', '0.50', '--limit', 'cost_usd=2'], '--max-cost 0.5 and --limit cost_usd=2 both set the limit cost_usd'],
      [['--limit', 'model_calls=2', '--limit', 'model_calls=4'], '--limit model_calls was given more than once (--limit model_calls=2, then --limit model_calls=4); give it once.'],
    ];
    for (const [args, message] of both) {
      expect(await usageError([...args, 'go'], message)).not.toMatch(/\n\s+at /);
      await usageErrorJson([...args, 'go'], message);
    }
    // So is one --env variable twice; its values (kept out of sessions and traces) are not repeated.
    const env = await usageError(['--env', 'CONCH_TASK_A=first-secret', '--env', 'CONCH_TASK_A=second-secret', 'go'], '--env CONCH_TASK_A was given more than once; give each variable once.');
    expect(env).not.toContain('secret');
    await usageErrorJson(['--env', 'CONCH_TASK_A=1', '--env', 'CONCH_TASK_A=2', 'go'], '--env CONCH_TASK_A was given more than once');
    // Different limits, each once, go together.
    harness.server.script(() => ({ text: 'ok' }));
    const r = await conch(withModel(['--max-turns', '3', '--limit', 'tool_calls=5', '--limit', 'model_output_bytes=100000', '--env', 'CONCH_TASK_A=1', '--env', 'CONCH_TASK_B=1', 'go']));
    expect(r.code).toBe(0);
  });

  test('numeric flags take plain decimals only: hex, exponents, Infinity and padding are refused naming flag and value', async () => {
    const refused: [string, string][] = [
      ['--temperature', '0x1'],
      ['--temperature', '1e0'],
      ['--temperature', 'Infinity'],
      ['--temperature', ' 1'],
      ['--temperature', '1.'],
      ['--temperature', '-0'],
      ['--max-cost', '0x10'],
      ['--max-cost', '1e'],
      ['--max-cost', '1e2'],
      ['--max-cost', 'Infinity'],
      ['--max-cost', '1 '],
      ['--max-turns', '0x10'],
      ['--max-output-tokens', '1e3'],
      ['--limit', 'cost_usd=0x10'],
      ['--limit', 'tool_calls=1e3'],
      ['--limit', 'tool_calls=0x10'],
      ['--limit', 'stdin_bytes= 5'],
      ['--timeout', ' 5'],
    ];
    for (const [flag, value] of refused) {
      const stderr = await usageError([flag, value, 'go'], flag);
      expect(stderr).toContain(value);
    }
    await usageErrorJson(['--temperature', '0x1', 'go'], "--temperature takes a number from 0 to 2 in plain decimal, such as 0.7, got '0x1'");
    await usageErrorJson(['--max-cost', '0x10', 'go'], "--max-cost takes US dollars, a number ≥ 0 in plain decimal such as 0.50 (0 = unlimited), got '0x10'");
    // An output limit of 0 is refused, so its message must not offer 0 as "unlimited", whatever the value.
    for (const value of ['10k', '0', '-1']) {
      const stderr = await usageError(['--max-output-tokens', value, 'go'], `--max-output-tokens takes a whole number of tokens above 0, got '${value}'`);
      expect(stderr).not.toContain('unlimited');
    }
    // Plain decimals are taken (a cost limit on the unpriced test model ends the run as limit_exceeded, after the check).
    harness.server.script(() => ({ text: 'ok' }));
    for (const args of [['--temperature', '.5'], ['--temperature', '0.7'], ['--max-cost', '0.50'], ['--limit', 'cost_usd=2'], ['--limit', 'tool_calls=10']]) {
      const r = await conch(withModel(['--json', ...args, 'go']));
      expect(r.code).not.toBe(2);
      expect(JSON.parse(r.stdout).runId).toEqual(expect.any(String));
    }
  });

  test('--policy "" is a setup error, never a run without a policy', async () => {
    await usageError(['--policy', '', 'go'], '--policy');
    await usageErrorJson(['--policy', '', 'go'], '--policy');
  });

  test('--tools "" is a setup error', async () => {
    expect(await usageError(['--tools', '', 'go'], '--tools')).not.toContain('not registered: 0');
  });

  test('a tool --tools asks for that another flag takes out is said on stderr, not dropped in silence', async () => {
    harness.server.script(() => ({ text: 'ok' }));
    const r = await conch(withModel(['--tools', 'read,bash', '--no-filesystem', 'go']));
    expect(r.code).toBe(0);
    expect(r.stderr).toBe('conch: --tools names read, which this run does not offer: filesystem tools are off (--no-filesystem)\n');
    expect((harness.server.requests[0]!.body.tools as { name: string }[]).map((t) => t.name)).toEqual(['bash']);
    const readOnly = await conch(withModel(['--tools', 'write', '--read-only', 'go']));
    expect(readOnly.stderr).toContain('conch: --tools names write, which this run does not offer: the run is read-only (--read-only)');
    // Asked for and offered: nothing to say.
    expect((await conch(withModel(['--tools', 'read', 'go']))).stderr).toBe('');
  });

  test('--policy 5 names the file it looked for', async () => {
    await usageError(['--policy', '5', 'go'], '--policy 5');
    await usageErrorJson(['--policy', '5', 'go'], '--policy 5');
  });

  test('--model "" and --model 42 are setup errors naming --model', async () => {
    await usageError(['--model', '', 'go'], '--model');
    await usageError(['--model', '42', 'go'], '--model "42"');
    await usageErrorJson(['--model', '42', 'go'], '--model');
  });

  test('a repeated single-valued flag is a setup error naming it, whichever flag it is', async () => {
    const twice: [string, string, string][] = [
      ['--policy', 'a.json', 'b.json'],
      ['--base-url', 'http://127.0.0.1:1/v1', 'http://127.0.0.1:2/v1'],
      ['--model', 'anthropic/a', 'anthropic/b'],
      ['--timeout', '5m', '10m'],
      ['--tools', 'read', 'bash'],
      ['--max-turns', '1', '2'],
      ['--profile', 'read-only', 'workspace-write'],
      ['--trace', 'a.jsonl', 'b.jsonl'],
    ];
    for (const [flag, a, b] of twice) {
      expect(await usageError([flag, a, flag, b, 'go'], flag)).toContain('more than once');
    }
    await usageErrorJson(['--policy', 'a.json', '--policy', 'b.json', 'go'], '--policy');
  });

  test('--base-url that is not a URL is a setup error naming the flag', async () => {
    await usageError(['--base-url', 'notaurl', 'go'], '--base-url');
    await usageErrorJson(['--base-url', 'notaurl', 'go'], '--base-url');
  });

  test('a named model whose key is missing says so, and how to give it', async () => {
    const r = await conch(['-m', 'openai/gpt-5.4', 'go'], {});
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('OPENAI_API_KEY');
    expect(r.stderr).toContain('needs an API key');
    expect(r.stderr).not.toContain('no model is configured');
    // No flag was wrong: --help would not help, and under --json the run's document says it.
    expect(r.stderr).not.toContain('--help');
    const json = await conch(['--json', '-m', 'openai/gpt-5.4', 'go'], {});
    expect(json.code).toBe(2);
    expect(JSON.parse(json.stdout)).toMatchObject({ runId: expect.any(String), code: 'config_invalid', message: expect.stringContaining('needs an API key') });
  });
});

describe('commands and tasks', () => {
  test('conch help shows the help', async () => {
    const r = await conch(['help']);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('Usage:');
    expect(r.stdout).toContain('tools [action] [name]');
    expect(harness.server.requests).toHaveLength(0);
  });

  test("a word that only an object's prototype has (constructor, toString) is a task, not a command", async () => {
    harness.server.script(() => ({ text: 'ok' }));
    for (const word of ['constructor', 'toString', '__proto__']) {
      const r = await conch(withModel([word]));
      expect(r.stderr).not.toMatch(/TypeError|\n\s+at /);
      expect(r.code).toBe(0);
      expect(r.stdout).toBe('ok\n');
      const help = await conch(['help', word]);
      expect(help.code).toBe(2);
      expect(help.stderr).toContain(`'${word}' is not a command`);
    }
    expect(harness.server.requests).toHaveLength(3);
  });

  test("a limit or network preset named like Object's own members (constructor, toString) is none: a setup error, no stack trace", async () => {
    const limit = await usageError(['--limit', 'constructor=5', 'x'], "--limit constructor=5: expected NAME=VALUE with NAME one of deadline_ms");
    expect(limit).not.toContain('TypeError');
    expect(await usageError(['--allow-net', '@constructor', 'x'], '"@constructor" is no preset; available: @')).not.toContain('TypeError');
    await writeFile(join(harness.dirs.configHome, 'conch', 'config.json'), JSON.stringify({ sandbox: { network: { allow: ['@toString'] } } }));
    const configured = await conch(withModel(['x']));
    expect(configured.code).toBe(2);
    expect(configured.stderr).toContain('"@toString" is no preset');
    expect(configured.stderr).not.toMatch(/TypeError|\n\s+at /);
    expect(harness.server.requests).toHaveLength(0);
  });

  test('conch help COMMAND shows that command; conch help WORD that is no command is a usage error, not a task', async () => {
    const tools = await conch(['help', 'tools']);
    expect(tools.code).toBe(0);
    expect(tools.stdout).toContain('tools [action] [name]');
    expect(tools.stdout).toContain('--tools-dir');
    // What the command does, which cac's help of one command leaves out.
    expect(tools.stdout).toContain('List the tool catalog as the model sees it');
    const sessions = await conch(['sessions', '--help']);
    expect(sessions.stdout).toContain('`show ID`, `rm ID`, `prune --older-than 30d`');
    const typo = await conch(['help', 'tool']);
    expect(typo.code).toBe(2);
    expect(typo.stderr).toContain("'tool' is not a command; did you mean 'conch help tools'? To run 'help tool' as a task: conch -- help tool");
    expect(typo.stderr).toContain('conch -- help tool');
    const far = await conch(['help', 'refactor']);
    expect(far.code).toBe(2);
    expect(far.stderr).toContain("'refactor' is not a command; the commands are run, tools, mcp, skills, trust, sandbox, acp, sessions, help.");
    const words = await conch(['help', 'me', 'fix', 'it']);
    expect(words.code).toBe(2);
    expect(words.stderr).toContain("'conch help' takes one command name, got: me fix it.");
    const json = await conch(['--json', 'help', 'refactor']);
    expect(json.code).toBe(2);
    expect(JSON.parse(json.stdout)).toMatchObject({ status: 'failed', code: 'config_invalid' });
    const flagged = await conch(['--model', 'anthropic/test-model', 'help']);
    expect(flagged.code).toBe(2);
    expect(flagged.stderr).toContain("'conch help' has no option '--model'");
    for (const r of [typo, far, words, json, flagged]) expect(r.stderr).not.toMatch(/\n\s+at /);
    expect(harness.server.requests).toHaveLength(0);
  });

  test("conch sandbox run CMD -x without -- says the command's options go after --", async () => {
    const r = await conch(['sandbox', 'run', 'ls', '-la']);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("unknown option '-la'; the command's own options go after --: conch sandbox run [--no-network] [--profile NAME] -- CMD ARGS…");
  });

  test("a subcommand's usage error points to that subcommand's --help, whose flags differ from a run's", async () => {
    const tools = await conch(['tools', '--all']);
    expect(tools.code).toBe(2);
    expect(tools.stderr).toBe("conch: 'conch tools' has no option '--all'\nRun 'conch tools --help' for usage.\n");
    const sessions = await conch(['sessions', 'show', 'a', 'b']);
    expect(sessions.stderr).toEndWith("Run 'conch sessions --help' for usage.\n");
    expect((await conch(['sandbox', 'run', 'ls', '-la'])).stderr).toEndWith("Run 'conch sandbox --help' for usage.\n");
    expect((await conch(['--bogus', 'x'])).stderr).toEndWith("Run 'conch --help' for usage.\n");
  });

  test("an unknown flag given to a subcommand is offered only a near flag that subcommand takes, and its help", async () => {
    // --model is a run's flag: `conch tools --model` is refused, so offering it would send the user in a circle.
    const tools = await conch(['tools', '--modle']);
    expect(tools.code).toBe(2);
    expect(tools.stderr).toBe("conch: unknown option '--modle'\nRun 'conch tools --help' for usage.\n");
    const sessions = await conch(['sessions', '--no-shel']);
    expect(sessions.stderr).toBe("conch: unknown option '--no-shel'\nRun 'conch sessions --help' for usage.\n");
    // A near flag the subcommand does take is still offered; a flag's value is not taken for the command.
    expect((await conch(['tools', '--no-shel'])).stderr).toBe("conch: unknown option '--no-shel' (did you mean '--no-shell'?)\nRun 'conch tools --help' for usage.\n");
    expect((await conch(['--model', 'tools', 'x', '--modle'])).stderr).toStartWith("conch: unknown option '--modle' (did you mean '--model'?)\nRun 'conch --help'");
    // A run is not offered a subcommand's flag (--all lists sessions).
    expect((await conch(['--al', 'x'])).stderr).toBe("conch: unknown option '--al'\nRun 'conch --help' for usage.\n");
    expect(harness.server.requests).toHaveLength(0);
  });

  test("a subcommand's words after -- are its words: acted on or refused, never dropped", async () => {
    // `conch sessions -- rm ID` removes the session; it must not list the sessions and exit 0 instead.
    harness.server.script(() => ({ text: 'ok' }));
    const run = await conch(['--model', 'anthropic/test-model', '--json', 'go']);
    const id = JSON.parse(run.stdout).sessionId as string;
    const rm = await conch(['sessions', '--', 'rm', id]);
    expect(rm.code).toBe(0);
    expect((await conch(['sessions', 'show', id])).code).toBe(2);
    for (const [args, message] of [
      [['sessions', '--', 'show', 'a', 'b'], "'conch sessions' takes an action and an id, got: show a b"],
      [['sessions', '--', 'bogus'], "unknown 'sessions' action 'bogus'"],
      [['tools', '--', 'extra'], "unknown 'tools' action 'extra'"],
      [['skills', '--', 'x'], "'conch skills' takes no arguments, got: x"],
      [['mcp', '--', 'x'], "'conch mcp' takes no arguments, got: x"],
      [['trust', '--', 'x'], "'conch trust' takes no arguments, got: x"],
      [['sandbox', 'check', 'ls'], "'conch sandbox check' takes no arguments, got: ls; to run a command: conch sandbox run -- ls"],
      [['sandbox', 'check', '--', 'ls'], "'conch sandbox check' takes no arguments, got: ls"],
    ] as const) {
      const r = await conch([...args]);
      expect(r.code).toBe(2);
      expect(r.stderr).toContain(message);
      expect(r.stdout).toBe('');
    }
  });

  test("a subcommand's usage error or unknown session under --json is one document on stdout, as for a run", async () => {
    for (const [args, message, help] of [
      [['tools', 'bogus'], "usage: unknown 'tools' action 'bogus'", 'tools'],
      [['sessions', 'bogus'], "usage: unknown 'sessions' action 'bogus'", 'sessions'],
      [['sessions', 'show'], 'usage: conch sessions show ID [--json]', 'sessions'],
      [['sessions', 'show', 'abcdef'], "no session 'abcdef'", null],
    ] as const) {
      const r = await conch([...args, '--json']);
      expect(r.code).toBe(2);
      const lines = r.stdout.trim().split('\n');
      expect(lines).toHaveLength(1);
      expect(JSON.parse(lines[0]!)).toMatchObject({ runId: null, status: 'failed', code: 'config_invalid', exitCode: 2, message: expect.stringContaining(message) });
      expect(r.stderr).toContain(message);
      if (help) expect(r.stderr).toEndWith(`Run 'conch ${help} --help' for usage.\n`);
      expect(r.stderr).not.toMatch(/\n\s+at /);
    }
  });

  test('a task that begins with the word help, quoted or after --, is a task', async () => {
    harness.server.script(() => ({ text: 'ok' }));
    for (const args of [['help me fix the tests'], ['--', 'help', 'me'], ['run', 'help']]) {
      harness.server.requests.length = 0;
      const r = await conch(['--model', 'anthropic/test-model', ...args]);
      expect(r.code).toBe(0);
      expect(r.stdout).toBe('ok\n');
      expect(JSON.stringify(harness.server.requests[0]!.body.messages)).toContain(args.at(-1)!);
    }
  });

  test('a single word one edit from a command asks "did you mean" and exits 2', async () => {
    for (const [typed, meant] of [['tool', 'tools'], ['turst', 'trust'], ['sandbx', 'sandbox']]) {
      const r = await conch(['--model', 'anthropic/test-model', typed!]);
      expect(r.code).toBe(2);
      expect(r.stderr).toContain(`did you mean 'conch ${meant}'?`);
      expect(r.stderr).toContain(`conch run ${typed}`);
    }
    expect(harness.server.requests).toHaveLength(0);
  });

  test('conch version asks for the version, not a model call: "did you mean conch --version?", exit 2; conch run version is a task', async () => {
    const r = await conch(['--model', 'anthropic/test-model', 'version']);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("did you mean 'conch --version'? To run 'version' as a task: conch run version");
    expect(harness.server.requests).toHaveLength(0);
    harness.server.script(() => ({ text: 'ok' }));
    const task = await conch(['--model', 'anthropic/test-model', 'run', 'version']);
    expect(task.code).toBe(0);
    expect(harness.server.requests).toHaveLength(1);
  });

  test("each command's help lists only its own options, and no help line ends in whitespace", async () => {
    const commands = ['', 'run', 'tools', 'mcp', 'skills', 'trust', 'sandbox', 'acp', 'sessions', 'help'];
    const helps = new Map<string, string>();
    for (const command of commands) {
      const r = await conch(command ? [command, '--help'] : ['--help']);
      expect(r.code).toBe(0);
      expect(r.stdout).toContain('Usage:');
      expect(r.stdout.split('\n').filter((line) => /\s$/.test(line))).toEqual([]);
      helps.set(command, r.stdout);
    }
    expect((await conch(['help', 'tools'])).stdout).toBe(helps.get('tools')!);
    // A run's model, budget and deadline flags are a run's; the listings take what shapes the tools.
    for (const command of ['tools', 'mcp']) {
      for (const own of ['--tools-dir', '--no-plugins', '--no-mcp', '--policy', '--profile', '--json']) expect(helps.get(command)).toContain(own);
      for (const other of ['--model', '--temperature', '--max-cost', '--timeout', '--max-turns', '--limit', '--trace', '--continue']) expect(helps.get(command)).not.toContain(`${other} `);
      const r = await conch([command, '--temperature', '1']);
      expect(r.code).toBe(2);
      expect(r.stderr).toContain(`'conch ${command}' has no option '--temperature'`);
    }
    for (const command of ['sessions', 'skills', 'trust', 'sandbox', 'help']) expect(helps.get(command)).not.toMatch(/--model|--temperature|--tools-dir/);
    // An editor's session is a run: conch acp takes a run's model and policy flags.
    expect(helps.get('acp')).toContain('--temperature');
    expect(helps.get('')).toContain('--max-concurrent');
  });

  test('conch sandbox with no action prints its help and exits 0; an unknown action or run without a command exits 2', async () => {
    const bare = await conch(['sandbox']);
    expect(bare.code).toBe(0);
    expect(bare.stdout).toBe((await conch(['sandbox', '--help'])).stdout);
    expect(bare.stdout).toContain('$ conch sandbox [action] [...command]');
    expect(bare.stderr).toBe('');
    for (const args of [['sandbox', 'bogus'], ['sandbox', 'run'], ['sandbox', '--', 'ls']]) {
      const r = await conch(args);
      expect(r.code).toBe(2);
      expect(r.stdout).toBe('');
      expect(r.stderr).toContain('conch: usage: conch sandbox');
    }
  });

  test('a suggestion is one question: never "?." or "?)." after it', async () => {
    for (const args of [['help', 'tool'], ['help', 'refactor'], ['tool'], ['--modle', 'x', 'go'], ['tools', '--jsn'], ['sessions', '--al']]) {
      const r = await conch(args);
      expect(r.code).toBe(2);
      expect(r.stderr).not.toMatch(/\?[.,]|\.\./);
    }
  });

  test('conch run WORD, conch -- WORD and a multi-word task are tasks', async () => {
    harness.server.script(() => ({ text: 'ok' }));
    for (const args of [['run', 'tool'], ['--', 'tool'], ['fix the tool'], ['fix', 'the', 'tool'], ['--read-only', 'tool', 'list']]) {
      harness.server.requests.length = 0;
      const r = await conch(['--model', 'anthropic/test-model', ...args]);
      expect(r.code).toBe(0);
      expect(r.stdout).toBe('ok\n');
      expect(JSON.stringify(harness.server.requests[0]!.body.messages)).toContain(args.at(-1)!.split(' ').at(-1)!);
    }
  });

  test('--tools-dir of a directory that does not exist is a setup error, not a run without those tools', async () => {
    const missing = join(harness.dirs.home, 'my-tols');
    const stderr = await usageError(['--tools-dir', missing, 'go'], '--tools-dir');
    expect(stderr).toContain(`--tools-dir ${missing}: ${missing} does not exist; create the directory first, or leave the flag out.`);
    await usageErrorJson(['--tools-dir', missing, 'go'], '--tools-dir');
    const file = join(harness.dirs.home, 'a-file');
    await writeFile(file, 'x');
    expect(await usageError(['--tools-dir', file, 'go'], '--tools-dir')).toContain('is not a directory');
  });

  test('--no-plugins with --plugin, --tools-dir or --project-tools is a setup error, not a run without the plugin asked for', async () => {
    const stderr = await usageError(['--no-plugins', '--plugin', 'git', 'go'], '--no-plugins');
    expect(stderr).toContain('conch: --no-plugins loads no plugin, so --plugin git would do nothing; give one or the other.');
    expect(await usageError(['--no-plugins', '--tools-dir', harness.dirs.home, '--project-tools', 'go'], '--no-plugins')).toContain(
      `so --tools-dir ${harness.dirs.home}, --project-tools would do nothing`,
    );
    await usageErrorJson(['--no-plugins', '--plugin', 'git', 'go'], '--no-plugins');
    const tools = await conch(['tools', '--no-plugins', '--plugin', 'git']);
    expect(tools.code).toBe(2);
    expect(tools.stderr).toContain('--no-plugins loads no plugin');
  });

  test('--unrestricted with --no-network, --allow-net or --profile is a setup error: unsandboxed commands would have the network and the whole filesystem', async () => {
    const stderr = await usageError(['--unrestricted', '--no-network', 'go'], '--unrestricted');
    expect(stderr).toContain('conch: --unrestricted runs shell commands outside the sandbox, where --no-network cannot hold; give one or the other.');
    expect(await usageError(['--unrestricted', '--allow-net', 'example.org', '--profile', 'read-only', 'go'], '--unrestricted')).toContain(
      'where --allow-net example.org, --profile read-only cannot hold',
    );
    await usageErrorJson(['--unrestricted', '--no-network', 'go'], '--unrestricted');
  });

  test('--allow-write of a directory that does not exist is a setup error, before any model call', async () => {
    const missing = join(harness.dirs.home, 'no-such-dir');
    const stderr = await usageError(['--allow-write', missing, 'go'], '--allow-write');
    expect(stderr).toContain(`--allow-write ${missing}: ${missing} does not exist; create the directory first`);
    await writeFile(join(harness.dirs.home, 'a-file'), 'x');
    expect(await usageError(['--allow-write', '../home/a-file', 'go'], '--allow-write')).toContain('is not a directory');
    await usageErrorJson(['--allow-write', missing, 'go'], '--allow-write');
  });

  test('--trace-content without --trace is a setup error, for one task and for several', async () => {
    expect(await usageError(['--trace-content', 'go'], '--trace-content needs --trace FILE')).toBeTruthy();
    expect(await usageError(['run', '--trace-content', 'one', 'two'], '--trace-content needs --trace FILE')).toBeTruthy();
  });

  test('a leading -- reaches conch: `conch -- tool` and `conch -- --json` are tasks', async () => {
    // Bun drops one `--` right after the script name, so bin/conch must not let the user's be that one.
    harness.server.script(() => ({ text: 'ok' }));
    for (const word of ['tool', '--json']) {
      harness.server.requests.length = 0;
      const r = await conch(['--', word], { ...anthropicEnv(harness.server.anthropicBaseUrl), CONCH_MODEL: 'anthropic/test-model' });
      expect(r.stderr).not.toContain('did you mean');
      expect(r.code).toBe(0);
      expect(r.stdout).toBe('ok\n');
      expect(JSON.stringify(harness.server.requests[0]!.body.messages)).toContain(word);
    }
  });
});
