// A failed connection, told by its system error code wherever a client library put it (the error
// itself, or a cause a few levels down), so each host says "connection to X failed (ECONNREFUSED)"
// in the same words, naming where it tried rather than quoting the library's own sentence.

const CONNECTION_CODES = new Set([
  'ECONNRESET',
  'ECONNREFUSED',
  'ECONNABORTED',
  'EPIPE',
  'ETIMEDOUT',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'UND_ERR_SOCKET',
]);

/** The connection error code of `e` or one of its causes, or null when it is no connection failure. */
export function connectionCode(e: unknown): string | null {
  for (let cur = e, depth = 0; cur && typeof cur === 'object' && depth < 4; depth++) {
    const code = (cur as { code?: unknown }).code;
    if (typeof code === 'string' && CONNECTION_CODES.has(code)) return code;
    cur = (cur as { cause?: unknown }).cause;
  }
  return null;
}
