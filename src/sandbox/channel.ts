// The host end of a sandboxed command's relay channel (relay.ts): frames in, one connection to the
// proxy per relayed connection, frames out. Writes never block conch's event loop: a full socket
// buffer (EAGAIN) queues the rest and retries shortly.
//
// Both directions are flow-controlled, so what conch holds for a command stays bounded whatever the
// command does. Uploads are windowed per connection: the relay sends at most WINDOW bytes of one
// connection that its proxy connection has not taken, and a CREDIT frame gives them back as it takes
// them. So a host that reads slowly (or not at all) stalls only its own connection, in the sandbox,
// and the other connections' opens and uploads go on (with a channel-wide stop instead, one stalled
// upload held up every connection of the command, and the opens of new ones). A relay that does not
// read (stopped, busy) pauses the proxy's connections until the queue drains; the relay, which caps
// what it buffers, then stops reading its clients. Conch reads no frames then either: each may make a
// reply (CLOSE for an OPEN past the limit, CREDIT for DATA), and a command writing the channel itself
// without reading it had conch queue every one (48 MiB of OPENs: 600 MiB of RSS, 135 now); the writer
// that does not read is the one that waits.
import { closeSync, writeSync } from 'node:fs';
import type net from 'node:net';
import { WINDOW } from './relay.ts';

const OPEN = 1;
const DATA = 2;
const CLOSE = 3;
/** conch to relay: payload u32, bytes of that connection the proxy's side has taken. */
const CREDIT = 4;
/** Bytes queued for the relay before the proxy's connections are paused and no more frames are read. */
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
// So uploads conch holds are at most WINDOW for each connection, 32 MiB for all 512 together (and a
// connection whose upload comes faster than its proxy connection takes it has a WINDOW buffer more).

export interface Channel {
  close(): void;
}

/** A connection's upload: bytes written to its proxy connection, or waiting, that it has not taken yet. */
interface Upload {
  held: number;
  /** A write to the proxy connection is under way; what comes meanwhile waits in `next`. */
  busy: boolean;
  next: Buffer | null;
  fill: number;
}

export function attachChannel(fd: number, connect: () => net.Socket): Channel {
  const conns = new Map<number, net.Socket>();
  const queue: Buffer[] = [];
  let queued = 0;
  const uploads = new Map<number, Upload>();
  let paused = false;
  /** Set while the frame reader waits for the queue to drain. */
  let wake: (() => void) | null = null;
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
      wake?.();
    }
  };
  const send = (type: number, id: number, data?: Buffer | number) => {
    if (closed) return;
    if (typeof data === 'number') {
      const credit = Buffer.alloc(4);
      credit.writeUInt32BE(data, 0);
      data = credit;
    }
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
    wake?.();
  };

  const open = (id: number) => {
    if (conns.size >= MAX_CONNECTIONS) return send(CLOSE, id);
    const sock = connect();
    conns.set(id, sock);
    uploads.set(id, { held: 0, busy: false, next: null, fill: 0 });
    if (paused) sock.pause();
    sock.on('data', (d: Buffer) => send(DATA, id, d));
    sock.on('error', () => sock.destroy());
    sock.on('close', () => {
      if (conns.get(id) === sock) {
        conns.delete(id);
        uploads.delete(id);
        send(CLOSE, id);
      }
    });
  };

  // One write at a time to a proxy connection; what comes meanwhile is copied into the next one. The
  // window bounds bytes, not frames: a command writing the channel itself sent 48 connections'
  // windows a byte a frame, a write each, which piled up in conch (a Unix socket takes a few hundred
  // small writes at a time) to 1.8 GiB of RSS.
  const upload = (id: number, sock: net.Socket, up: Upload, data: Buffer) => {
    up.busy = true;
    // Called once the proxy's side took it, or with an error when the connection went.
    sock.write(data, () => {
      if (conns.get(id) !== sock) return;
      up.held -= data.length;
      send(CREDIT, id, data.length);
      up.busy = false;
      if (!up.fill) return;
      const more = Buffer.from(up.next!.subarray(0, up.fill));
      up.fill = 0;
      upload(id, sock, up, more);
    });
  };

  void (async () => {
    let pending = Buffer.alloc(0);
    try {
      reading: for await (const chunk of Bun.file(fd).stream()) {
        pending = pending.length ? Buffer.concat([pending, chunk]) : Buffer.from(chunk);
        while (pending.length >= 9) {
          if (paused) {
            await new Promise<void>((resolve) => (wake = resolve));
            wake = null;
            if (closed) break reading;
          }
          const length = pending.readUInt32BE(5);
          if (length > MAX_FRAME) throw new Error('not a frame the relay sends');
          if (pending.length < 9 + length) break;
          const type = pending.readUInt8(0);
          const id = pending.readUInt32BE(1);
          const data = pending.subarray(9, 9 + length);
          pending = pending.subarray(9 + length);
          if (type === OPEN && !conns.has(id)) open(id);
          else if (type === DATA) {
            // The relay sends none (it would be a write to the proxy and a CREDIT back, for nothing).
            if (!length) throw new Error('an empty upload');
            const sock = conns.get(id);
            const up = uploads.get(id);
            if (sock && up) {
              // The relay never sends past its window; a command writing the channel itself may.
              if (up.held + length > WINDOW) throw new Error('past the window');
              up.held += length;
              if (!up.busy) upload(id, sock, up, data);
              else {
                up.next ??= Buffer.allocUnsafe(WINDOW);
                up.fill += data.copy(up.next, up.fill);
              }
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
