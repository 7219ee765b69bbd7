// Random names (temp files, session ids) from Web Crypto, which Bun has built in: node:crypto would
// load node:stream with it, ≈ 6 ms of CPU on a start that needs neither.

/** `bytes` random bytes as lowercase hex. */
export function randomHex(bytes: number): string {
  return Buffer.from(crypto.getRandomValues(new Uint8Array(bytes))).toString('hex');
}
