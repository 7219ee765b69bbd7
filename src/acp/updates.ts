// conch run events → ACP session/update payloads, and conch outcomes → ACP stop reasons.
// Pure mapping: no I/O here, so the wire shapes can be read (and checked) in one place.
import { isAbsolute, resolve } from 'node:path';
import type { ContentBlock as AcpContent, SessionUpdate, StopReason, ToolCallContent, ToolCallLocation, ToolKind } from '@agentclientprotocol/sdk';
import type { RunEvent } from '../agent/events.ts';
import type { Outcome } from '../agent/outcome.ts';
import { MODEL_IMAGE_TYPES, type ContentBlock } from '../core/content.ts';

const KINDS: Record<string, ToolKind> = { bash: 'execute', read: 'read', write: 'edit', edit: 'edit' };

/** Keep titles one short line: editors show them in a list. */
const TITLE_MAX = 120;

export function toolKind(name: string): ToolKind {
  return KINDS[name] ?? 'other';
}

function oneLine(text: string): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length > TITLE_MAX ? `${flat.slice(0, TITLE_MAX - 1)}…` : flat;
}

function field(args: unknown, key: string): string | undefined {
  if (args && typeof args === 'object' && key in args) {
    const value = (args as Record<string, unknown>)[key];
    if (typeof value === 'string' && value !== '') return value;
  }
  return undefined;
}

export function toolTitle(name: string, args: unknown): string {
  const path = field(args, 'path');
  switch (name) {
    case 'bash': {
      const command = field(args, 'command');
      return command ? oneLine(command) : 'Run a shell command';
    }
    case 'read':
      return path ? `Read ${path}` : 'Read a file';
    case 'write':
      return path ? `Write ${path}` : 'Write a file';
    case 'edit':
      return path ? `Edit ${path}` : 'Edit a file';
    default:
      return name;
  }
}

/** Where a call will act, before it runs: the editor can follow along. */
function plannedLocations(args: unknown, root: string): ToolCallLocation[] {
  const path = field(args, 'path');
  if (!path) return [];
  const offset = args && typeof args === 'object' ? (args as Record<string, unknown>).offset : undefined;
  const location: ToolCallLocation = { path: isAbsolute(path) ? path : resolve(root, path) };
  if (typeof offset === 'number' && Number.isInteger(offset) && offset > 0) location.line = offset;
  return [location];
}

/** 1-based number of the first line that differs (the place an editor should jump to). */
export function firstChangedLine(oldText: string, newText: string): number {
  const limit = Math.min(oldText.length, newText.length);
  let i = 0;
  while (i < limit && oldText.charCodeAt(i) === newText.charCodeAt(i)) i++;
  let line = 1;
  for (let k = 0; k < i; k++) if (oldText.charCodeAt(k) === 10) line++;
  return line;
}

interface FileChange {
  path: string;
  oldText: string | null;
  newText: string;
}

/** write/edit results carry the change in `details`; anything else has none. */
function fileChange(details: Record<string, unknown> | undefined): FileChange | null {
  if (!details) return null;
  const { path, oldText, newText } = details;
  if (typeof path !== 'string' || !isAbsolute(path) || typeof newText !== 'string') return null;
  return { path, oldText: typeof oldText === 'string' ? oldText : null, newText };
}

/**
 * Turns the loop's events into session updates for one session. Stateful only in what it
 * remembers between a tool's start and its progress (accumulated progress text).
 */
export class UpdateMapper {
  private progress = new Map<string, string>();
  private messageId: string | null = null;

  constructor(private readonly root: string) {}

  map(event: RunEvent): SessionUpdate[] {
    switch (event.type) {
      case 'model.started':
        // One assistant message per model call, so clients can tell consecutive answers apart.
        this.messageId = `${event.runId}:${event.turn}`;
        return [];
      case 'text.delta':
        return [{ sessionUpdate: 'agent_message_chunk', content: { type: 'text', text: event.text }, ...(this.messageId ? { messageId: this.messageId } : {}) }];
      case 'thinking.delta':
        // ACP has its own channel for reasoning, so editors show it apart from the answer.
        return [{ sessionUpdate: 'agent_thought_chunk', content: { type: 'text', text: event.text }, ...(this.messageId ? { messageId: this.messageId } : {}) }];
      case 'tool.started': {
        const locations = plannedLocations(event.args, this.root);
        return [
          {
            sessionUpdate: 'tool_call',
            toolCallId: event.callId,
            title: toolTitle(event.name, event.args),
            kind: toolKind(event.name),
            status: 'pending',
            rawInput: event.args,
            ...(locations.length ? { locations } : {}),
          },
          { sessionUpdate: 'tool_call_update', toolCallId: event.callId, status: 'in_progress' },
        ];
      }
      case 'tool.updated': {
        // The live view keeps a bounded tail: the final result carries the real output.
        const line = event.text.endsWith('\n') ? event.text : `${event.text}\n`;
        const text = ((this.progress.get(event.callId) ?? '') + line).slice(-PROGRESS_VIEW_CHARS);
        this.progress.set(event.callId, text);
        return [{ sessionUpdate: 'tool_call_update', toolCallId: event.callId, content: [textContent(text)] }];
      }
      case 'tool.finished': {
        this.progress.delete(event.callId);
        const change = event.isError ? null : fileChange(event.details);
        const content: ToolCallContent[] = [];
        if (change) content.push({ type: 'diff', path: change.path, oldText: change.oldText, newText: change.newText });
        if (event.output) content.push(textContent(event.output));
        return [
          {
            sessionUpdate: 'tool_call_update',
            toolCallId: event.callId,
            status: event.isError || commandFailed(event.details) ? 'failed' : 'completed',
            content,
            ...(change ? { locations: [{ path: change.path, line: firstChangedLine(change.oldText ?? '', change.newText) }] } : {}),
            rawOutput: rawOutput(event.output, event.details, change !== null),
          },
        ];
      }
      default:
        return [];
    }
  }
}

