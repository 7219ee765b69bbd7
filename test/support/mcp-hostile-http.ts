// A Streamable HTTP MCP server for the tests whose tool big answers with MB megabytes of text in one
// JSON-RPC response (as application/json, or with SSE=1 as one text/event-stream event), streamed
// as it is read. Prints its loopback port once it listens. Run with the installed bun.
export {};
const MB = Number(process.env.MB ?? 20);
const encode = (text: string) => new TextEncoder().encode(text);
const server = Bun.serve({
  hostname: '127.0.0.1',
  port: 0,
  async fetch(request) {
    if (request.method !== 'POST') return new Response(null, { status: 405 });
    const message = (await request.json()) as { id?: string | number; method: string; params?: { protocolVersion?: string; arguments?: { mb?: number } } };
    if (message.id === undefined) return new Response(null, { status: 202 });
    const json = (result: unknown) => Response.json({ jsonrpc: '2.0', id: message.id, result });
    if (message.method === 'initialize') {
      return json({ protocolVersion: message.params?.protocolVersion, capabilities: { tools: {} }, serverInfo: { name: 'hostile-http', version: '1' } });
    }
    if (message.method === 'tools/list') return json({ tools: [{ name: 'big', description: 'MB megabytes of text', inputSchema: { type: 'object', properties: { mb: { type: 'number' } } } }] });
    const mb = message.params?.arguments?.mb ?? MB;
    const sse = process.env.SSE === '1';
    const megabyte = encode('A'.repeat(1 << 20));
    let sent = 0;
    const body = new ReadableStream<Uint8Array>({
      start(c) {
        c.enqueue(encode(`${sse ? 'event: message\ndata: ' : ''}{"jsonrpc":"2.0","id":${JSON.stringify(message.id)},"result":{"content":[{"type":"text","text":"`));
      },
      pull(c) {
        if (sent++ < mb) return c.enqueue(megabyte);
        c.enqueue(encode(`"}]}}${sse ? '\n\n' : ''}`));
        c.close();
      },
    });
    return new Response(body, { headers: { 'content-type': sse ? 'text/event-stream' : 'application/json' } });
  },
});
console.log(server.port);
