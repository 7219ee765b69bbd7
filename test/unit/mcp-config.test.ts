// MCP server entries: shapes, ${VAR} expansion, names, and the result mapping, as pure functions.
import { describe, expect, test } from 'bun:test';
import { expandVars, parseServers } from '../../src/mcp/config.ts';
import { toToolResult } from '../../src/mcp/results.ts';
import { toolName } from '../../src/mcp/tools.ts';

const ctx = { source: '/c/config.json', project: false, env: { TOKEN: 'abc', EMPTY: '' } };

describe('MCP server config', () => {
  test('stdio and HTTP entries with defaults; ${VAR} and ${VAR:-default} expanded in env, args and headers', () => {
    const [stdio, http] = parseServers(
      {
        gh: { command: 'gh-mcp', args: ['--token=${TOKEN}'], env: { T: '${TOKEN}', D: '${NOPE:-fallback}' } },
        docs: { type: 'http', url: 'http://localhost:1/mcp', headers: { Authorization: 'Bearer ${TOKEN}' }, toolTimeoutMs: 5000 },
      },
      ctx,
    );
    expect(stdio).toMatchObject({ transport: 'stdio', args: ['--token=abc'], env: { T: 'abc', D: 'fallback' }, workspace: 'read', network: null, startupTimeoutMs: 10_000, toolTimeoutMs: 60_000 });
    expect(stdio!.problem).toBeUndefined();
    expect(http).toMatchObject({ transport: 'http', headers: { Authorization: 'Bearer abc' }, toolTimeoutMs: 5000 });
  });

  test('an unset variable without default marks the server, naming the variable', () => {
    const [s] = parseServers({ gh: { command: 'x', env: { T: '${GITHUB_TOKEN}' } } }, ctx);
    expect(s!.problem).toContain('${GITHUB_TOKEN} is not set');
    expect(expandVars('${EMPTY:-d}', ctx.env, new Set())).toBe('d');
  });

  test('an SSE server is not started, saying why, and the servers beside it are read as usual', () => {
    const [sse, other] = parseServers({ s: { type: 'sse', url: 'http://x/sse' }, gh: { command: 'x' } }, ctx);
    expect(sse).toMatchObject({ name: 's', transport: 'http' });
    expect(sse!.problem).toBe('its "type" is "sse" (mcpServers.s in /c/config.json), which conch does not speak; give the server\'s Streamable HTTP endpoint instead ("type": "http")');
    expect(other).toMatchObject({ name: 'gh', transport: 'stdio', command: 'x' });
    expect(other!.problem).toBeUndefined();
  });

  test('malformed entries are ConfigErrors naming the key', () => {
    expect(() => parseServers({ gh: { command: 'x', workspace: 'rw' } }, ctx)).toThrow('"mcpServers.gh.workspace"');
    expect(() => parseServers({ 'bad name': { command: 'x' } }, ctx)).toThrow('is not a valid server name');
    expect(() => parseServers({ s: { url: 'ftp://x' } }, ctx)).toThrow('http:// or https://');
  });

  test('tool names keep the server spelling within 64 characters', () => {
    expect(toolName('everything', 'get-sum')).toBe('mcp__everything__get-sum');
    expect(toolName('s', 'a.b c')).toBe('mcp__s__a_b_c');
    expect(toolName('s', 'x'.repeat(100)).length).toBe(64);
  });
});

// The first bytes of a PNG: images are sent as what their bytes are.
const PNG = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]).toString('base64');

describe('MCP results', () => {
  test('text, image, resource link, embedded text and blob resources, structuredContent, isError', () => {
    const r = toToolResult({
      content: [
        { type: 'text', text: 'hi' },
        { type: 'image', data: PNG, mimeType: 'image/png' },
        { type: 'resource_link', uri: 'file:///a.txt', name: 'a.txt', mimeType: 'text/plain' },
        { type: 'resource', resource: { uri: 'mem://b', text: 'body' } },
        { type: 'resource', resource: { uri: 'mem://c', blob: 'AAAA', mimeType: 'application/gzip' } },
      ],
      isError: true,
    });
    expect(r.isError).toBe(true);
    expect(r.content[0]).toEqual({ type: 'text', text: 'hi' });
    expect(r.content[1]).toEqual({ type: 'image', mediaType: 'image/png', data: PNG });
    expect(JSON.stringify(r.content[2])).toContain('a.txt: file:///a.txt (text/plain)');
    expect(JSON.stringify(r.content[3])).toContain('body');
    expect(JSON.stringify(r.content[4])).toContain('3 bytes of binary data, not shown');
    const s = toToolResult({ content: [], structuredContent: { sum: 3 } });
    expect(s.content).toEqual([{ type: 'text', text: '{"sum":3}' }]);
    expect(s.details).toEqual({ structuredContent: { sum: 3 } });
  });
});