function textContent(text: string): ToolCallContent {
  return { type: 'content', content: { type: 'text', text } };
}

/**
 * A command that exited non-zero or was killed is a success for the model (it reads the exit code and
 * carries on) but a failure to an editor's eye, which is what the status is for; the code stays in rawOutput.
 */
function commandFailed(details: Record<string, unknown> | undefined): boolean {
  if (!details) return false;
  return (typeof details.exitCode === 'number' && details.exitCode !== 0) || (typeof details.signal === 'string' && details.signal !== '');
}

/** Structured facts for clients that read them (exit code, revision); file bodies are in the diff already. */
function rawOutput(output: string, details: Record<string, unknown> | undefined, hasDiff: boolean): unknown {
  if (!details) return { output };
  if (!hasDiff) return { output, ...details };
  const { oldText: _old, newText: _new, ...rest } = details;
  return { output, ...rest };
}

/**
 * The ACP stop reason for a run that did not fail. Limits other than the turn and output limits,
 * a policy stop and the run deadline end the turn normally; `outcomeNotice` tells the user why.
 * ("refusal" is not used for them: clients read it as the model refusing and may drop the turn.)
 */
export function stopReasonFor(outcome: Outcome): StopReason {
  switch (outcome.status) {
    case 'completed':
      return outcome.stopReason === 'max_tokens' ? 'max_tokens' : 'end_turn';
    case 'cancelled':
      return 'cancelled';
    case 'limit_exceeded':
      if (outcome.limit === 'model_calls') return 'max_turn_requests';
      if (outcome.limit === 'model_output_bytes') return 'max_tokens';
      return 'end_turn';
    default:
      return 'end_turn';
  }
}

/** A closing message for runs that stopped early without an ACP stop reason of their own. */
export function outcomeNotice(outcome: Outcome): string | null {
  if (outcome.status === 'completed' || outcome.status === 'cancelled' || outcome.status === 'failed') return null;
  if (outcome.status === 'limit_exceeded' && (outcome.limit === 'model_calls' || outcome.limit === 'model_output_bytes')) return null;
  const what = outcome.status.replace('_', ' ');
  return `\n\n[conch: the run stopped (${what}): ${outcome.message ?? 'no reason given'}]`;
}

export class PromptContentError extends Error {}

/** How much live output a tool call's view keeps while it runs. */
const PROGRESS_VIEW_CHARS = 16 * 1024;


/**
 * ACP prompt blocks → the provider's content. Text and images pass through; resource links and
 * embedded text resources become text naming their URI (ACP requires agents to accept links).
 */
export function promptContent(blocks: AcpContent[]): ContentBlock[] {
  const out: ContentBlock[] = [];
  for (const block of blocks) {
    switch (block.type) {
      case 'text':
        out.push({ type: 'text', text: block.text });
        break;
      case 'image':
        // Refused here, not by the provider: a rejected image stays in the session's history and
        // would make every later prompt fail too.
        if (!MODEL_IMAGE_TYPES.includes(block.mimeType)) {
          throw new PromptContentError(`image type '${block.mimeType}' is not supported; send one of ${MODEL_IMAGE_TYPES.join(', ')}`);
        }
        if (!block.data) throw new PromptContentError('an image block needs its data (base64); a uri alone is not fetched');
        out.push({ type: 'image', mediaType: block.mimeType, data: block.data });
        break;
      case 'resource_link':
        out.push({ type: 'text', text: `[linked resource: ${block.name} <${block.uri}>]` });
        break;
      case 'resource': {
        const r = block.resource;
        if ('text' in r && typeof r.text === 'string') out.push({ type: 'text', text: `<resource uri="${r.uri}">\n${r.text}\n</resource>` });
        else throw new PromptContentError(`the embedded resource ${r.uri} is binary; conch accepts text resources only`);
        break;
      }
      default:
        throw new PromptContentError(`conch does not accept '${block.type}' prompt content (supported: text, image, resource_link, text resources)`);
    }
  }
  if (out.length === 0) throw new PromptContentError('the prompt is empty: send at least one text block');
  return out;
}
