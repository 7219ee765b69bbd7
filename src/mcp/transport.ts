// The MCP SDK's Transport over a child conch started itself (through the sandbox, process/piped.ts),
// instead of the SDK's StdioClientTransport, which spawns with its own environment rules and no
// sandbox. Framing is the SDK's (newline-delimited JSON-RPC), lines bounded as the SDK bounds them
// (lines.ts).
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import { deserializeMessage, serializeMessage, STDIO_DEFAULT_MAX_BUFFER_SIZE } from '@modelcontextprotocol/sdk/shared/stdio.js';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import type { PipedProcess } from '../process/piped.ts';
import { BoundedLines, type Line } from './lines.ts';

/** JSON-RPC's "internal error": what the caller of an answer that could not be read gets. */
const INTERNAL_ERROR = -32603;
/** How much of a server's stray stdout a failed start quotes. */
const STRAY_LINES = 3;
const STRAY_CHARS = 200;

export class PipedTransport implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: (message: JSONRPCMessage) => void;
  private readonly buffer = new BoundedLines(STDIO_DEFAULT_MAX_BUFFER_SIZE);
  private closed = false;
  /** The first lines on stdout that were no JSON-RPC: a server logging there never answers. */
  private readonly stray: string[] = [];

  constructor(
    private readonly child: PipedProcess,
    private readonly graceMs: number,
  ) {}

  async start(): Promise<void> {
    void this.read();
    void this.child.exited.then(() => this.finish());
  }

  private async read(): Promise<void> {
    try {
      for await (const chunk of this.child.stdout) {
        for (const line of this.buffer.push(Buffer.from(chunk))) this.deliver(line);
      }
    } catch (error) {
      if (!this.closed) this.onerror?.(error as Error);
    }
  }

  private deliver(line: Line): void {
    if (line.type === 'oversized') {
      const what = `a message of ${line.bytes} bytes, over the ${STDIO_DEFAULT_MAX_BUFFER_SIZE} bytes conch reads from an MCP server; it was dropped`;
      // The call it answered fails now instead of waiting out its timeout.
      if (line.id !== null) this.onmessage?.({ jsonrpc: '2.0', id: line.id, error: { code: INTERNAL_ERROR, message: `the server sent ${what}` } });
      else this.onerror?.(new Error(`the server sent ${what}`));
      return;
    }
    if (line.text.trim() === '') return;
    let message: JSONRPCMessage;
    try {
      message = deserializeMessage(line.text);
    } catch (error) {
      // A line that is not JSON-RPC (a server printing to stdout): report it, keep reading.
      if (this.stray.length < STRAY_LINES) this.stray.push(line.text.slice(0, STRAY_CHARS));
      this.onerror?.(error as Error);
      return;
    }
    this.onmessage?.(message);
  }

  /** What the server wrote to stdout that was not the protocol (its first few lines, cut short). */
  strayOutput(): string[] {
    return [...this.stray];
  }

  async send(message: JSONRPCMessage): Promise<void> {
    if (this.closed) throw new Error('the server has exited');
    this.child.write(serializeMessage(message));
  }

  async close(): Promise<void> {
    await this.child.stop(this.graceMs);
    this.finish();
  }

  private finish(): void {
    if (this.closed) return;
    this.closed = true;
    this.buffer.clear();
    this.onclose?.();
  }
}
