// Secret values (provider keys, --env values) never reach a file conch writes: sessions and traces
// alike get each one replaced by a marker naming where it came from.

export interface SecretValue {
  /** Shown instead of the value: `[redacted NAME]`. */
  name: string;
  value: string;
}

/**
 * Values too short to be a key would only mangle ordinary text. Each value also as JSON writes it
 * inside a string: a tool call's arguments are stored as the JSON text the model sent, where an
 * --env value with a quote, a backslash or a control character appears escaped.
 */
function usable(secrets: SecretValue[]): SecretValue[] {
  return secrets.flatMap((s) => {
    if (s.value.length < 3) return [];
    const escaped = JSON.stringify(s.value).slice(1, -1);
    return escaped === s.value ? [s] : [s, { name: s.name, value: escaped }];
  });
}

/** Replace every whole occurrence of each secret in `text` (a list usable() made). */
export function scrubText(text: string, secrets: SecretValue[]): string {
  let out = text;
  for (const s of secrets) if (out.includes(s.value)) out = out.split(s.value).join(`[redacted ${s.name}]`);
  return out;
}

/**
 * Every string in a record scrubbed, keys included. An image's data is left alone (base64 cannot
 * hold a secret by accident that matters, and scanning megabytes per image would cost the 1 ms a
 * turn may add); any other `data` (a plugin's or MCP tool's argument) is scrubbed like the rest.
 */
export function redactor(secrets: SecretValue[]): <T>(record: T) => T {
  const list = usable(secrets);
  if (list.length === 0) return (record) => record;
  const walk = (value: unknown): unknown => {
    if (typeof value === 'string') return scrubText(value, list);
    if (Array.isArray(value)) return value.map(walk);
    if (value && typeof value === 'object') {
      const image = (value as { type?: unknown }).type === 'image' || (value as { t?: unknown }).t === 'blob';
      return Object.fromEntries(Object.entries(value).map(([k, v]) => [scrubText(k, list), image && k === 'data' ? v : walk(v)]));
    }
    return value;
  };
  return (record) => walk(record) as typeof record;
}

/**
 * How many characters at the end of `text` could be the start of a secret that the next piece of a
 * stream completes: streamed text must hold them back, or a key split over two pieces escapes.
 */
export function partialSecretTail(text: string, secrets: SecretValue[]): number {
  let longest = 0;
  for (const { value } of usable(secrets)) {
    for (let n = Math.min(value.length - 1, text.length); n > longest; n--) {
      if (text.endsWith(value.slice(0, n))) {
        longest = n;
        break;
      }
    }
  }
  return longest;
}
