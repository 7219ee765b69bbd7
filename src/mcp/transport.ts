// The MCP SDK's Transport over a child conch started itself (through the sandbox, process/piped.ts),
// instead of the SDK's StdioClientTransport, which spawns with its own environment rules and no
// sandbox. Framing is the SDK's own (newline-delimited JSON-RPC).
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import { ReadBuffer, serializeMessage } from '@modelcontextprotocol/sdk/shared/stdio.js';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import type { PipedProcess } from '../process/piped.ts';

export class PipedTransport implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: (message: JSONRPCMessage) => void;
  private readonly buffer = new ReadBuffer();
  private closed = false;

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
        this.buffer.append(Buffer.from(chunk));
        for (;;) {
          let message: JSONRPCMessage | null;
          try {
            message = this.buffer.readMessage();
          } catch (error) {
            // A line that is not JSON-RPC (a server printing to stdout): report it, keep reading.
            this.onerror?.(error as Error);
            continue;
          }
          if (!message) break;
          this.onmessage?.(message);
        }
      }
    } catch (error) {
      if (!this.closed) this.onerror?.(error as Error);
    }
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
