// How much a run's sandbox disturbs the workspace: file watchers (dev servers, editors) and a
// concurrent `git add -A` see every placeholder created and removed. A run of several shell commands
// makes each placeholder once and removes it once, at its end; counted with inotify on the host.
import { describe, expect, test } from 'bun:test';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { anthropicEnv, runConch, useHarness } from '../support/cli.ts';
import { canRun, snapshot } from './harness.ts';

const harness = useHarness(async (d) => {
  mkdirSync(join(d.workspace, '.git'));
  writeFileSync(join(d.workspace, '.git', 'HEAD'), 'ref: refs/heads/main\n');
  writeFileSync(join(d.workspace, 'main.txt'), 'hello\n');
});

const COMMANDS = 6;

/** inotifywait on the workspace; resolves to its event lines once stopped. */
async function watch(dir: string) {
  const child = Bun.spawn(['inotifywait', '-m', '-q', '-e', 'create,delete', '--format', '%e %f', dir], {
    stdout: 'pipe',
    stderr: 'pipe',
  });
  // -q drops "Watches established": probe with a file of our own until its event shows up.
  const lines: string[] = [];
  const reader = child.stdout.getReader();
  let buffered = '';
  const reading = (async () => {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      buffered += new TextDecoder().decode(value);
      const parts = buffered.split('\n');
      buffered = parts.pop()!;
      lines.push(...parts);
    }
  })();
  const seen = () => lines.some((line) => line.startsWith('CREATE probe-'));
  for (let i = 0; i < 200 && !seen(); i++) {
    writeFileSync(join(dir, `probe-${i}`), '');
    rmSync(join(dir, `probe-${i}`));
    await Bun.sleep(25);
  }
  return {
    ready: seen(),
    async stop(): Promise<string[]> {
      await Bun.sleep(200); // events already queued reach us
      child.kill();
      await child.exited;
      await reading;
      return lines.filter((line) => !line.includes(' probe-'));
    },
  };
}

describe.skipIf(!canRun || !Bun.which('inotifywait'))('placeholder churn', () => {
  test(`a run of ${COMMANDS} shell commands creates and removes each placeholder once`, async () => {
    const ws = harness.dirs.workspace;
    harness.server.script([
      ...Array.from({ length: COMMANDS }, (_, i) => ({ toolCalls: [{ name: 'bash', arguments: { command: `echo call ${i}` } }] })),
      { text: 'done' },
    ]);
    const watcher = await watch(ws);
    expect(watcher.ready).toBe(true);
    const before = snapshot(ws);
    const r = await runConch({
      dirs: harness.dirs,
      args: ['--model', 'anthropic/test-model', '--json', 'go'],
      env: anthropicEnv(harness.server.anthropicBaseUrl),
    });
    const events = await watcher.stop();
    expect(r.code).toBe(0);
    const results = JSON.stringify(harness.server.requests.at(-1)!.body);
    for (let i = 0; i < COMMANDS; i++) expect(results).toContain(`call ${i}`);

    const count = (kind: string) => {
      const out = new Map<string, number>();
      for (const line of events) {
        const [event, name] = line.split(' ');
        if (event!.startsWith(kind)) out.set(name!, (out.get(name!) ?? 0) + 1);
      }
      return out;
    };
    const created = count('CREATE');
    const deleted = count('DELETE');
    // .conch and the common .env.* names are absent here, so there are placeholders to count.
    expect(created.has('.conch')).toBe(true);
    expect(created.has('.env.local')).toBe(true);
    for (const [name, times] of created) expect({ name, times }).toEqual({ name, times: 1 });
    expect([...deleted].sort()).toEqual([...created].sort());
    expect(snapshot(ws)).toBe(before);
  }, 30_000);
});
