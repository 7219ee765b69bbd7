// One run's events as OpenTelemetry spans: a root span for the run, a child for each model call and
// each tool call. Only names, ids, counts, durations, token usage, outcomes and policy decisions
// become attributes. The task, tool arguments, paths and output never do, whatever --trace-content
// says: a trace goes to a collector other people read, so nothing here copies a string the model,
// the user or a tool wrote (a text's length is fine).
// Names follow the OpenTelemetry GenAI semantic conventions where one exists, conch.* otherwise.
// The gen_ai.* names are still "incubating" upstream, so they are written out here rather than
// imported from the package's unstable entry point, as its README advises.
import { SpanKind, SpanStatusCode, trace, type Attributes, type Context, type Span, type Tracer } from '@opentelemetry/api';
import type { EventSink, RunEvent } from '../agent/events.ts';
import type { Outcome, OutcomeStatus } from '../agent/outcome.ts';
import type { Usage } from '../providers/types.ts';

export interface RunSpans extends EventSink {
  /** End what is still open: a run that threw instead of finishing (a bug) still leaves a trace. */
  end(): void;
}

/** What a host start traces with (open.ts). */
export interface Tracing {
  /** The spans of one run: one trace each (under the caller's active span, for an embedder's tracer). */
  run(): RunSpans;
  /** A run ended: its spans start on their way without anyone waiting. */
  runEnded(): void;
  /** Export what is left, waiting a bounded time; what went wrong, for the user (never thrown). */
  close(): Promise<string[]>;
}

/** Outcomes that are failures of the run; `cancelled` is the user's choice, not an error. */
const ERROR_OUTCOMES: ReadonlySet<OutcomeStatus> = new Set(['failed', 'timed_out', 'limit_exceeded', 'policy_denied']);

const encoder = new TextEncoder();

