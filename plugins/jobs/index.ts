// First-party plugin: background commands. Each job is one ctx.exec call that is not awaited by the
// tool call that started it, so it runs under the same policy and sandbox as bash. Its own abort
// signal (ExecOptions.signal) lets it outlive that call; the run's end (ctx.runSignal) stops it.
import { defineTool, errorResult, textResult, Type, type ExecResult, type ToolContext, type ToolResult } from 'conch';
import { OutputBuffer } from './buffer.ts';

const MAX_RUNNING = 8;
const KEEP_CHARS = 1024 * 1024;
const DEFAULT_PAGE = 16 * 1024;
const DEFAULT_TIMEOUT_S = 15 * 60;
const STOP_WAIT_MS = 10_000;

interface Job {
  id: string;
  command: string;
  startedAt: number;
  output: OutputBuffer;
  controller: AbortController;
  /** Where the next job_check without an offset starts. */
  cursor: number;
  result?: ExecResult;
  error?: string;
  stopRequested: boolean;
  done: Promise<void>;
}

interface RunJobs {
  next: number;
  jobs: Map<string, Job>;
}

// Jobs belong to the run whose signal started them: ids are per run, and one run's end never stops
// another's jobs (an editor may hold several sessions in one process).
const runs = new WeakMap<object, RunJobs>();
const live = new Set<Job>();
let exitHookInstalled = false;

function jobsOf(ctx: ToolContext): RunJobs {
  let entry = runs.get(ctx.runSignal);
  if (!entry) {
    const created: RunJobs = { next: 1, jobs: new Map() };
    entry = created;
    runs.set(ctx.runSignal, created);
    ctx.runSignal.addEventListener('abort', () => {
      for (const job of created.jobs.values()) stop(job);
    }, { once: true });
  }
  if (!exitHookInstalled) {
    // Last resort for hosts that never end the run signal: no job survives conch itself.
    process.once('exit', () => {
      for (const job of live) job.controller.abort();
    });
    exitHookInstalled = true;
  }
  return entry;
}

function stop(job: Job): void {
  job.stopRequested = true;
  job.controller.abort();
}

function running(job: Job): boolean {
  return job.result === undefined && job.error === undefined;
}

function describeState(job: Job): string {
  const seconds = ((performance.now() - job.startedAt) / 1000).toFixed(1);
  if (job.error !== undefined) return `failed to run: ${job.error}`;
  const r = job.result;
  if (!r) return `running (${seconds} s)`;
  if (r.denied) return `refused by policy (${r.denied.rule}): ${r.denied.message}`;
  if (r.cancelled) return job.stopRequested ? 'stopped' : 'cancelled';
  if (r.timedOut) return 'timed out';
  if (r.exitCode !== null) return `exited with code ${r.exitCode}`;
  return `killed by ${r.signal ?? 'a signal'}`;
}

function text(body: string, isError = false): ToolResult {
  return isError ? errorResult(body) : textResult(body);
}

function find(ctx: ToolContext, id: string): Job | ToolResult {
  const { jobs } = jobsOf(ctx);
  const job = jobs.get(id);
  if (job) return job;
  const known = [...jobs.keys()];
  return text(
    `no job '${id}' in this run (jobs end with the run that started them; in an editor, with that prompt); known jobs: ${known.length ? known.join(', ') : '(none)'}`,
    true,
  );
}

function page(job: Job, offset: number, limit: number): string {
  const { text: out, from, next, skipped } = job.output.read(offset, limit);
  job.cursor = next;
  const more = next < job.output.total;
  const lines = [
    `job ${job.id}: ${describeState(job)}`,
    `output chars ${from}-${next} of ${job.output.total}${more ? `; next_offset: ${next}` : ''}${skipped ? ` (${skipped} older chars no longer kept)` : ''}`,
  ];
  return out ? `${lines.join('\n')}\n${out}` : lines.join('\n');
}

/** Wait until the job finishes, writes past `offset`, the deadline passes or the call is cancelled. */
async function waitFor(job: Job, offset: number, ms: number, signal: AbortSignal): Promise<void> {
  const deadline = performance.now() + ms;
  while (running(job) && job.output.total <= offset && !signal.aborted) {
    const left = deadline - performance.now();
    if (left <= 0) return;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const onAbort = () => job.output.wake();
    signal.addEventListener('abort', onAbort, { once: true });
    await Promise.race([job.output.changed(), job.done, new Promise((r) => (timer = setTimeout(r, left)))]);
    clearTimeout(timer);
    signal.removeEventListener('abort', onAbort);
  }
}

