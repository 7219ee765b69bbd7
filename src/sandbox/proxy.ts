// The host side of the network allowlist: an HTTP proxy (CONNECT and plain absolute-form HTTP) that
// conch runs for the duration of a run on a Unix socket in the run's private directory. Sandboxed
// commands reach it only through their relay (relay.ts) and channel (channel.ts).
//
// Order of checks, and why: the allowlist is matched on the authority the client sent (CONNECT
// host:port, or the URL's host) before any DNS lookup, so a denied name is never resolved; an
// allowed name is then resolved and refused if any of its addresses is loopback, private,
// link-local (cloud metadata), otherwise internal or this machine's own (net-addresses.ts) — that is
// what stops DNS rebinding of an allowed name onto this machine — unless the rule names that address
// literally. Conch connects to the
// checked address itself, so no second lookup can differ.
//
// Only the phases before a tunnel is up are bounded in time (the head, then the lookup and connect
// together); an established tunnel may idle as long as it likes (a long download, a websocket).
// Every reply ends the connection whole: a half-open one would stay until the client closed it.
import { lookup as dnsLookup } from 'node:dns/promises';
import { rmSync } from 'node:fs';
import net from 'node:net';
import { join } from 'node:path';
import { restrictedAddress } from './net-addresses.ts';
import { matchRule, normalizeHost, type AllowRule } from './net-rules.ts';

export type Lookup = (host: string) => Promise<string[]>;

export interface Denial {
  target: string;
  /** One line for the tool result: what was refused, by which rule, and what would allow it. */
  message: string;
}

export interface NetworkProxy {
  readonly socketPath: string;
  /** How many connections were refused so far: a command's refusals are those after the count at its start. */
  refusals(): number;
  /**
   * The refusals after the first `since` as lines for a tool result: each distinct message once, at
   * most MAX_NOTES, then one line saying how many more. A command can be refused as fast as it
   * connects (thousands a second, each to another port), so neither what conch keeps nor what
   * goes to the model grows with them: 30,000 refusals were 6.3 MB of notes in one bash result.
   */
  notesSince(since: number): string[];
  connect(): net.Socket;
  close(): Promise<void>;
}

const MAX_HEAD = 64 * 1024;

export interface ProxyTimeouts {
  /**
   * From accepting a connection to its complete request head. Clients are programs with the whole
   * head ready, so this is generous; it only bounds what a stalled or slow-dripping one holds
   * (a socket and up to MAX_HEAD), since a command can open them as fast as it likes.
   */
  headMs: number;
  /**
   * From the complete head to the upstream connection, the lookup included: 30 s covers the
   * resolver's own retries (glibc: 5 s per attempt, 2 attempts) and a slow handshake, like curl's
   * and squid's connect timeouts, without holding a client on a host that never answers.
   */
  connectMs: number;
}

const DEFAULT_TIMEOUTS: ProxyTimeouts = { headMs: 30_000, connectMs: 30_000 };
/** Refusals kept for notes (the latest); older ones are only counted. */
const MAX_KEPT = 256;
/** Distinct refusal messages in one command's notes. */
const MAX_NOTES = 20;
const defaultLookup: Lookup = async (host) => (await dnsLookup(host, { all: true, verbatim: true })).map((a) => a.address);

export async function startProxy(options: { allow: AllowRule[]; dir: string; lookup?: Lookup; source: string; timeouts?: Partial<ProxyTimeouts> }): Promise<NetworkProxy> {
  const socketPath = join(options.dir, `net-proxy-${process.pid}.sock`);
  const lookup = options.lookup ?? defaultLookup;
  const timeouts = { ...DEFAULT_TIMEOUTS, ...options.timeouts };
  const kept: Denial[] = [];
  let refused = 0;
  const deny = (d: Denial) => {
    refused++;
    kept.push(d);
    if (kept.length > MAX_KEPT) kept.shift();
  };
  const open = new Set<net.Socket>();
  const server = net.createServer({ allowHalfOpen: true }, (client) => {
    open.add(client);
    client.on('close', () => open.delete(client));
    client.on('error', () => client.destroy());
    handle(client, { allow: options.allow, lookup, source: options.source, deny, open, timeouts });
  });
  rmSync(socketPath, { force: true });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(socketPath, () => resolve());
  });
  return {
    socketPath,
    refusals: () => refused,
    notesSince: (since) => {
      const count = refused - since;
      if (count <= 0) return [];
      const shown = new Set<string>();
      let covered = 0;
      for (const d of kept.slice(Math.max(0, kept.length - count))) {
        if (!shown.has(d.message) && shown.size < MAX_NOTES) shown.add(d.message);
        if (shown.has(d.message)) covered++;
      }
      const more = count - covered;
      return more > 0 ? [...shown, `network: and ${more} more connection${more === 1 ? '' : 's'} refused by the network allowlist (${options.source}).`] : [...shown];
    },
    // Not half-open: the proxy's end of a connection (a reply, the upstream's end of a tunnel) must
    // reach the relay as the connection's close, and a half-open socket is never told that the
    // proxy closed it whole (no 'close' until a write fails), so the sandboxed client never saw
    // its end. A tunnel whose server ends is then ended, as squid does.
    connect: () => net.connect({ path: socketPath }),
    close: async () => {
      for (const s of open) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      rmSync(socketPath, { force: true });
    },
  };
}

