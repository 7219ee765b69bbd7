// An OTLP/HTTP trace receiver for tests, on 127.0.0.1 and port 0: it keeps every request body as
// received (raw bytes, so a test can grep all of it, protobuf included) and reads the JSON ones
// into flat spans.

export interface Received {
  path: string;
  contentType: string;
  headers: Record<string, string>;
  body: Uint8Array;
}

export type AttributeValue = string | number | boolean | AttributeValue[] | null;

export interface ReceivedSpan {
  name: string;
  traceId: string;
  spanId: string;
  parentSpanId: string;
  kind: number;
  /** 0 unset, 1 ok, 2 error. */
  status: { code: number; message?: string };
  attributes: Record<string, AttributeValue>;
  events: { name: string; attributes: Record<string, AttributeValue> }[];
  /** The resource's attributes (service.name …). */
  resource: Record<string, AttributeValue>;
}

export interface OtlpReceiver {
  readonly url: string;
  readonly received: Received[];
  /** Every span of every JSON request, in arrival order. */
  spans(): ReceivedSpan[];
  /** All bytes received, bodies and headers, as one string to search. */
  everything(): string;
  close(): Promise<void>;
}

export async function startOtlpReceiver(): Promise<OtlpReceiver> {
  const received: Received[] = [];
  const server = Bun.serve({
    hostname: '127.0.0.1',
    port: 0,
    async fetch(request) {
      const contentType = request.headers.get('content-type') ?? '';
      received.push({ path: new URL(request.url).pathname, contentType, headers: Object.fromEntries(request.headers), body: new Uint8Array(await request.arrayBuffer()) });
      // An empty ExportTraceServiceResponse: all spans accepted.
      return contentType.includes('json')
        ? new Response('{}', { headers: { 'content-type': 'application/json' } })
        : new Response(new Uint8Array(), { headers: { 'content-type': 'application/x-protobuf' } });
    },
  });
  return {
    url: `http://127.0.0.1:${server.port}`,
    received,
    spans: () => received.filter((r) => r.contentType.includes('json')).flatMap((r) => spansOf(JSON.parse(new TextDecoder().decode(r.body)))),
    everything: () => received.map((r) => `${JSON.stringify(r.headers)}\n${new TextDecoder().decode(r.body)}`).join('\n'),
    close: () => server.stop(true),
  };
}

/** A port nothing listens on: bound, then closed again. */
export async function closedPort(): Promise<number> {
  const server = Bun.serve({ hostname: '127.0.0.1', port: 0, fetch: () => new Response() });
  const port = server.port!;
  await server.stop(true);
  return port;
}

function spansOf(request: any): ReceivedSpan[] {
  return (request.resourceSpans ?? []).flatMap((rs: any) => {
    const resource = attributesOf(rs.resource?.attributes);
    return (rs.scopeSpans ?? []).flatMap((ss: any) =>
      (ss.spans ?? []).map((s: any): ReceivedSpan => ({
        name: s.name,
        traceId: s.traceId,
        spanId: s.spanId,
        parentSpanId: s.parentSpanId ?? '',
        kind: s.kind,
        status: s.status ?? { code: 0 },
        attributes: attributesOf(s.attributes),
        events: (s.events ?? []).map((e: any) => ({ name: e.name, attributes: attributesOf(e.attributes) })),
        resource,
      })),
    );
  });
}

function attributesOf(list: any[] | undefined): Record<string, AttributeValue> {
  return Object.fromEntries((list ?? []).map((kv: any) => [kv.key, valueOf(kv.value)]));
}

function valueOf(v: any): AttributeValue {
  if (v === undefined || v === null) return null;
  if ('stringValue' in v) return v.stringValue;
  if ('boolValue' in v) return v.boolValue;
  if ('intValue' in v) return Number(v.intValue);
  if ('doubleValue' in v) return v.doubleValue;
  if ('arrayValue' in v) return (v.arrayValue.values ?? []).map(valueOf);
  return null;
}
