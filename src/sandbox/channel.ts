// The host end of a sandboxed command's relay channel (relay.ts): frames in, one connection to the
// proxy per relayed connection, frames out. Writes never block conch's event loop: a full socket
// buffer (EAGAIN) queues the rest and retries shortly.
//
// Both directions are flow-controlled, so what conch holds for a command stays bounded whatever the
// command does: uploads to hosts that read slowly (or not at all) stop the reading of frames once
// the proxy's connections together hold HIGH_WATER, until they take it, and a relay that does not read (stopped, busy) pauses the
// proxy's connections until the queue drains; the relay, which caps what it buffers, then stops
// reading its clients. Frames share one channel, so a stalled connection holds up the others' uploads
// while it stalls.
import { closeSync, writeSync } from 'node:fs';
import type net from 'node:net';

const OPEN = 1;
const DATA = 2;
const CLOSE = 3;
/** Bytes held for one side before the other is made to wait. */
const HIGH_WATER = 4 * 1024 * 1024;
/**
 * The relay sends at most 64 KiB in a frame. The channel is the command's to write as well (it can
 * take the relay's descriptor, pidfd_getfd, or its memory: same user), so a frame claiming more
 * ends the channel instead of being waited for (a length of 4 GiB had conch buffer, and copy again
 * on every read, all the command sent: 690 MiB of RSS for 48 MiB).
 */
const MAX_FRAME = 256 * 1024;
/** Connections open at once on one channel: each costs conch two descriptors. */
const MAX_CONNECTIONS = 512;

export interface Channel {
  close(): void;
}

export function attachChannel(fd: number, connect: () => net.Socket): Channel {
  const conns = new Map<number, net.Socket>();
  const queue: Buffer[] = [];
  let queued = 0;
  /** Bytes written to the proxy's connections that they have not taken yet, all connections together. */
  let held = 0;
  let wake: (() => void) | null = null;
  let paused = false;
  let closed = false;
  let retry: ReturnType<typeof setTimeout> | null = null;

  const flush = () => {
    retry = null;
    while (queue.length && !closed) {
      const chunk = queue[0]!;
      let n: number;
      try {
        n = writeSync(fd, chunk);
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === 'EAGAIN') {
          retry = setTimeout(flush, 1);
          return;
        }
        return shut(); // the relay is gone: the command ended
      }
      queued -= n;
      if (n < chunk.length) queue[0] = chunk.subarray(n);
      else queue.shift();
    }
    if (paused && queued < HIGH_WATER / 2) {
      paused = false;
      for (const s of conns.values()) s.resume();
    }
  };
  const send = (type: number, id: number, data?: Buffer) => {
    if (closed) return;
    const header = Buffer.alloc(9);
    header.writeUInt8(type, 0);
    header.writeUInt32BE(id, 1);
    header.writeUInt32BE(data?.length ?? 0, 5);
    const frame = data ? Buffer.concat([header, data]) : header;
    queue.push(frame);
    queued += frame.length;
    if (!retry) flush();
    if (!paused && queued >= HIGH_WATER) {
      paused = true;
      for (const s of conns.values()) s.pause();
    }
  };
  const shut = () => {
    if (closed) return;
    closed = true;
    if (retry) clearTimeout(retry);
    for (const s of conns.values()) s.destroy();
    conns.clear();
  };

  const open = (id: number) => {
    if (conns.size >= MAX_CONNECTIONS) return send(CLOSE, id);
    const sock = connect();
    conns.set(id, sock);
    if (paused) sock.pause();
    sock.on('data', (d: Buffer) => send(DATA, id, d));
    sock.on('error', () => sock.destroy());
    sock.on('close', () => {
      if (conns.get(id) === sock) {
        conns.delete(id);
        send(CLOSE, id);
      }
    });
  };

  void (async () => {
    let pending = Buffer.alloc(0);
    try {
      for await (const chunk of Bun.file(fd).stream()) {
        pending = pending.length ? Buffer.concat([pending, chunk]) : Buffer.from(chunk);
        while (pending.length >= 9) {
          const length = pending.readUInt32BE(5);
          if (length > MAX_FRAME) throw new Error('not a frame the relay sends');
          if (pending.length < 9 + length) break;
          const type = pending.readUInt8(0);
          const id = pending.readUInt32BE(1);
          const data = pending.subarray(9, 9 + length);
          pending = pending.subarray(9 + length);
          if (type === OPEN && !conns.has(id)) open(id);
          else if (type === DATA) {
            const sock = conns.get(id);
            if (sock) {
              const n = data.length;
              held += n;
              // Called once the proxy's side took it, or with an error when the connection went.
              sock.write(data, () => {
                held -= n;
                if (wake && held < HIGH_WATER) wake();
              });
              // Read no further frames until the proxy's connections have taken this much: all of
              // them together, since a command opens hundreds (each held 4 MiB: 2 GiB for 512).
              if (held >= HIGH_WATER) await new Promise<void>((resolve) => (wake = () => ((wake = null), resolve())));
            }
          } else if (type === CLOSE) conns.get(id)?.end();
        }
      }
    } catch {
      // the relay went away mid-frame, or the command wrote to the channel itself: same as its end
    }
    shut();
    // Bun leaves a spawned child's extra 'pipe' open in the parent; the reader is done with it now.
    try {
      closeSync(fd);
    } catch {
      // already closed
    }
  })();

  return { close: shut };
}
