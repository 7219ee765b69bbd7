// Newline-delimited JSON-RPC from a stdio server, each line bounded. The SDK's ReadBuffer throws once
// its buffer passes the bound and leaves the stream mid-line, so a single oversized answer stopped
// conch reading the server at all: that call and every later one waited out toolTimeoutMs. Here an
// oversized line is skipped to its end and handed back as such, with the request id it carried (a
// response's id sits near one end of the line), so that one call can fail at once and the server
// stays usable.

export type Line = { type: 'line'; text: string } | { type: 'oversized'; bytes: number; id: string | number | null };

/** Bytes kept from each end of an oversized line to find its id. */
const EDGE = 256;

export class BoundedLines {
  private parts: Buffer[] = [];
  private size = 0;
  /** While skipping an oversized line: its start, its last bytes so far and its length. */
  private skipping: { head: Buffer; tail: Buffer; bytes: number } | null = null;

  constructor(private readonly maxBytes: number) {}

  push(chunk: Buffer): Line[] {
    const out: Line[] = [];
    let start = 0;
    for (;;) {
      const nl = chunk.indexOf(10, start);
      const piece = chunk.subarray(start, nl === -1 ? chunk.length : nl);
      this.take(piece);
      if (nl === -1) break;
      out.push(this.endLine());
      start = nl + 1;
    }
    return out;
  }

  clear(): void {
    this.parts = [];
    this.size = 0;
    this.skipping = null;
  }

  private take(piece: Buffer): void {
    if (piece.length === 0) return;
    if (this.skipping) {
      this.skipping.bytes += piece.length;
      this.skipping.tail = Buffer.concat([this.skipping.tail, piece]).subarray(-EDGE);
      return;
    }
    if (this.size + piece.length <= this.maxBytes) {
      this.parts.push(piece);
      this.size += piece.length;
      return;
    }
    const whole = Buffer.concat([...this.parts, piece]);
    this.skipping = { head: whole.subarray(0, EDGE), tail: whole.subarray(-EDGE), bytes: whole.length };
    this.parts = [];
    this.size = 0;
  }

  private endLine(): Line {
    if (this.skipping) {
      const { head, tail, bytes } = this.skipping;
      this.skipping = null;
      return { type: 'oversized', bytes, id: idOf(head.toString('utf8'), tail.toString('utf8')) };
    }
    const text = Buffer.concat(this.parts).toString('utf8').replace(/\r$/, '');
    this.parts = [];
    this.size = 0;
    return { type: 'line', text };
  }
}

const ID = String.raw`(-?\d+|"(?:[^"\\]|\\.)*")`;
/** The SDKs write the id last ({"result":…,"jsonrpc":"2.0","id":5}) or first; only those places count. */
const AT_END = new RegExp(String.raw`"id"\s*:\s*${ID}\s*\}\s*$`);
const AT_START = new RegExp(String.raw`^\s*\{\s*(?:"jsonrpc"\s*:\s*"2\.0"\s*,\s*)?"id"\s*:\s*${ID}`);

function idOf(head: string, tail: string): string | number | null {
  const m = AT_END.exec(tail) ?? AT_START.exec(head);
  if (!m) return null;
  return m[1]!.startsWith('"') ? (JSON.parse(m[1]!) as string) : Number(m[1]);
}
