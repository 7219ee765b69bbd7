// A local model server for tests: speaks the real Anthropic Messages and OpenAI Chat Completions
// wire protocols (SSE streaming or plain JSON), answers from a per-test script of turns and records
// every request it receives. Start it on port 0 so tests never collide.
import { anthropicResponse, floodResponse, openaiResponse, type Protocol } from './model-wire.ts';

export interface ScriptedToolCall {
  /** Omit for a generated id; '' sends no id at all (some OpenAI-compatible servers do that). */
  id?: string;
  name: string;
  /** A string is sent verbatim (may be malformed JSON); an object is JSON-encoded. */
  arguments: string | object;
}

export interface ScriptedTurn {
  /** A string is split into word-sized deltas; string[] gives the deltas explicitly. */
  text?: string | string[];
  /**
   * Reasoning before the answer. Anthropic: a signed thinking block (then a redacted one when
   * `redacted` is set); OpenAI-compatible: `reasoning_content` deltas.
   */
  thinking?: { text: string; signature?: string; redacted?: string };
  toolCalls?: ScriptedToolCall[];
  /** null = report no usage at all; a missing figure is left out of the wire format. Default { input: 10, output: 5 }. */
  usage?: { input?: number; output?: number; cacheRead?: number; cacheWrite?: number; reasoning?: number } | null;
  /**
   * Neutral names (end_turn, tool_use, max_tokens) are translated to the protocol's own; anything
   * else is sent verbatim; null sends no stop/finish reason. Default: tool_use when there are tool calls.
   */
  stopReason?: string | null;
  /** Answer with this HTTP error and the protocol's error JSON body. */
  error?: { status: number; message?: string; retryAfter?: string; retryAfterMs?: string; type?: string };
  /** Stream the first events (and first text delta, if any), then the protocol's in-stream error. */
  failMidStream?: boolean;
  /** Stream the first events (and first text delta, if any), then a data line that is not JSON. */
  malformedEvent?: boolean;
  /** Close the socket without any response. */
  dropConnection?: boolean;
  /** Stream the text, then close the socket without finishing the response. */
  dropAfterText?: boolean;
  /** Stream the text, then keep the connection open until the client goes away. */
  hangAfterText?: boolean;
  /** Wait this long before responding. */
  delayMs?: number;
  /** Answer as a hostile or broken server would: a body that never ends (see Flood). */
  flood?: Flood;
}

/**
 * A body that does not end. 'line': one SSE data line with no line break. 'lines': short data lines
 * with no blank line, so no event ever completes. 'events': valid, contentless events (pings, empty
 * deltas) forever. 'error': an HTTP error (status, default 400) whose JSON body never closes.
 * After `maxBytes` (default: never) the server stops sending but keeps the connection open.
 */
export interface Flood {
  shape: 'line' | 'lines' | 'events' | 'error';
  status?: number;
  maxBytes?: number;
}

export interface RecordedRequest {
  protocol: Protocol;
  path: string;
  headers: Record<string, string>;
  /** The parsed JSON body (undefined if the body was not JSON). */
  body: any;
  /** The body exactly as it arrived, for tests that compare bytes (what the SDK serialised). */
  raw: string;
}

export type TurnSource = ScriptedTurn | ((req: RecordedRequest) => ScriptedTurn);

export interface ModelServer {
  readonly url: string;
  readonly anthropicBaseUrl: string;
  readonly openaiBaseUrl: string;
  /** Replace the script. An array is consumed one turn per request; a function answers every request. */
  script(turns: TurnSource[] | ((req: RecordedRequest) => ScriptedTurn)): void;
  readonly requests: RecordedRequest[];
  /** Scripted turns not yet consumed (0 for a function script, which never runs out). */
  remaining(): number;
  /** Body bytes handed to the socket by flood turns since the server started. */
  floodedBytes(): number;
  close(): Promise<void>;
}

const ROUTES: Record<string, Protocol> = {
  '/v1/messages': 'anthropic',
  '/v1/chat/completions': 'openai',
};

export async function startModelServer(): Promise<ModelServer> {
  let queue: TurnSource[] = [];
  let dynamic: ((req: RecordedRequest) => ScriptedTurn) | null = null;
  const requests: RecordedRequest[] = [];
  let flooded = 0;

  const server = Bun.serve({
    hostname: '127.0.0.1',
    port: 0,
    // Hanging streams must stay open until the client aborts; Bun's default idle timeout would cut them.
    idleTimeout: 0,
    async fetch(req) {
      const path = new URL(req.url).pathname;
      const protocol = ROUTES[path];
      if (req.method !== 'POST' || !protocol) {
        return Response.json({ error: { message: `model-server: no route for ${req.method} ${path}` } }, { status: 404 });
      }
      const raw = await req.text();
      let body: any;
      try {
        body = JSON.parse(raw);
      } catch {
        body = undefined;
      }
      const recorded: RecordedRequest = { protocol, path, headers: Object.fromEntries(req.headers), body, raw };
      requests.push(recorded);
      const next = dynamic ?? queue.shift();
      const turn: ScriptedTurn =
        next === undefined
          ? {
              error: {
                status: 500,
                message: `model-server: the script ran out (request #${requests.length}, ${protocol} ${path})`,
              },
            }
          : typeof next === 'function'
            ? next(recorded)
            : next;
      if (turn.delayMs) await Bun.sleep(turn.delayMs);
      if (turn.dropConnection) {
        // Erroring the body before anything is written makes Bun close the socket with no response.
        return new Response(new ReadableStream({ start: (c) => c.error() }));
      }
      if (turn.flood) return floodResponse(protocol, turn.flood, (n) => (flooded += n));
      const stream = body?.stream === true;
      const model = typeof body?.model === 'string' ? body.model : 'scripted-model';
      const includeUsage = body?.stream_options?.include_usage === true;
      return protocol === 'anthropic'
        ? anthropicResponse(turn, { stream, model })
        : openaiResponse(turn, { stream, model, includeUsage });
    },
  });

  const url = `http://127.0.0.1:${server.port}`;
  return {
    url,
    anthropicBaseUrl: url,
    openaiBaseUrl: `${url}/v1`,
    script(turns) {
      if (typeof turns === 'function') {
        dynamic = turns;
        queue = [];
      } else {
        dynamic = null;
        queue = [...turns];
      }
    },
    requests,
    remaining: () => queue.length,
    floodedBytes: () => flooded,
    async close() {
      await server.stop(true);
    },
  };
}
