// --trace-content writes what the run saw, but never a secret value it knows: the provider key and
// the values of --env are replaced by the sessions' markers, also when streamed text splits one.
import { expect, test } from 'bun:test';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { runConch, useHarness } from '../support/cli.ts';

const harness = useHarness();
const KEY = 'sk-ant-test-7Hq2ZmXr9LpW4vKd';
const TOKEN = 'tok-3f9a1c77e2b4';

function script(tasks = 1) {
  const turns = [
    // The model quotes the key in a tool's arguments; the command prints the --env value.
    { toolCalls: [{ name: 'bash', arguments: { command: `echo "$CONCH_TASK_TOKEN" # ${KEY}` } }] },
    // Split over deltas: no piece holds the whole key.
    { thinking: { text: `thinking about ${KEY}`, signature: 'sig' }, text: ['the key is sk-ant-te', 'st-7Hq2Zm', `Xr9LpW4vKd and the token ${TOKEN.slice(0, 5)}`, `${TOKEN.slice(5)}.`] },
  ];
  harness.server.script(Array.from({ length: tasks }, () => turns).flat());
}

const env = () => ({ ANTHROPIC_API_KEY: KEY, ANTHROPIC_BASE_URL: harness.server.anthropicBaseUrl });
const args = (trace: string) => ['--trace', trace, '--trace-content', '--unrestricted', '--env', `CONCH_TASK_TOKEN=${TOKEN}`, '--ephemeral'];

function expectHidden(trace: string, tasks = 1) {
  const text = readFileSync(trace, 'utf8');
  expect(text).not.toContain(KEY);
  expect(text).not.toContain(TOKEN);
  expect(text).toContain('[redacted provider key]');
  expect(text).toContain('[redacted --env CONCH_TASK_TOKEN]');
  const events = text.trim().split('\n').map((line) => JSON.parse(line));
  // The streamed text, put back together, is the answer with the markers in place.
  const streamed = events.filter((e) => e.type === 'text.delta').map((e) => e.text).join('');
  const answer = 'the key is [redacted provider key] and the token [redacted --env CONCH_TASK_TOKEN].';
  expect(streamed).toBe(answer.repeat(tasks));
  expect(events.at(-1).type).toBe('run.finished');
  return events;
}

test('--trace-content: no provider key or --env value in the trace file, streamed or not', async () => {
  script();
  const trace = join(harness.dirs.home, 'trace.jsonl');
  const r = await runConch({ dirs: harness.dirs, args: [...args(trace), 'go'], env: env() });
  expect(r.code).toBe(0);
  const events = expectHidden(trace);
  const finished = events.find((e) => e.type === 'tool.finished');
  expect(finished.output).toContain('[redacted --env CONCH_TASK_TOKEN]');
  expect(JSON.stringify(events.find((e) => e.type === 'tool.started').args)).toContain('[redacted provider key]');
  expect(events.find((e) => e.type === 'run.finished').outcome.output).toContain('[redacted provider key]');
});

test('several tasks (conch run A B) share one trace, hidden alike', async () => {
  script(2);
  const trace = join(harness.dirs.home, 'trace.jsonl');
  const r = await runConch({ dirs: harness.dirs, args: ['run', ...args(trace), '--max-concurrent', '1', 'one', 'two'], env: env() });
  expect(r.code).toBe(0);
  expectHidden(trace, 2);
});

test("a plugin tool's argument or detail named data is no image: the key in it is hidden too", async () => {
  const tools = join(harness.dirs.configHome, 'conch', 'tools');
  mkdirSync(tools, { recursive: true });
  writeFileSync(
    join(tools, 'upload.js'),
    "export default { name: 'upload', description: 'Upload', parameters: { type: 'object', properties: { data: { type: 'string' } }, required: ['data'] }, " +
      "execute: ({ data }) => ({ content: [{ type: 'text', text: 'ok' }], details: { data } }) };",
  );
  harness.server.script([{ toolCalls: [{ name: 'upload', arguments: { data: `key ${KEY}` } }] }, { text: 'done' }]);
  const trace = join(harness.dirs.home, 'trace.jsonl');
  const r = await runConch({ dirs: harness.dirs, args: ['--trace', trace, '--trace-content', '--ephemeral', 'go'], env: env() });
  expect(r.code).toBe(0);
  const text = readFileSync(trace, 'utf8');
  expect(text).not.toContain(KEY);
  const events = text.trim().split('\n').map((line) => JSON.parse(line));
  expect(events.find((e) => e.type === 'tool.started').args).toEqual({ data: 'key [redacted provider key]' });
  expect(events.find((e) => e.type === 'tool.finished').details).toEqual({ data: 'key [redacted provider key]' });
});

// A trace file in the workspace is a path a sandboxed command can replace: appending by path
// followed its link to any file of the user's (a ~/.bashrc, where a tool name the model chose,
// `$(…)`, ran at the next shell start). The file conch opened at the start is the one it writes.
test('a command that replaces the trace file with a link does not redirect the trace', async () => {
  const target = join(harness.dirs.home, 'bashrc');
  writeFileSync(target, '# bashrc\n');
  harness.server.script([
    { toolCalls: [{ name: 'bash', arguments: { command: `rm -f trace.jsonl && ln -s '${target}' trace.jsonl && echo linked` } }] },
    { toolCalls: [{ name: '$(touch pwned)', arguments: {} }] },
    { text: 'done' },
  ]);
  const r = await runConch({ dirs: harness.dirs, args: ['--trace', 'trace.jsonl', '--ephemeral', 'go'], env: env() });
  expect(r.code).toBe(0);
  expect(readFileSync(target, 'utf8')).toBe('# bashrc\n');
  expect(harness.server.requests[1]!.body.messages.at(-1).content[0].content[0].text).toContain('linked');
});

// The link a command left stays for the next run: opened by path, that run's trace truncated the
// file the link names and wrote JSON lines into it (a `$(…)` in a tool name runs in a ~/.bashrc).
test('a trace file that a command of an earlier run replaced with a link is refused, not followed', async () => {
  const target = join(harness.dirs.home, 'bashrc');
  writeFileSync(target, '# bashrc\n');
  harness.server.script([
    { toolCalls: [{ name: 'bash', arguments: { command: `rm -f trace.jsonl && ln -s '${target}' trace.jsonl && echo linked` } }] },
    { text: 'done' },
  ]);
  expect((await runConch({ dirs: harness.dirs, args: ['--trace', 'trace.jsonl', '--ephemeral', 'go'], env: env() })).code).toBe(0);
  harness.server.script([{ toolCalls: [{ name: '$(touch pwned)', arguments: {} }] }, { text: 'done' }]);
  const second = await runConch({ dirs: harness.dirs, args: ['--trace', 'trace.jsonl', '--ephemeral', 'go'], env: env() });
  expect(second.code).toBe(2);
  expect(second.stderr).toContain('--trace trace.jsonl: cannot write the trace file (it is a symbolic link');
  expect(readFileSync(target, 'utf8')).toBe('# bashrc\n');
});
