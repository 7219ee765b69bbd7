import type { Outcome, OutputIssue } from './outcome.ts';
import type { Usage } from '../providers/types.ts';

interface Base {
  runId: string;
  seq: number;
  /** ISO-8601 time the event was emitted. */
  time: string;
}

/** The stored session a run belongs to (absent: --ephemeral, or a host without a store). */
export interface SessionFacts {
  id: string;
  /** The session this one was forked from. */
  parent: string | null;
  /** The run continues earlier turns (-c, --resume, session/load). */
  resumed: boolean;
  /** What resuming narrowed (now ∩ recorded policy), for the header. */
  narrowed: string[];
}

export type EventBody =
  | {
      type: 'run.started';
      session?: SessionFacts;
      provider: string;
      model: string;
      /** 'restricted' | 'unrestricted' */
      mode: 'restricted' | 'unrestricted';
      sandbox: string;
      tools: string[];
    }
  | { type: 'model.started'; turn: number }
  /** Old tool results were replaced by a note to keep the request within context_bytes. */
  | { type: 'context.elided'; results: number; bytes: number }
  | { type: 'model.retry'; turn: number; attempt: number; delayMs: number; reason: string }
  /** Not an error: e.g. a server rejected an optional request field, which is then left out. */
  | { type: 'model.warning'; turn: number; text: string }
  | { type: 'text.delta'; text: string }
  /** The model's visible reasoning as it streams (shown dimmed on a terminal; in a trace only with --trace-content). */
  | { type: 'thinking.delta'; text: string }
  | { type: 'tool.started'; callId: string; name: string; args: unknown }
  | { type: 'tool.updated'; callId: string; name: string; text: string }
  | {
      type: 'tool.finished';
      callId: string;
      name: string;
      isError: boolean;
      truncated: boolean;
      durationMs: number;
      /** Text sent to the model. */
      output: string;
      details?: Record<string, unknown>;
      /** The id of the policy rule that refused the call (an id such as 'workspace.outside', not content). */
      policyRule?: string;
    }
  /** The model that answered the turn ("provider/model"): with a fallback route, not always the first. */
  | { type: 'model.finished'; turn: number; stopReason: string; usage: Usage; model?: string }
  /** The turn moved to the next model of the route; `reason` is why the previous one failed. */
  | { type: 'model.fallback'; turn: number; from: string; to: string; reason: string }
  /** The final answer did not match the output schema: the one repair turn goes to the model with these. */
  | { type: 'output.repair'; turn: number; errors: OutputIssue[] }
  | { type: 'run.finished'; outcome: Outcome };

export type RunEvent = Base & EventBody;
export type EventType = EventBody['type'];

export interface EventSink {
  emit(event: RunEvent): void;
}

/** Fan one event stream out to several sinks (renderer + trace file, say). */
export function teeSinks(...sinks: EventSink[]): EventSink {
  return { emit: (e) => { for (const s of sinks) s.emit(e); } };
}
