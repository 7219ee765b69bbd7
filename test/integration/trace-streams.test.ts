// --trace to a stream the shell gives conch (/dev/stderr, /dev/fd/N, a process substitution): the
// system's own links under /dev and /proc are followed, and what they lead to is appended to, not
// truncated. A link anywhere else stays refused (trace-secrets.test.ts). Real CLI, local model server.
import { expect, test } from 'bun:test';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { CONCH, anthropicEnv, conchEnv, useHarness } from '../support/cli.ts';

const harness = useHarness();

/** conch run by sh, so the test can hand it descriptors the way a user's shell does. */
const viaShell = (script: string) => viaShellOf('sh', script);

async function viaShellOf(shell: string, script: string) {
  const child = Bun.spawn([shell, '-c', script], {
    cwd: harness.dirs.workspace,
    env: { ...conchEnv(harness.dirs, anthropicEnv(harness.server.anthropicBaseUrl)), CONCH },
    stdin: 'ignore',
    stdout: 'pipe',
    stderr: 'pipe',
  });
  const [stdout, stderr, code] = await Promise.all([new Response(child.stdout).text(), new Response(child.stderr).text(), child.exited]);
  return { stdout, stderr, code };
}

const types = (jsonl: string) => jsonl.trim().split('\n').map((line) => JSON.parse(line).type);

test('--trace /dev/stderr: the events go to stderr as JSON lines, the answer to stdout', async () => {
  harness.server.script([{ text: 'the answer' }]);
  const r = await viaShell('"$CONCH" --model anthropic/test-model --ephemeral --trace /dev/stderr go');
  expect(r.code).toBe(0);
  expect(r.stdout).toBe('the answer\n');
  expect(types(r.stderr)).toContain('run.started');
  expect(types(r.stderr).at(-1)).toBe('run.finished');
});

test('--trace /dev/fd/3 with 3>>FILE appends to FILE (what was there stays)', async () => {
  harness.server.script([{ text: 'the answer' }]);
  const file = join(harness.dirs.home, 'events.jsonl');
  writeFileSync(file, '{"type":"earlier"}\n');
  const r = await viaShell(`"$CONCH" --model anthropic/test-model --ephemeral --trace /dev/fd/3 go 3>>'${file}'`);
  expect(r.code).toBe(0);
  const events = types(readFileSync(file, 'utf8'));
  expect(events[0]).toBe('earlier');
  expect(events).toContain('run.started');
  expect(events.at(-1)).toBe('run.finished');
});

test('--trace >(…): a process substitution gets the events through its pipe', async () => {
  harness.server.script([{ text: 'the answer' }]);
  const file = join(harness.dirs.home, 'events.jsonl');
  const r = await viaShellOf('bash', `"$CONCH" --model anthropic/test-model --ephemeral --trace >(cat > '${file}') go; wait $!`);
  expect(r.code).toBe(0);
  expect(r.stdout).toBe('the answer\n');
  expect(types(readFileSync(file, 'utf8')).at(-1)).toBe('run.finished');
});

test('--trace /dev/stdout with --json is a setup error: stdout holds the one document', async () => {
  const r = await viaShell('"$CONCH" --model anthropic/test-model --ephemeral --json --trace /dev/stdout go');
  expect(r.code).toBe(2);
  const doc = JSON.parse(r.stdout);
  expect(doc.code).toBe('config_invalid');
  expect(doc.message).toContain('--trace /dev/stdout with --json');
  expect(harness.server.requests).toHaveLength(0);
});

test("--trace - is a setup error pointing to /dev/stderr, not a file named '-' left in the workspace", async () => {
  const r = await viaShell('"$CONCH" --model anthropic/test-model --ephemeral --trace - go');
  expect(r.code).toBe(2);
  expect(r.stderr).toContain('--trace -');
  expect(r.stderr).toContain('/dev/stderr');
  expect(existsSync(join(harness.dirs.workspace, '-'))).toBe(false);
  expect(harness.server.requests).toHaveLength(0);
});
