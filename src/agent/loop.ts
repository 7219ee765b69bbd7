// The agent loop: one conversation, one provider, tools run sequentially in the order the model gave.
// Everything arrives as arguments so the CLI, the embedding API and ACP share this one loop.
import type { Message, ModelResponse, Provider, ToolCall, ToolResultMessage } from '../providers/types.ts';
import type { ContentBlock } from '../core/content.ts';
import { ProviderError } from '../providers/types.ts';
import type { Catalog } from '../tools/catalog.ts';
import type { EventBody, EventSink, SessionFacts } from './events.ts';
import type { Limits } from '../core/limits.ts';
import { addUsage, emptyUsage, SignalStop, type FailureCode, type Outcome, type OutcomeStatus, type OutputIssue } from './outcome.ts';
import { dispatchCall, type ContextFactory } from './dispatch.ts';
import { resultText } from '../tools/truncate.ts';
import { fitContext } from './context.ts';
import { startTimer } from '../core/duration.ts';
import { CostMeter } from './budget.ts';
import { betweenTurns } from './idle-gc.ts';
import type { OutputContract, OutputSchema } from './output.ts';

/** Where a host keeps the conversation as it grows (the session store); each call gets one whole message. */
/** How the note before the partial result of a call the run's stop cut short begins (sessions show sets it apart). */
export const INTERRUPTED_OPENING = 'interrupted while running: ';

export interface Journal {
  message(message: Exclude<Message, { role: 'tool' }>): void;
  result(result: ToolResultMessage): void;
}

export interface RunSpec {
  runId: string;
  /** The user's task (text, optionally with images). */
  task: ContentBlock[];
  /** The conversation so far; the loop appends this run's messages to it in place (ACP sessions). */
  conversation: Message[];
  /** Told every message this run adds to the conversation, as it is added. */
  journal?: Journal;
  system: string;
  catalog: Catalog;
  limits: Limits;
  makeContext: ContextFactory;
  /** A policy denial ends the run as policy_denied. */
  stopOnDeny: boolean;
  /** The provider's prompt-cache key; stable per session so that runs that continue it share a cache (default: runId). */
  cacheKey?: string;
  /**
   * The final answer must be one JSON value this JSON Schema accepts (output.ts): the schema goes
   * with the task, a wrong answer gets one repair turn, then the run fails as output_invalid.
   */
  outputSchema?: OutputSchema;
  /** Facts for run.started. */
  header: { mode: 'restricted' | 'unrestricted'; sandbox: string; session?: SessionFacts };
}

const encoder = new TextEncoder();

/** How many times one call that cannot run (the same tool name and arguments) may come before the run ends as model_stuck. */
export const STUCK_REPEATS = 5;

class Stop extends Error {
  constructor(readonly status: OutcomeStatus, message: string, readonly extra: Partial<Outcome> = {}) {
    super(message);
  }
}