const jobStart = defineTool({
  name: 'job_start',
  description:
    'Start a shell command in the background (a dev server, a watcher, a long build) and return its id at once. ' +
    'Read its output with job_check, stop it with job_stop. Every job is stopped when the run ends ' +
    '(the task on the command line; in an editor, the current prompt): finish with it before your final answer.',
  parameters: Type.Object({
    command: Type.String({ minLength: 1, description: 'Shell command, run with /bin/sh -c in the workspace' }),
    timeout_seconds: Type.Optional(Type.Integer({ minimum: 1, maximum: 86_400, description: `Stop the job after this many seconds (default ${DEFAULT_TIMEOUT_S}; the run's maximum command timeout caps it)` })),
  }),
  async execute({ command, timeout_seconds = DEFAULT_TIMEOUT_S }, ctx) {
    const run = jobsOf(ctx);
    const active = [...run.jobs.values()].filter(running);
    if (active.length >= MAX_RUNNING) {
      return text(`${active.length} jobs are already running (${active.map((j) => j.id).join(', ')}); stop one with job_stop first`, true);
    }
    const id = `j${run.next++}`;
    const job: Job = {
      id,
      command,
      startedAt: performance.now(),
      output: new OutputBuffer(KEEP_CHARS),
      controller: new AbortController(),
      cursor: 0,
      stopRequested: false,
      done: Promise.resolve(),
    };
    job.done = ctx
      .exec(command, { signal: job.controller.signal, timeoutMs: timeout_seconds * 1000, onOutput: (chunk) => job.output.append(chunk) })
      .then(
        (result) => {
          job.result = result;
        },
        (error: unknown) => {
          job.error = error instanceof Error ? error.message : String(error);
        },
      )
      .finally(() => {
        live.delete(job);
        job.output.wake();
      });
    run.jobs.set(id, job);
    live.add(job);
    // A moment to catch what fails at once (typo, refused by policy) in this same answer.
    await waitFor(job, Number.MAX_SAFE_INTEGER, 150, ctx.signal);
    return text(`started job ${id}: ${command}\n${page(job, 0, 2000)}`, job.result?.denied !== undefined || job.error !== undefined);
  },
});

const jobCheck = defineTool({
  name: 'job_check',
  description:
    'Show a background job\'s state and output from offset (default: where the previous job_check stopped). ' +
    'wait_seconds waits for new output or the job\'s end before answering.',
  parameters: Type.Object({
    id: Type.String({ description: 'Job id from job_start' }),
    offset: Type.Optional(Type.Integer({ minimum: 0, description: 'Character offset into the output' })),
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 256 * 1024, description: `Characters to return (default ${DEFAULT_PAGE})` })),
    wait_seconds: Type.Optional(Type.Number({ minimum: 0, maximum: 120 })),
  }),
  async execute({ id, offset, limit = DEFAULT_PAGE, wait_seconds = 0 }, ctx) {
    const job = find(ctx, id);
    if (!('output' in job)) return job;
    const from = offset ?? job.cursor;
    if (wait_seconds > 0) await waitFor(job, from, wait_seconds * 1000, ctx.signal);
    return text(page(job, from, limit));
  },
});

const jobStop = defineTool({
  name: 'job_stop',
  description: 'Stop a background job (its whole process group) and show the end of its output.',
  parameters: Type.Object({ id: Type.String({ description: 'Job id from job_start' }) }),
  async execute({ id }, ctx) {
    const job = find(ctx, id);
    if (!('output' in job)) return job;
    if (running(job)) {
      stop(job);
      let timer: ReturnType<typeof setTimeout> | undefined;
      await Promise.race([job.done, new Promise((r) => (timer = setTimeout(r, STOP_WAIT_MS)))]);
      clearTimeout(timer);
      if (running(job)) return text(`job ${id}: asked to stop, but it had not exited after ${STOP_WAIT_MS / 1000} s`, true);
    }
    const tail = Math.max(0, job.output.total - 2000);
    return text(page(job, tail, 2000));
  },
});

export default [jobStart, jobCheck, jobStop];