interface Context {
  allow: AllowRule[];
  lookup: Lookup;
  source: string;
  deny(d: Denial): void;
  open: Set<net.Socket>;
  timeouts: ProxyTimeouts;
}

function reply(client: net.Socket, status: string, text: string, rule?: string): void {
  const body = `${text}\n`;
  client.end(
    `HTTP/1.1 ${status}\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n` +
      `${rule ? `X-Conch-Rule: ${rule}\r\n` : ''}\r\n${body}`,
    // Once written, closed whole: a client keeping its own side open must not hold the socket.
    () => client.destroy(),
  );
}

const seconds = (ms: number) => `${ms / 1000} s`;

/** Whether the client has had its answer (or is gone): nothing more is to be sent on it. */
const answered = (client: net.Socket) => client.writableEnded || client.destroyed;

/** Runs `expire` after `ms` unless cleared first or the client is answered or closed; returns the clear. */
function deadline(client: net.Socket, ms: number, expire: () => void): () => void {
  const timer = setTimeout(() => answered(client) || expire(), ms);
  const clear = () => clearTimeout(timer);
  client.once('close', clear);
  return clear;
}

function handle(client: net.Socket, ctx: Context): void {
  let head = Buffer.alloc(0);
  const done = () => {
    client.off('data', onData);
    client.off('end', onEnd);
    clear();
  };
  const onData = (chunk: Buffer) => {
    head = Buffer.concat([head, chunk]);
    const end = head.indexOf('\r\n\r\n');
    // The limit holds wherever the head ends: a chunk may carry past it and the end together.
    if (end === -1 ? head.length > MAX_HEAD : end > MAX_HEAD) {
      done();
      reply(client, '431 Request Header Fields Too Large', `conch proxy: request head larger than ${MAX_HEAD} bytes`);
      return;
    }
    if (end === -1) return;
    done();
    client.pause();
    void route(client, head.subarray(0, end).toString('latin1'), head.subarray(end + 4), ctx);
  };
  const onEnd = () => {
    done();
    reply(client, '400 Bad Request', 'conch proxy: the request head ended incomplete (no blank line after it)');
  };
  const clear = deadline(client, ctx.timeouts.headMs, () => {
    done();
    reply(client, '408 Request Timeout', `conch proxy: no complete request head within ${seconds(ctx.timeouts.headMs)}`);
  });
  client.on('data', onData);
  client.on('end', onEnd);
}

function authority(text: string, defaultPort: number): { host: string; port: number } | null {
  const m = /^(\[[^\]]+\]|[^:/\s]+)(?::(\d{1,5}))?$/.exec(text);
  if (!m) return null;
  const port = m[2] === undefined ? defaultPort : Number(m[2]);
  return port >= 1 && port <= 65535 ? { host: normalizeHost(m[1]!), port } : null;
}