export async function runTask(spec: RunSpec, provider: Provider, sink: EventSink, signal: AbortSignal): Promise<Outcome> {
  const started = performance.now();
  let seq = 0;
  const emit = (body: EventBody) => sink.emit({ ...body, runId: spec.runId, seq: seq++, time: new Date().toISOString() } as never);
  const { limits } = spec;

  // One signal for everything below: user cancellation or the run deadline.
  const controller = new AbortController();
  // Aborted when the run ends however it ends, so tools can stop work that outlived its call.
  const runEnd = new AbortController();
  let timedOut = false;
  const onCancel = () => controller.abort(signal.reason);
  if (signal.aborted) onCancel();
  else signal.addEventListener('abort', onCancel, { once: true });
  const deadline = startTimer(limits.deadline_ms, () => {
    timedOut = true;
    controller.abort(new Error('run deadline'));
  });

  let usage = emptyUsage();
  const counts = { modelCalls: 0, toolCalls: 0, toolErrors: 0 };
  let output = '';
  let stopReason: string | null = null;
  let outputBytes = 0;
  const thinking = { chars: 0, tokens: null as number | null };
  const meter = new CostMeter();
  const answeredBy: string[] = [];
  // Calls that could not run (an unknown tool, arguments its schema refuses), by name and arguments,
  // since the last call that ran: a model that runs something in between is not stuck.
  const refusedCalls = new Map<string, number>();

  const { journal } = spec;
  emit({
    type: 'run.started',
    ...(spec.header.session ? { session: spec.header.session } : {}),
    provider: provider.name,
    model: provider.model,
    mode: spec.header.mode,
    sandbox: spec.header.sandbox,
    tools: spec.catalog.names(),
  });
  let contract: OutputContract | null = null;
  let outputErrors: OutputIssue[] | undefined;
  let repaired = false;

  const finish = (status: OutcomeStatus, message?: string, extra: Partial<Outcome> = {}): Outcome => {
    const outcome: Outcome = {
      status,
      output,
      stopReason,
      usage,
      counts: { ...counts },
      durationMs: Math.round(performance.now() - started),
      thinking: { ...thinking },
      cost: meter.total(),
      promptTokens: meter.promptTokens(),
      answeredBy: [...answeredBy],
      ...(message ? { message } : {}),
      ...(outputErrors && status !== 'completed' ? { outputErrors } : {}),
      ...extra,
    };
    emit({ type: 'run.finished', outcome });
    return outcome;
  };
  const interrupted = () =>
    timedOut
      ? new Stop('timed_out', `the run deadline of ${limits.deadline_ms} ms passed (limit deadline_ms; flag --timeout)`)
      : signal.reason instanceof SignalStop
        ? new Stop('cancelled', signal.reason.message, { signal: signal.reason.signal })
        : new Stop('cancelled', 'cancelled by the user');

  try {
    if (spec.outputSchema !== undefined) {
      const { outputContract } = await import('./output.ts');
      const made = outputContract(spec.outputSchema);
      if ('problems' in made) throw new Stop('failed', `the output schema is not usable: ${made.problems.join('; ')}`, { code: 'config_invalid' });
      contract = made;
    }
    const task = contract ? contract.task(spec.task) : spec.task;
    spec.conversation.push({ role: 'user', content: task });
    journal?.message({ role: 'user', content: task });

    for (let turn = 1; ; turn++) {
      if (controller.signal.aborted) throw interrupted();
      if (limits.model_calls > 0 && counts.modelCalls >= limits.model_calls) {
        throw new Stop('limit_exceeded', `the model-call limit of ${limits.model_calls} was reached (limit model_calls; flag --max-turns)`, { limit: 'model_calls' });
      }
      // Sorted, so the cached prefix (tools, then system) is byte-identical on every turn and every run.
      const tools = spec.catalog.specs().sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
      const request = {
        system: spec.system,
        messages: spec.conversation,
        tools,
        cacheKey: spec.cacheKey ?? spec.runId,
        ...(contract?.providerSchema ? { outputSchema: contract.providerSchema } : {}),
      };
      const { bytes: contextBytes, elided } = fitContext(request, limits.context_bytes);
      if (elided) emit({ type: 'context.elided', results: elided.results, bytes: elided.bytes });
      if (contextBytes > limits.context_bytes) {
        throw new Stop('limit_exceeded', `the request context grew to ${contextBytes} bytes, over the limit of ${limits.context_bytes} (limit context_bytes)`, { limit: 'context_bytes' });
      }

      if (limits.cost_usd > 0) {
        const refusal = meter.refuse(limits.cost_usd, provider, contextBytes);
        if (refusal) throw new Stop('limit_exceeded', refusal, { limit: 'cost_usd' });
      }

      emit({ type: 'model.started', turn });
      counts.modelCalls++;
      const streamAbort = new AbortController();
      const onAbort = () => streamAbort.abort(controller.signal.reason);
      controller.signal.addEventListener('abort', onAbort, { once: true });
      let overflow = false;
      const countOutput = (text: string) => {
        outputBytes += encoder.encode(text).length;
        if (outputBytes > limits.model_output_bytes && !overflow) {
          overflow = true;
          streamAbort.abort(new Error('model output limit'));
        }
      };
      let response: ModelResponse;
      let turnText = '';
      try {
        response = await provider.stream(
          request,
          {
            onText: (delta) => {
              if (overflow) return;
              countOutput(delta);
              if (overflow) return;
              turnText += delta;
              emit({ type: 'text.delta', text: delta });
            },
            onThinking: (delta) => {
              thinking.chars += delta.length;
              emit({ type: 'thinking.delta', text: delta });
            },
            onToolArgumentDelta: (_index, delta) => countOutput(delta),
            onRetry: (info) => emit({ type: 'model.retry', turn, ...info }),
            onWarning: (text) => emit({ type: 'model.warning', turn, text }),
            onFallback: (info) => emit({ type: 'model.fallback', turn, ...info }),
          },
          streamAbort.signal,
        );
      } catch (error) {
        meter.unreported();
        output = turnText || output;
        if (overflow) {
          throw new Stop('limit_exceeded', `the model produced more than ${limits.model_output_bytes} bytes of output (limit model_output_bytes)`, { limit: 'model_output_bytes' });
        }
        if (controller.signal.aborted) throw interrupted();
        if (error instanceof ProviderError) throw new Stop('failed', error.message, { code: error.code as FailureCode });
        throw error;
      } finally {
        controller.signal.removeEventListener('abort', onAbort);
      }

      usage = counts.modelCalls === 1 ? response.usage : addUsage(usage, response.usage);
      meter.add(provider, response);
      stopReason = response.stopReason;
      output = response.text;
      if (response.thinkingTokens !== null) thinking.tokens = (thinking.tokens ?? 0) + response.thinkingTokens;
      // Signed thinking must go back with the tool results it led to (Anthropic checks).
      const answer: Extract<Message, { role: 'assistant' }> = {
        role: 'assistant',
        text: response.text,
        toolCalls: response.toolCalls,
        ...(response.thinking.length > 0 ? { thinking: response.thinking } : {}),
      };
      spec.conversation.push(answer);
      journal?.message(answer);
      answeredBy.push(`${provider.name}/${provider.model}`);
      emit({ type: 'model.finished', turn, stopReason: response.stopReason, usage: response.usage, model: answeredBy[answeredBy.length - 1]! });

      if (response.toolCalls.length === 0) {
        if (response.stopReason === 'max_tokens') {
          emit({ type: 'model.warning', turn, text: "the answer was cut off at the model's output-token limit (raise it with --max-output-tokens)" });
        }
        if (!contract) return finish('completed');
        const checked = contract.check(response.text);
        if (checked.ok) return finish('completed', undefined, { outputValue: checked.value });
        outputErrors = checked.issues;
        if (repaired) {
          throw new Stop('failed', contract.failure(checked.issues), { code: 'output_invalid' });
        }
        // One repair turn, as a user message of this conversation: tools stay available, limits apply.
        repaired = true;
        emit({ type: 'output.repair', turn, errors: checked.issues });
        const repair = { role: 'user' as const, content: [{ type: 'text' as const, text: contract.repair(checked.issues) }] };
        spec.conversation.push(repair);
        journal?.message(repair);
        continue;
      }
      // Never start a tool whose result no model call is left to read.
      if (limits.model_calls > 0 && counts.modelCalls >= limits.model_calls) {
        throw new Stop('limit_exceeded', `the model-call limit of ${limits.model_calls} was reached with ${response.toolCalls.length} tool ${response.toolCalls.length === 1 ? 'call' : 'calls'} pending (limit model_calls; flag --max-turns)`, { limit: 'model_calls' });
      }
      const results: ToolResultMessage[] = [];
      spec.conversation.push({ role: 'tool', results });
      // At the output-token limit the last call stops mid-arguments: say so, so the model retries smaller.
      const cutOff = response.stopReason === 'max_tokens';
      for (const call of response.toolCalls) {
        if (controller.signal.aborted) throw interrupted();
        const result = await runCall(call, cutOff);
        results.push(result);
        journal?.result(result);
        // Stopped while the call ran: its result (the partial work) is kept, marked as interrupted.
        if (controller.signal.aborted) throw interrupted();
        // A refused call settles in microtasks only: let the deadline's timer and signals run before
        // the next one, or a turn of calls whose checks are slow (a schema pattern that backtracks)
        // runs them all, however long, past the deadline.
        if (result.isError && !controller.signal.aborted) await new Promise((resolve) => setTimeout(resolve, 0));
      }
      betweenTurns.turnEnded();
    }
  } catch (error) {
    for (const result of sealConversation(spec.conversation, error instanceof Error ? error.message : String(error))) journal?.result(result);
    if (error instanceof Stop) return finish(error.status, error.message, error.extra);
    return finish('failed', `internal error: ${error instanceof Error ? error.message : String(error)}`, { code: 'internal' });
  } finally {
    deadline.clear();
    signal.removeEventListener('abort', onCancel);
    runEnd.abort(new Error('run ended'));
  }

  async function runCall(call: ToolCall, cutOff: boolean): Promise<ToolResultMessage> {
    if (limits.tool_calls > 0 && counts.toolCalls >= limits.tool_calls) {
      throw new Stop('limit_exceeded', `the tool-call limit of ${limits.tool_calls} was reached (limit tool_calls; flag --max-tool-calls)`, { limit: 'tool_calls' });
    }
    const argBytes = encoder.encode(call.arguments).length;
    if (argBytes > limits.tool_argument_bytes) {
      throw new Stop('limit_exceeded', `a '${call.name}' call carried ${argBytes} bytes of arguments, over the limit of ${limits.tool_argument_bytes} (limit tool_argument_bytes)`, { limit: 'tool_argument_bytes' });
    }
    counts.toolCalls++;
    const startedAt = performance.now();
    const validation = cutOff && !parses(call.arguments) ? { ok: false as const, message: cutOffMessage(call.name) } : spec.catalog.validate(call.name, call.arguments);
    const tool = spec.catalog.get(call.name);
    emit({ type: 'tool.started', callId: call.id, name: call.name, args: validation.ok ? validation.args : call.arguments });
    let outcome;
    let stuck: string | null = null;
    if (!validation.ok || !tool) {
      const reason = validation.ok ? `unknown tool '${call.name}'` : validation.message;
      // The catalog does not change during a run: the same call fails the same way every time.
      const key = `${call.name}\0${call.arguments}`;
      const times = (refusedCalls.get(key) ?? 0) + 1;
      refusedCalls.set(key, times);
      if (times >= STUCK_REPEATS) stuck = `the model made the same call that cannot run ${times} times (${reason.split('\n')[0]}); it is not getting anywhere (a model too small for tool use?)`;
      const text = times > 1 ? `${reason}\nThis exact call has now failed ${times} times with this error; making it again fails again: change the arguments or do something else.` : reason;
      outcome = { result: { content: [{ type: 'text' as const, text }], isError: true }, isError: true, truncated: false, abandoned: false };
    } else {
      refusedCalls.clear();
      outcome = await dispatchCall(tool, validation.args, call.id, wrapContext(call), limits, controller.signal, runEnd.signal);
    }
    if (outcome.isError) counts.toolErrors++;
    emit({
      type: 'tool.finished',
      callId: call.id,
      name: call.name,
      isError: outcome.isError,
      truncated: outcome.truncated,
      durationMs: Math.round(performance.now() - startedAt),
      output: resultText(outcome.result),
      ...(outcome.result.details ? { details: outcome.result.details } : {}),
      ...('policyRule' in outcome && outcome.policyRule ? { policyRule: outcome.policyRule } : {}),
    });
    const message: ToolResultMessage = { callId: call.id, name: call.name, content: outcome.result.content, isError: outcome.isError };
    if (stuck) throw new Stop('failed', stuck, { code: 'model_stuck' });
    if ('cleanupError' in outcome && outcome.cleanupError) {
      throw new Stop('failed', `'${call.name}' could not prove its processes were cleaned up: ${outcome.cleanupError}`, { code: 'tool_cleanup' });
    }
    if (controller.signal.aborted) {
      // It did run, in part: "not run" (what the calls after it get) would tell the model and the
      // transcript that nothing happened, and a continued run might do it twice.
      const note = { type: 'text' as const, text: `${INTERRUPTED_OPENING}${interrupted().message}; what it did until then stands:` };
      return { ...message, content: [note, ...message.content], isError: true };
    }
    if ('policyRule' in outcome && outcome.policyRule && spec.stopOnDeny) {
      throw new Stop('policy_denied', resultText(outcome.result), { rule: outcome.policyRule });
    }
    return message;
  }

  function wrapContext(call: ToolCall): ContextFactory {
    return (callId, toolSignal, runSignal) => {
      const ctx = spec.makeContext(callId, toolSignal, runSignal);
      return { ...ctx, update: (text: string) => { emit({ type: 'tool.updated', callId, name: call.name, text }); ctx.update(text); } };
    };
  }
}

