// Run one validated tool call: deadline, cancellation, thrown errors → tool errors, bounded result.
import { type Tool, type ToolContext } from '../tools/define.ts';
import type { ToolResult } from '../core/content.ts';
import { PolicyError, thrownText } from '../core/errors.ts';
import { boundResult, normalizeResult } from '../tools/truncate.ts';
import type { Limits } from '../core/limits.ts';
import { startTimer } from '../core/duration.ts';

/** How long a tool gets to wind down after its signal fires before it is abandoned. */
export const ABANDON_GRACE_MS = 2_000;

export interface CallResult {
  result: ToolResult;
  truncated: boolean;
  isError: boolean;
  /** Set when a policy rule refused the action. */
  policyRule?: string;
  /** Set when the tool could not prove its processes were cleaned up. */
  cleanupError?: string;
  /** The tool ignored its signal past the grace period and was left behind. */
  abandoned: boolean;
}

/** `signal` ends with the call; `runSignal` ends with the run (state that outlives one call hangs off it). */
export type ContextFactory = (callId: string, signal: AbortSignal, runSignal: AbortSignal) => ToolContext;

export function toolDeadlineMs(tool: Tool, limits: Limits): number {
  if (tool.timeoutMs) return tool.timeoutMs;
  // Kernel tools bound themselves (bash has its own timeout up to the maximum); this is a backstop.
  if (tool.source === 'kernel') return limits.tool_timeout_max_ms + 30_000;
  return limits.tool_timeout_ms;
}

export async function dispatchCall(
  tool: Tool,
  args: Record<string, unknown>,
  callId: string,
  makeContext: ContextFactory,
  limits: Limits,
  runSignal: AbortSignal,
  runEnd: AbortSignal,
): Promise<CallResult> {
  const controller = new AbortController();
  const deadlineMs = toolDeadlineMs(tool, limits);
  let deadlineHit = false;
  const onRunAbort = () => controller.abort(runSignal.reason);
  if (runSignal.aborted) onRunAbort();
  else runSignal.addEventListener('abort', onRunAbort, { once: true });
  const deadline = startTimer(deadlineMs, () => {
    deadlineHit = true;
    controller.abort(new Error(`tool deadline of ${deadlineMs} ms passed`));
  });

  let graceTimer: ReturnType<typeof setTimeout> | undefined;
  const abandonment = new Promise<'abandoned'>((resolve) => {
    const arm = () => (graceTimer = setTimeout(() => resolve('abandoned'), ABANDON_GRACE_MS));
    if (controller.signal.aborted) arm();
    else controller.signal.addEventListener('abort', arm, { once: true });
  });

  try {
    const ctx = makeContext(callId, controller.signal, runEnd);
    const running = Promise.resolve().then(() => tool.execute(args as never, ctx));
    const settled = await Promise.race([running.then((value) => ({ value })), abandonment]);
    if (settled === 'abandoned') {
      running.catch(() => {}); // it may still reject later; nobody is listening
      const why = deadlineHit ? `did not finish within its ${deadlineMs} ms deadline` : 'did not stop after the run was cancelled';
      return errorResult(`tool '${tool.name}' ${why} and was abandoned; its work may be incomplete`, { abandoned: true });
    }
    if (deadlineHit && controller.signal.aborted) {
      // It finished, but only because the deadline aborted it; say so rather than pass partial work as done.
      const normal = normalizeResult(settled.value);
      normal.content.push({ type: 'text', text: `[tool '${tool.name}' was stopped at its ${deadlineMs} ms deadline]` });
      return finish({ ...normal, isError: true }, limits);
    }
    const result = normalizeResult(settled.value);
    const cleanupError = typeof result.details?.cleanupError === 'string' ? result.details.cleanupError : undefined;
    return { ...finish(result, limits), cleanupError };
  } catch (error) {
    if (error instanceof PolicyError) {
      return errorResult(`denied by policy rule '${error.rule}': ${error.message}`, { policyRule: error.rule });
    }
    return errorResult(`tool '${tool.name}' failed: ${thrownText(error)}`, {});
  } finally {
    deadline.clear();
    if (graceTimer) clearTimeout(graceTimer);
    runSignal.removeEventListener('abort', onRunAbort);
  }

  function errorResult(text: string, extra: Partial<CallResult>): CallResult {
    return { result: { content: [{ type: 'text', text }], isError: true }, truncated: false, isError: true, abandoned: false, ...extra };
  }
}

function finish(result: ToolResult, limits: Limits): CallResult {
  const bounded = boundResult(result, limits.tool_result_bytes);
  return { result: bounded.result, truncated: bounded.truncated, isError: result.isError === true, abandoned: false };
}
