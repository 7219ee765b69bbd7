// Shared frame for the MCP tests: the real server-everything (a dev dependency nobody here wrote)
// and our own writer server, both run with the installed bun, never downloaded at test time.
import { join } from 'node:path';
import { BUN, REPO } from '../support/cli.ts';

export const EVERYTHING = join(REPO, 'node_modules/@modelcontextprotocol/server-everything/dist/index.js');
export const WRITER = join(REPO, 'test/support/mcp-writer.ts');

/** server-everything over stdio; `marker` is an ignored extra argument that pgrep can find. */
export function everything(marker: string, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return { command: BUN, args: [EVERYTHING, 'stdio', marker], ...extra };
}

/** Pids of live processes whose command line contains `marker`. */
export async function processesWith(marker: string): Promise<number[]> {
  const p = Bun.spawn(['pgrep', '-f', marker], { stdout: 'pipe', stderr: 'ignore' });
  const out = await new Response(p.stdout).text();
  await p.exited;
  return out.split('\n').filter(Boolean).map(Number);
}

/** Poll until `check` holds (the exit paths end asynchronously); gives up after `tries` rounds. */
export async function eventually(check: () => Promise<boolean>, tries = 100): Promise<boolean> {
  for (let i = 0; i < tries; i++) {
    if (await check()) return true;
    await Bun.sleep(50);
  }
  return false;
}

/**
 * server-everything over Streamable HTTP on a free loopback port, once it says it listens; `stop`
 * kills it and waits.
 */
export async function httpEverything(): Promise<{ url: string; stop(): Promise<void> }> {
  const probe = Bun.serve({ hostname: '127.0.0.1', port: 0, fetch: () => new Response('') });
  const port = probe.port;
  probe.stop(true);
  const http = Bun.spawn([BUN, EVERYTHING, 'streamableHttp'], { env: { PATH: process.env.PATH ?? '/usr/bin:/bin', PORT: String(port) }, stdout: 'ignore', stderr: 'pipe' });
  const stop = async () => {
    http.kill();
    await http.exited;
  };
  try {
    // It says so on stderr once it listens.
    const reader = http.stderr.getReader();
    let said = '';
    while (!said.includes('listening')) {
      const { done, value } = await reader.read();
      if (done) throw new Error(`server-everything did not start: ${said}`);
      said += new TextDecoder().decode(value);
    }
    reader.releaseLock();
  } catch (error) {
    await stop();
    throw error;
  }
  return { url: `http://127.0.0.1:${port}/mcp`, stop };
}