function parses(json: string): boolean {
  try {
    JSON.parse(json);
    return true;
  } catch {
    return false;
  }
}

function cutOffMessage(name: string): string {
  return `the '${name}' call was cut off: your output reached the model's output-token limit (max_tokens) before its arguments were complete, so it was not run. Retry with a smaller call (for example, write a large file in several parts, or use edit for a change instead of rewriting the file).`;
}

/**
 * A run can stop between an assistant's tool calls and their results. Providers reject a history
 * with unanswered calls, so a conversation that continues (ACP) gets an error result for each.
 */
function sealConversation(conversation: Message[], reason: string): ToolResultMessage[] {
  const last = conversation[conversation.length - 1];
  const prev = conversation[conversation.length - 2];
  let results: ToolResultMessage[];
  let calls: ToolCall[];
  if (last?.role === 'tool' && prev?.role === 'assistant') {
    results = last.results;
    calls = prev.toolCalls;
  } else if (last?.role === 'assistant' && last.toolCalls.length > 0) {
    results = [];
    calls = last.toolCalls;
  } else return [];
  const added = calls.slice(results.length).map((call): ToolResultMessage => (
    { callId: call.id, name: call.name, content: [{ type: 'text', text: `not run: the run stopped (${reason})` }], isError: true }
  ));
  if (added.length === 0) return added;
  // A new tool message rather than more results in the old one: providers tell a changed message
  // by its identity (providers/converted-history.ts).
  const sealed: Message = { role: 'tool', results: [...results, ...added] };
  if (last.role === 'tool') conversation[conversation.length - 1] = sealed;
  else conversation.push(sealed);
  return added;
}
