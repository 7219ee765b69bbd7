// The fetch conch's MCP client speaks Streamable HTTP through: each message bounded as over stdio
// (transport.ts). The SDK reads a JSON body or an SSE event whole, so a 300 MB answer held 1.9 GB.
// Past the bound conch stops reading; the call fails at once and the server stays usable.
import { meteredBody, replaceBody } from '../core/bounded-body.ts';

/** JSON-RPC's "internal error", as transport.ts answers an oversized stdio message. */
const INTERNAL_ERROR = -32603;

export function boundedFetch(server: string, maxBytes: number): typeof fetch {
  const bounded = async (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
    const response = await fetch(input, init);
    if (!response.body) return response;
    let problem: Error | null = null;
    const fail = (what: string) => (problem = new Error(`the MCP server ${server} sent ${what}; conch stopped reading it`));
    const metered = meteredBody(response.body, { eventBytes: maxBytes, totalBytes: Infinity }, fail);
    const id = requestId(init?.body);
    // A JSON body that errors fails its call; an SSE stream that errors is only reported, and its
    // call waited out toolTimeoutMs: there the call gets the error as its answer.
    if (!response.headers.get('content-type')?.includes('text/event-stream') || id === null) return replaceBody(response, metered);
    return replaceBody(response, answerOnError(metered, id, () => problem));
  };
  return bounded as typeof fetch;
}

/** The id of the JSON-RPC request the SDK posts, or null (a notification, a response). */
function requestId(body: unknown): string | number | null {
  if (typeof body !== 'string') return null;
  try {
    const message = JSON.parse(body) as { id?: unknown; method?: unknown };
    return typeof message.method === 'string' && (typeof message.id === 'string' || typeof message.id === 'number') ? message.id : null;
  } catch {
    return null;
  }
}

function answerOnError(body: ReadableStream<Uint8Array>, id: string | number, problem: () => Error | null): ReadableStream<Uint8Array> {
  const reader = body.getReader();
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      try {
        const { done, value } = await reader.read();
        if (done) controller.close();
        else controller.enqueue(value);
      } catch (error) {
        const why = problem();
        if (!why) return controller.error(error);
        // The blank line ends the cut event first (the SDK drops it as unreadable).
        const answer = { jsonrpc: '2.0', id, error: { code: INTERNAL_ERROR, message: why.message } };
        controller.enqueue(new TextEncoder().encode(`\n\nevent: message\ndata: ${JSON.stringify(answer)}\n\n`));
        controller.close();
      }
    },
    cancel(reason) {
      return reader.cancel(reason);
    },
  });
}
