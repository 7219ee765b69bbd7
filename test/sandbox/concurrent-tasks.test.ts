// Several runs in ONE conch process (`conch run A B`): each run holds the placeholders of absent
// protected names from its first command to its end, so the run that ends first never unprotects a
// name the other still binds; each has its own /tmp; nothing is left in the workspace afterwards.
// Real CLI, real SDK against the local model server, real bwrap, the workspace checked after.
import { describe, expect, test } from 'bun:test';
import { readdirSync } from 'node:fs';
import type { RecordedRequest, ScriptedTurn } from '../support/model-server.ts';
import { anthropicEnv, runConch, useHarness } from '../support/cli.ts';
import { canRun } from './harness.ts';

const harness = useHarness();
const NAMES = ['.env.local', '.env.development', '.env.production'];

function taskOf(req: RecordedRequest): string {
  const first = req.body?.messages?.[0]?.content;
  return typeof first === 'string' ? first : (first ?? []).map((b: any) => b.text ?? '').join('');
}
const toolResults = (req: RecordedRequest) => (JSON.stringify(req.body?.messages ?? []).match(/tool_result/g) ?? []).length;

/** Keeps trying to create each protected name for about three seconds; then lists its /tmp. */
const ATTACK =
  `i=0; while [ $i -lt 60 ]; do ${NAMES.map((n) => `(echo X=1 > ${n}) 2>/dev/null && echo "CREATED ${n}";`).join(' ')} ` +
  'i=$((i+1)); sleep 0.05; done; echo "TMP:$(ls -A /tmp)"; echo DONE';

describe.skipIf(!canRun)('two tasks of one conch run in one workspace', () => {
  test('the long task stays protected after the short one ends, sees only its own /tmp, and nothing is left', async () => {
    const order: string[] = [];
    harness.server.script((req): ScriptedTurn => {
      const task = taskOf(req).includes('short') ? 'short' : 'long';
      const step = toolResults(req);
      order.push(`${task}#${step}`);
      if (task === 'short') {
        // Its first command makes the placeholders (or counts the long task's); then it ends.
        if (step === 0) return { toolCalls: [{ name: 'bash', arguments: { command: 'echo mine > /tmp/short-was-here' } }] };
        return { text: 'short done' };
      }
      if (step === 0) return { toolCalls: [{ name: 'bash', arguments: { command: ATTACK } }] };
      return { text: 'long done' };
    });
    const before = readdirSync(harness.dirs.workspace);
    const r = await runConch({
      dirs: harness.dirs,
      args: ['--model', 'anthropic/test-model', '--json', 'run', 'the long task', 'the short task'],
      env: anthropicEnv(harness.server.anthropicBaseUrl),
    });
    expect({ code: r.code, stderr: r.stderr }).toEqual({ code: 0, stderr: '' });
    // The short task had its answer while the long task's command still ran.
    expect(order.indexOf('short#1')).toBeLessThan(order.indexOf('long#1'));
    const attack = harness.server.requests.find((req) => taskOf(req).includes('long') && toolResults(req) === 1)!;
    const result = JSON.stringify(attack.body.messages.at(-1).content);
    expect(result).toContain('DONE');
    expect(result).not.toContain('CREATED');
    expect(result).toContain('TMP:'); // its own /tmp, without the short task's file
    expect(result).not.toContain('short-was-here');
    expect(JSON.parse(r.stdout).tasks.map((t: any) => t.status)).toEqual(['completed', 'completed']);
    // The placeholders went with the last run that used them.
    expect(readdirSync(harness.dirs.workspace)).toEqual(before);
  }, 30_000);
});
