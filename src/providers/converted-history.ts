// A provider's own form of a conversation, kept from one request to the next. A long run sends every
// earlier message again on every turn, so converting the whole conversation per request made each
// turn cost more than the one before (turn 1,000 of a 1,000-turn run: 0.6–0.75 ms for Anthropic,
// 2.1 ms for OpenAI). Only the messages added since the last request are converted.
//
// The contract with the code that keeps the conversation: a message, once sent, is not changed in
// place; a change (an elision, a compaction, a history cut back and continued) replaces the message
// object or the messages. Every request compares the kept messages with the conversation by identity
// (a pointer comparison per message, far below the SDK's own walk over the body), and anything that
// differs is converted anew, reusing the conversion of every message object still present.
//
// Beside each converted message its JSON text is kept, made once when the message is converted: the
// SDKs serialised the whole body again on every request, the cost that grew with the conversation
// (request-json.ts puts the body together from these texts).
import type { Message } from './types.ts';

/** One message in a provider's form: none (nothing to send), one, or several (OpenAI's tool messages). */
export type ConvertMessage<T> = (message: Message) => readonly T[];

/**
 * Below this many converted messages the kept array is never rebuilt; from it on, it is rebuilt each
 * time its count doubles (rebuild()).
 */
export const FIRST_REBUILD = 64;

/** A conversation as last converted: its messages in a provider's form, and each one's JSON text. */
export interface KeptConversion<T> {
  readonly messages: readonly T[];
  /** texts[i] is JSON.stringify(messages[i]). */
  readonly texts: readonly string[];
}

const json = (part: readonly unknown[]): readonly string[] => part.map((p) => JSON.stringify(p));

export class ConvertedHistory<T> implements KeptConversion<T> {
  /** The conversation's messages as last converted, by identity. */
  private sources: Message[] = [];
  /** parts[i]: what sources[i] converted to; partTexts[i]: their JSON texts. */
  private parts: (readonly T[])[] = [];
  private partTexts: (readonly string[])[] = [];
  private out: T[] = [];
  private outTexts: string[] = [];
  private rebuildAt = FIRST_REBUILD;
  /** How many times the conversation was found changed other than at its end (for tests). */
  rewrites = 0;
  /** How many times the kept array was rebuilt on doubling (for tests). */
  rebuilds = 0;

  constructor(private readonly convert: ConvertMessage<T>) {}

  /** The array update() last returned. */
  get messages(): readonly T[] {
    return this.out;
  }

  /**
   * The JSON text of each entry of `messages`. Like it, replaced by a rewrite and only appended to
   * otherwise, so a caller holding both sees the two agree at every index it saw.
   */
  get texts(): readonly string[] {
    return this.outTexts;
  }

  /**
   * The converted form of `messages`. The array returned is the kept one, shared with the next
   * request: the caller must not change it or its objects (copy what it marks).
   */
  update(messages: readonly Message[]): readonly T[] {
    const kept = this.sources.length;
    let same = 0;
    const common = Math.min(kept, messages.length);
    while (same < common && this.sources[same] === messages[same]) same++;
    if (same < kept) {
      this.rewrite(messages);
      return this.out;
    }
    for (let i = kept; i < messages.length; i++) {
      const message = messages[i]!;
      const part = this.convert(message);
      const texts = json(part);
      this.sources.push(message);
      this.parts.push(part);
      this.partTexts.push(texts);
      for (const p of part) this.out.push(p);
      for (const t of texts) this.outTexts.push(t);
    }
    if (this.out.length >= this.rebuildAt) this.rebuild();
    return this.out;
  }

  /** Something before the end changed: convert again every message object not converted before. */
  private rewrite(messages: readonly Message[]): void {
    this.rewrites++;
    const before = new Map<Message, { part: readonly T[]; texts: readonly string[] }>();
    for (let i = 0; i < this.sources.length; i++) before.set(this.sources[i]!, { part: this.parts[i]!, texts: this.partTexts[i]! });
    this.sources = messages.slice();
    const kept = this.sources.map((m) => before.get(m) ?? this.converted(m));
    this.parts = kept.map((k) => k.part);
    this.partTexts = kept.map((k) => k.texts);
    this.out = this.parts.flat() as T[];
    this.outTexts = this.partTexts.flat();
    this.rebuildAt = Math.max(FIRST_REBUILD, this.out.length * 2);
  }

  /**
   * Every message converted again into a new array. Objects made a turn apart lie among that turn's
   * garbage; made together they lie together, and the SDK's JSON.stringify of the whole body, the
   * cost that still grows with the conversation, walks them faster: at turn 1,000 0.39 → 0.36 ms
   * (Anthropic) and 0.32 → 0.29 ms (OpenAI). Amortised over the doubling, a constant per message.
   */
  private rebuild(): void {
    this.rebuilds++;
    // The texts stay: the same messages convert to the same JSON.
    this.parts = this.sources.map((m) => this.convert(m));
    this.out = this.parts.flat() as T[];
    this.rebuildAt = this.out.length * 2;
  }

  private converted(message: Message): { part: readonly T[]; texts: readonly string[] } {
    const part = this.convert(message);
    return { part, texts: json(part) };
  }
}

/**
 * One ConvertedHistory per conversation (runs can share a provider: `conch run A B`), held only as
 * long as the conversation array is.
 */
export function historyConverter<T>(convert: ConvertMessage<T>): (messages: readonly Message[]) => KeptConversion<T> {
  const histories = new WeakMap<readonly Message[], ConvertedHistory<T>>();
  return (messages) => {
    let history = histories.get(messages);
    if (!history) histories.set(messages, (history = new ConvertedHistory(convert)));
    history.update(messages);
    return history;
  };
}
