// An embedder with its own OpenTelemetry setup passes its tracer to startRun: conch's spans go
// into the embedder's trace, under the span active when run() is called, exported by its exporter.
// Run as a user's project runs it: its own package depending on conch by path, a separate process.
import { afterAll, beforeAll, expect, test } from 'bun:test';
import { mkdir, mkdtemp, realpath, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BUN, REPO } from '../support/cli.ts';
import { startModelServer, type ModelServer } from '../support/model-server.ts';

let server: ModelServer;
let base: string;
beforeAll(async () => {
  server = await startModelServer();
  base = await realpath(await mkdtemp(join(tmpdir(), 'conch-otel-embed-')));
});
afterAll(async () => {
  await server.close();
  await rm(base, { recursive: true, force: true });
});

const APP = `
import { startRun } from 'conch';
import { context, trace } from '@opentelemetry/api';
import { InMemorySpanExporter, SimpleSpanProcessor, StackContextManager, TracerProvider } from '@opentelemetry/sdk-trace';

context.setGlobalContextManager(new StackContextManager().enable());
const exporter = new InMemorySpanExporter();
const provider = new TracerProvider({ spanProcessors: [new SimpleSpanProcessor({ exporter })] });
const tracer = provider.getTracer('my-app');

const host = await startRun({ baseUrl: process.env.MODEL_URL, model: 'test-model' }, process.cwd(), { session: { ephemeral: true }, tracer });
const request = tracer.startSpan('my-app request');
const outcome = await context.with(trace.setSpan(context.active(), request), () => host.run('count the files EMBEDTASK'));
request.end();
await host.dispose();
await provider.forceFlush();
console.log(JSON.stringify({
  status: outcome.status,
  spans: exporter.getFinishedSpans().map((s) => ({ name: s.name, id: s.spanContext().spanId, trace: s.spanContext().traceId, parent: s.parentSpanContext?.spanId ?? null, outcome: s.attributes['conch.outcome'] ?? null })),
}));
`;

test("an embedder's tracer gets conch's spans, under its own active span", async () => {
  const project = join(base, 'my-app');
  const home = join(base, 'home');
  await mkdir(join(project, 'node_modules'), { recursive: true });
  await mkdir(join(home, '.config', 'conch'), { recursive: true });
  await writeFile(join(project, 'package.json'), JSON.stringify({ name: 'my-app', type: 'module', dependencies: { conch: `file:${REPO}` } }));
  await symlink(REPO, join(project, 'node_modules', 'conch'));
  // The app's own OpenTelemetry packages: the ones conch depends on, as npm would dedupe them.
  await symlink(join(REPO, 'node_modules', '@opentelemetry'), join(project, 'node_modules', '@opentelemetry'));
  await writeFile(join(project, 'app.ts'), APP);
  server.script([{ toolCalls: [{ name: 'read', arguments: { path: 'package.json' } }] }, { text: 'one file' }]);

  const child = Bun.spawn([BUN, 'app.ts'], {
    cwd: project,
    // No OTEL_* variable: the tracer passed in is the whole setup.
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: home, TMPDIR: process.env.TMPDIR ?? tmpdir(), MODEL_URL: server.openaiBaseUrl },
    stdout: 'pipe',
    stderr: 'pipe',
  });
  const [stdout, stderr, code] = await Promise.all([new Response(child.stdout).text(), new Response(child.stderr).text(), child.exited]);
  expect({ code, stderr }).toEqual({ code: 0, stderr: '' });
  const { status, spans } = JSON.parse(stdout);
  expect(status).toBe('completed');
  const byName = (name: string) => spans.filter((s: any) => s.name === name);
  const [request] = byName('my-app request');
  const [root] = byName('invoke_agent conch');
  expect(root).toMatchObject({ parent: request.id, trace: request.trace, outcome: 'completed' });
  expect(byName('chat test-model')).toHaveLength(2);
  for (const s of [...byName('chat test-model'), ...byName('execute_tool read')]) expect(s).toMatchObject({ parent: root.id, trace: request.trace });
  expect(spans).toHaveLength(5);
});