async function route(client: net.Socket, head: string, rest: Buffer, ctx: Context): Promise<void> {
  // A line end of one character (some servers take a lone LF as one) would carry a header past the
  // ones replaced below, a second Host among them: such a head is refused (RFC 9112 §2.2 allows it).
  if (/\r(?!\n)|(?<!\r)\n/.test(head)) {
    reply(client, '400 Bad Request', 'conch proxy: the request head has a line end other than CRLF');
    return;
  }
  const [requestLine = '', ...headers] = head.split('\r\n');
  const [method = '', target = '', version = 'HTTP/1.1'] = requestLine.split(' ');
  let where: { host: string; port: number } | null;
  let path = '';
  let site = '';
  if (method === 'CONNECT') where = authority(target, 443);
  else {
    const m = /^http:\/\/([^/?#]+)([^#]*)$/i.exec(target);
    where = m ? authority(m[1]!, 80) : null;
    path = m ? m[2] || '/' : '';
    site = m ? m[1]! : '';
  }
  if (!where) {
    reply(client, '400 Bad Request', `conch proxy: expected "CONNECT host:port" or an absolute http:// URL, got "${requestLine.slice(0, 200)}"`);
    return;
  }
  const shown = `${where.host.includes(':') ? `[${where.host}]` : where.host}:${where.port}`;
  const refuse = (message: string, rule: string) => {
    ctx.deny({ target: shown, message });
    reply(client, '403 Forbidden', message, rule);
  };
  const rule = matchRule(ctx.allow, where.host, where.port);
  if (!rule) {
    refuse(
      `network: ${shown} denied by the network allowlist (${ctx.source}): no rule allows it. Only the user can allow it (--allow-net ${shown} or sandbox.network.allow in config).`,
      'sandbox.network.allow',
    );
    return;
  }
  // One deadline for the lookup and the connect; a lookup cannot be cancelled, so a late answer is dropped.
  let upstream: net.Socket | null = null;
  const clear = deadline(client, ctx.timeouts.connectMs, () => {
    upstream?.destroy();
    reply(client, '504 Gateway Timeout', `conch proxy: ${shown} did not ${upstream ? 'accept the connection' : 'resolve'} within ${seconds(ctx.timeouts.connectMs)}`);
  });
  let addresses: string[];
  try {
    addresses = net.isIP(where.host) ? [where.host] : await ctx.lookup(where.host);
  } catch (error) {
    if (!answered(client)) reply(client, '502 Bad Gateway', `conch proxy: cannot resolve ${where.host}: ${(error as Error).message}`);
    return;
  }
  if (answered(client)) return;
  for (const address of addresses) {
    const why = restrictedAddress(address);
    if (why && !(rule.literal && rule.host === address)) {
      refuse(
        `network: ${shown} refused: it resolves to ${address}, ${why}, which a name may not reach (rule "${rule.text}" allows the name, not that address). ` +
          `Only the user can allow it, by the address itself (--allow-net ${address.includes(':') ? `[${address}]` : address}:${where.port}).`,
        'sandbox.network.address',
      );
      return;
    }
  }
  if (addresses.length === 0) {
    reply(client, '502 Bad Gateway', `conch proxy: ${where.host} has no address`);
    return;
  }
  const socket = (upstream = net.connect({ host: addresses[0]!, port: where.port, allowHalfOpen: true }));
  ctx.open.add(socket);
  let connected = false;
  socket.on('close', () => {
    ctx.open.delete(socket);
    // Before the connect, the error or the deadline answers the client.
    if (connected) client.destroy();
  });
  client.on('close', () => socket.destroy());
  socket.on('error', (error) => {
    if (connected) client.destroy();
    else if (!answered(client)) reply(client, '502 Bad Gateway', `conch proxy: cannot connect to ${shown}: ${error.message}`);
  });
  socket.on('connect', () => {
    connected = true;
    clear();
    if (method === 'CONNECT') client.write('HTTP/1.1 200 Connection Established\r\n\r\n');
    else {
      // Origin form upstream, one request per connection (so keep-alive cannot switch hosts). The
      // site asked for is the one the allowlist checked: a shared server (a CDN, virtual hosts)
      // serves whichever site the Host header names, so the client's own is replaced, as a proxy
      // must (RFC 9112 §3.2.2). A folded line (leading whitespace) would continue a dropped header.
      const kept = headers.filter((h) => !/^(\s|(host|proxy-connection|proxy-authorization|connection|keep-alive)\s*:)/i.test(h));
      socket.write(`${method} ${path} ${version}\r\nHost: ${site}\r\n${[...kept, 'Connection: close'].join('\r\n')}\r\n\r\n`);
    }
    if (rest.length) socket.write(rest);
    client.pipe(socket);
    socket.pipe(client);
    client.resume();
  });
}
