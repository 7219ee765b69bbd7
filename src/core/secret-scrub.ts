// Secret values (provider keys, --env values) never reach a file conch writes: sessions and traces
// alike get each one replaced by a marker naming where it came from.

export interface SecretValue {
  /** Shown instead of the value: `[redacted NAME]`. */
  name: string;
  value: string;
}

/** Values too short to be a key would only mangle ordinary text. */
const usable = (secrets: SecretValue[]) => secrets.filter((s) => s.value.length >= 3);

/** Replace every whole occurrence of each secret in `text`. */
export function scrubText(text: string, secrets: SecretValue[]): string {
  let out = text;
  for (const s of secrets) if (out.includes(s.value)) out = out.split(s.value).join(`[redacted ${s.name}]`);
  return out;
}

/**
 * Every string in a record scrubbed. Image data is left alone (base64 cannot hold a secret by
 * accident that matters, and scanning megabytes per image would cost the 1 ms a turn may add).
 */
export function redactor(secrets: SecretValue[]): <T>(record: T) => T {
  const list = usable(secrets);
  if (list.length === 0) return (record) => record;
  const walk = (value: unknown, key?: string): unknown => {
    if (typeof value === 'string') return key === 'data' ? value : scrubText(value, list);
    if (Array.isArray(value)) return value.map((v) => walk(v));
    if (value && typeof value === 'object') {
      return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, walk(v, k)]));
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
