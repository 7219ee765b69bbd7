// A request's JSON put together from the texts kept beside each converted message
// (converted-history.ts). Both SDKs serialised the whole body again on every request: in a long run
// the cost that grew with the conversation (a profile of a 2,000-turn run: 46 % of conch's CPU).
//
// The SDK still gets the params object and derives from it all it derives (headers, the stream
// flag, timeouts, its tracing spans' attributes; Anthropic's gets a stand-in for the messages, see
// withStandInMessages); only its last step, JSON.stringify(body), is replaced, in the client's
// post() (keptJsonClient), with a string it sends as it is when the request's content-type is set
// (JSON_HEADERS). Not as the request option `body`: that would hide the params from the spans. The string is JSON.stringify(body) byte for byte: each key of
// the body in order, the messages from their kept texts. A message is taken from its kept text only
// while it is the very object that text was made from (the cache breakpoints mark copies; an
// elision replaces the message); any other is serialised there and then.
type Body = Record<string, unknown> & { messages?: unknown };

interface KeptTexts {
  readonly messages: readonly unknown[];
  readonly texts: readonly string[];
  /** Where messages[0] sits in the request's messages (after OpenAI's system message). */
  readonly offset: number;
  /** How much of messages and texts to trust: the kept arrays may grow after this request. */
  readonly length: number;
}

const keptFor = new WeakMap<readonly unknown[], KeptTexts>();

/** The request's own content-type, which makes the SDKs send a string body untouched. */
export const JSON_HEADERS = { 'content-type': 'application/json' } as const;

/**
 * Notes that `requestMessages` (a request's own messages array) holds, from `offset` on, the
 * messages of `kept`, whose texts the request's JSON may use.
 */
export function useKeptTexts(
  requestMessages: readonly unknown[],
  kept: { readonly messages: readonly unknown[]; readonly texts: readonly string[] },
  offset = 0,
): void {
  keptFor.set(requestMessages, { messages: kept.messages, texts: kept.texts, offset, length: kept.messages.length });
}

function messagesJson(messages: readonly unknown[], kept: KeptTexts): string {
  const texts = new Array<string>(messages.length);
  for (let i = 0; i < messages.length; i++) {
    const m = messages[i];
    const j = i - kept.offset;
    // JSON.stringify writes null for an entry that has no JSON (undefined).
    texts[i] = j >= 0 && j < kept.length && kept.messages[j] === m ? kept.texts[j]! : (JSON.stringify(m) ?? 'null');
  }
  return `[${texts.join(',')}]`;
}

/** Stand-in → the request's messages (withStandInMessages). */
const standsFor = new WeakMap<readonly unknown[], readonly unknown[]>();

/**
 * The params with an empty array standing in for their messages, for an SDK whose create() would
 * only walk them (Anthropic's, for a header conch's messages never earn). The body's JSON has the
 * real messages; were the SDK to serialise the body itself, the stand-in's toJSON gives them too.
 */
export function withStandInMessages<P extends { messages: readonly unknown[] }>(params: P): P {
  const real = params.messages;
  const standIn: unknown[] = [];
  Object.defineProperty(standIn, 'toJSON', { value: () => real });
  standsFor.set(standIn, real);
  return { ...params, messages: standIn };
}

/** JSON.stringify(body), from kept texts; undefined when its messages have none noted. */
export function requestJson(body: Body): string | undefined {
  const given = body.messages;
  if (!Array.isArray(given)) return undefined;
  const messages = standsFor.get(given) ?? given;
  const kept = keptFor.get(messages);
  if (!kept) return undefined;
  const fields: string[] = [];
  for (const key of Object.keys(body)) {
    // Undefined for what JSON.stringify leaves out (undefined, functions, symbols).
    const value = key === 'messages' ? messagesJson(messages, kept) : JSON.stringify(body[key]);
    if (value !== undefined) fields.push(`${JSON.stringify(key)}:${value}`);
  }
  return `{${fields.join(',')}}`;
}

/** Request options with their body as requestJson's text, when it has one. */
function withKeptJson(opts: unknown): unknown {
  if (!opts || typeof opts !== 'object' || typeof (opts as { then?: unknown }).then === 'function') return opts;
  const body = (opts as { body?: unknown }).body;
  if (!body || typeof body !== 'object' || Array.isArray(body)) return opts;
  const json = requestJson(body as Body);
  return json === undefined ? opts : { ...opts, body: json };
}

type Posting = new (...args: any[]) => { post(path: string, opts?: any): any };

/**
 * The SDK client class whose requests send requestJson's text. Made here, on conch's side of the
 * bundle, so that the texts noted and the client reading them share this module.
 */
export function keptJsonClient<C extends Posting>(Client: C): C {
  const Kept = class extends Client {
    override post(path: string, opts?: unknown) {
      return super.post(path, withKeptJson(opts));
    }
  };
  // OpenAI's User-Agent is the client class's name.
  Object.defineProperty(Kept, 'name', { value: Client.name });
  return Kept;
}
