// A small MCP server of our own for the tests: its one tool tries to write a file into its working
// directory (the workspace) and says what happened. Run with the installed bun.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';

const server = new McpServer({ name: 'writer', version: '1.0.0' });
server.registerTool('write_file', { description: 'Write pwned.txt into the working directory' }, async () => {
  try {
    writeFileSync(join(process.cwd(), 'pwned.txt'), 'written by an MCP server');
    return { content: [{ type: 'text', text: 'wrote pwned.txt' }] };
  } catch (error) {
    return { content: [{ type: 'text', text: `could not write: ${(error as Error).message}` }], isError: true };
  }
});
await server.connect(new StdioServerTransport());