export function runSpans(tracer: Tracer, parent: Context): RunSpans {
  let root: Span | undefined;
  let inRun = parent;
  let provider = '';
  let model = '';
  let chat: Span | undefined;
  const tools = new Map<string, Span>();
  const elided = { results: 0, bytes: 0 };

  const child = (name: string, kind: SpanKind, attributes: Attributes) => tracer.startSpan(name, { kind, attributes }, inRun);

  function onEvent(event: RunEvent): void {
    switch (event.type) {
      case 'run.started': {
        provider = event.provider;
        model = event.model;
        root = tracer.startSpan('invoke_agent conch', {
          kind: SpanKind.INTERNAL,
          attributes: {
            'gen_ai.operation.name': 'invoke_agent',
            'gen_ai.agent.name': 'conch',
            'gen_ai.provider.name': provider,
            'gen_ai.request.model': model,
            'conch.run.id': event.runId,
            'conch.mode': event.mode,
            'conch.sandbox': event.sandbox,
            'conch.tools': event.tools,
            ...(event.session
              ? { 'gen_ai.conversation.id': event.session.id, 'conch.session.resumed': event.session.resumed, 'conch.session.forked': event.session.parent !== null }
              : {}),
          },
        }, parent);
        inRun = trace.setSpan(parent, root);
        return;
      }
      case 'model.started':
        chat = child(`chat ${model}`, SpanKind.CLIENT, {
          'gen_ai.operation.name': 'chat',
          'gen_ai.provider.name': provider,
          'gen_ai.request.model': model,
          'conch.turn': event.turn,
        });
        return;
      case 'model.retry':
        // The reason is a server's error text, which can quote the request: only the figures.
        chat?.addEvent('conch.model.retry', { 'conch.retry.attempt': event.attempt, 'conch.retry.delay_ms': event.delayMs });
        return;
      case 'model.fallback': {
        const to = splitModel(event.to);
        chat?.addEvent('conch.model.fallback', { 'conch.fallback.from': event.from, 'conch.fallback.to': event.to });
        provider = to.provider;
        model = to.model;
        return;
      }
      case 'model.finished': {
        const answered = splitModel(event.model ?? `${provider}/${model}`);
        chat?.setAttributes({
          'gen_ai.provider.name': answered.provider,
          'gen_ai.response.model': answered.model,
          'gen_ai.response.finish_reasons': [event.stopReason],
          ...usageAttributes(event.usage),
        });
        chat?.end();
        chat = undefined;
        return;
      }
      case 'context.elided':
        elided.results += event.results;
        elided.bytes += event.bytes;
        return;
      case 'tool.started':
        tools.set(event.callId, child(`execute_tool ${event.name}`, SpanKind.INTERNAL, {
          'gen_ai.operation.name': 'execute_tool',
          'gen_ai.tool.name': event.name,
          'gen_ai.tool.call.id': event.callId,
          'gen_ai.tool.type': 'function',
        }));
        return;
      case 'tool.finished': {
        const span = tools.get(event.callId);
        if (!span) return;
        tools.delete(event.callId);
        span.setAttributes({
          'conch.tool.is_error': event.isError,
          'conch.truncated': event.truncated,
          'conch.tool.result_bytes': encoder.encode(event.output).length,
          ...detailFigures(event.details),
          ...(event.policyRule ? { 'conch.policy.decision': 'deny', 'conch.policy.rule': event.policyRule } : {}),
        });
        if (event.isError) {
          span.setAttribute('error.type', event.policyRule ? 'policy_denied' : 'tool_error');
          span.setStatus({ code: SpanStatusCode.ERROR, message: event.policyRule ? 'policy_denied' : 'tool_error' });
        }
        span.end();
        return;
      }
      case 'output.repair':
        // The issues quote the answer: only how many there were.
        root?.addEvent('conch.output.repair', { 'conch.turn': event.turn, 'conch.output.errors': event.errors.length });
        return;
      case 'run.finished':
        finish(event.outcome);
        return;
      default:
        // text, thinking and tool progress are content; warnings quote servers. None become spans.
        return;
    }
  }

  function finish(outcome: Outcome): void {
    const failure = outcome.code ?? outcome.status;
    const failed = ERROR_OUTCOMES.has(outcome.status);
    // A model or tool call the run stopped in the middle of (cancelled, deadline, provider failure).
    for (const span of [...(chat ? [chat] : []), ...tools.values()]) {
      span.setAttribute('conch.interrupted', true);
      if (failed) {
        span.setAttribute('error.type', failure);
        span.setStatus({ code: SpanStatusCode.ERROR, message: failure });
      }
      span.end();
    }
    chat = undefined;
    tools.clear();
    if (!root) return;
    root.setAttributes({
      'conch.outcome': outcome.status,
      'conch.model_calls': outcome.counts.modelCalls,
      'conch.tool_calls': outcome.counts.toolCalls,
      'conch.tool_errors': outcome.counts.toolErrors,
      'conch.duration_ms': outcome.durationMs,
      'conch.output.chars': outcome.output.length,
      ...usageAttributes(outcome.usage),
      ...(outcome.stopReason !== null ? { 'conch.stop_reason': outcome.stopReason } : {}),
      ...(outcome.code ? { 'conch.failure_code': outcome.code } : {}),
      ...(outcome.limit ? { 'conch.limit': outcome.limit } : {}),
      ...(outcome.rule ? { 'conch.policy.decision': 'deny', 'conch.policy.rule': outcome.rule } : {}),
      ...(outcome.cost ? { 'conch.cost.usd': outcome.cost.usd, 'conch.cost.estimated': outcome.cost.estimated } : {}),
      ...(outcome.thinking ? { 'conch.thinking.chars': outcome.thinking.chars } : {}),
      ...(outcome.thinking?.tokens != null ? { 'gen_ai.usage.reasoning.output_tokens': outcome.thinking.tokens } : {}),
      ...(outcome.outputErrors ? { 'conch.output.errors': outcome.outputErrors.length } : {}),
      ...(elided.results ? { 'conch.context.elided_results': elided.results, 'conch.context.elided_bytes': elided.bytes } : {}),
    });
    if (failed) {
      // The outcome's message names paths and quotes servers: the status says only which failure.
      root.setAttribute('error.type', failure);
      root.setStatus({ code: SpanStatusCode.ERROR, message: failure });
    }
    root.end();
    root = undefined;
  }

  return {
    emit(event) {
      // Tracing never fails a run: a broken span is the trace's loss, not the user's.
      try {
        onEvent(event);
      } catch {}
    },
    end() {
      try {
        for (const span of [...(chat ? [chat] : []), ...tools.values(), ...(root ? [root] : [])]) {
          span.setAttribute('conch.interrupted', true);
          span.end();
        }
      } catch {}
      chat = undefined;
      tools.clear();
      root = undefined;
    },
  };
}

/** Figures only, each as reported; an unknown one is left out rather than sent as 0. */
function usageAttributes(usage: Usage): Attributes {
  const out: Attributes = {};
  if (usage.inputTokens !== null) out['gen_ai.usage.input_tokens'] = usage.inputTokens;
  if (usage.outputTokens !== null) out['gen_ai.usage.output_tokens'] = usage.outputTokens;
  if (usage.cacheReadTokens !== null) out['gen_ai.usage.cache_read.input_tokens'] = usage.cacheReadTokens;
  if (usage.cacheWriteTokens !== null) out['gen_ai.usage.cache_creation.input_tokens'] = usage.cacheWriteTokens;
  return out;
}

/**
 * The numbers and flags a kernel tool puts in its details (bash: exit code, full output size). A
 * plugin's details are its own: only these keys, and only when they hold a number or a boolean.
 */
function detailFigures(details: Record<string, unknown> | undefined): Attributes {
  if (!details) return {};
  const out: Attributes = {};
  const figures: [string, string][] = [
    ['exitCode', 'conch.tool.exit_code'],
    ['totalBytes', 'conch.tool.output_bytes'],
    ['timedOut', 'conch.tool.timed_out'],
    ['cancelled', 'conch.tool.cancelled'],
  ];
  for (const [key, name] of figures) {
    const value = details[key];
    if ((typeof value === 'number' && Number.isFinite(value)) || typeof value === 'boolean') out[name] = value;
  }
  return out;
}

function splitModel(id: string): { provider: string; model: string } {
  const slash = id.indexOf('/');
  return slash < 0 ? { provider: '', model: id } : { provider: id.slice(0, slash), model: id.slice(slash + 1) };
}
