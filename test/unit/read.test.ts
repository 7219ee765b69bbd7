import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { createHash } from 'node:crypto';
import { chmod, mkdir, mkdtemp, open, realpath, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PolicyError } from '../../src/core/errors.ts';
import type { FileToolDeps } from '../../src/files/deps.ts';
import { createReadTool } from '../../src/tools/kernel/read.ts';
import { fileTools, sha } from '../support/file-tools.ts';
import { Workspace, type WorkspaceOptions } from '../../src/workspace/paths.ts';
import { RevisionTracker } from '../../src/workspace/revision.ts';

let root: string;

beforeAll(async () => {
  root = await realpath(await mkdtemp(join(tmpdir(), 'conch-read-')));
});
afterAll(async () => {
  await rm(root, { recursive: true, force: true });
});

async function setup(over: Partial<FileToolDeps> = {}, wsOptions: Partial<WorkspaceOptions> = {}) {
  const { deps, run, read } = await fileTools(root, over, wsOptions);
  return { deps, read: (args: Record<string, unknown>) => run(read, args) };
}

async function file(name: string, content: string | Uint8Array): Promise<string> {
  const path = join(root, name);
  await mkdir(join(path, '..'), { recursive: true });
  await writeFile(path, content);
  return path;
}

const numbered = (from: number, to: number, line: (n: number) => string) => {
  const width = String(to).length;
  return Array.from({ length: to - from + 1 }, (_, i) => `${String(from + i).padStart(width)}\t${line(from + i)}`).join('\n');
};

describe('text pages', () => {
  test('a small file comes back whole, numbered, with its revision', async () => {
    const content = 'alpha\nbeta\ngamma\n';
    await file('small.txt', content);
    const { read, deps } = await setup();
    const r = await read({ path: 'small.txt' });
    expect(r.isError).toBeUndefined();
    expect(r.text).toBe(`1\talpha\n2\tbeta\n3\tgamma\n\n[revision ${sha(content)}]\n[lines 1-3 of 3; end of file]`);
    expect(r.details).toEqual({ path: join(root, 'small.txt'), revision: sha(content), totalLines: 3 });
    expect(deps.revisions.lastSeen(join(root, 'small.txt'))).toBe(sha(content));
  });

  test('a last line without a newline is counted', async () => {
    await file('nonl.txt', 'one\ntwo');
    const { read } = await setup();
    expect((await read({ path: 'nonl.txt' })).text).toContain('1\tone\n2\ttwo\n\n');
  });

  test('pages by lines: 2000 by default, with the offset to continue from', async () => {
    await file('many.txt', Array.from({ length: 4500 }, (_, i) => `row ${i + 1}`).join('\n') + '\n');
    const { read } = await setup();
    const first = await read({ path: 'many.txt' });
    expect(first.text.startsWith(numbered(1, 2000, (n) => `row ${n}`))).toBe(true);
    expect(first.text.endsWith('[lines 1-2000 of 4500; continue with offset=2001]')).toBe(true);
    const second = await read({ path: 'many.txt', offset: 2001 });
    expect(second.text.startsWith(numbered(2001, 4000, (n) => `row ${n}`))).toBe(true);
    expect(second.text.endsWith('[lines 2001-4000 of 4500; continue with offset=4001]')).toBe(true);
    const last = await read({ path: 'many.txt', offset: 4001, limit: 10000 });
    expect(last.text.endsWith('[lines 4001-4500 of 4500; end of file]')).toBe(true);
    const some = await read({ path: 'many.txt', offset: 10, limit: 3 });
    expect(some.text).toStartWith('10\trow 10\n11\trow 11\n12\trow 12\n\n');
    expect(some.text).toEndWith('[lines 10-12 of 4500; continue with offset=13]');
  });

  test('pages by bytes (50 KiB by default) without splitting a line', async () => {
    const line = (n: number) => `${String(n).padStart(5, '0')} ${'x'.repeat(93)}`; // 99 bytes + newline
    await file('wide.txt', Array.from({ length: 1000 }, (_, i) => line(i + 1)).join('\n') + '\n');
    const { read } = await setup();
    const r = await read({ path: 'wide.txt' });
    const fits = Math.floor((50 * 1024) / 100); // 512 whole lines
    expect(r.text.startsWith(numbered(1, fits, line) + '\n\n')).toBe(true);
    expect(r.text).toEndWith(`[lines 1-${fits} of 1000 (page limit 50 KiB); continue with offset=${fits + 1}]`);
  });

  test('a page never ends inside a character: a 4-byte emoji at the byte boundary', async () => {
    // Line 1 is 8 bytes + newline; line 2 would cross the 16-byte budget in the middle of 😀.
    await file('emoji.txt', 'abcdefgh\nij😀kl\n');
    const { read } = await setup({ readMaxBytes: 14 });
    const r = await read({ path: 'emoji.txt' });
    expect(r.text).toStartWith('1\tabcdefgh\n\n');
    expect(r.text).toEndWith('[lines 1-1 of 2 (page limit 14 B); continue with offset=2]');
    const cut = await read({ path: 'emoji.txt', offset: 2, limit: 1 });
    expect(cut.text).toStartWith('2\tij😀kl\n');
  });

  test('an over-long line is cut before a split emoji, with a note', async () => {
    const long = 'a'.repeat(50 * 1024 - 2) + '😀' + 'b'.repeat(100);
    await file('long.txt', `short\n${long}\nafter\n`);
    const { read } = await setup();
    const r = await read({ path: 'long.txt', offset: 2 });
    expect(r.text).toStartWith(`2\t${'a'.repeat(50 * 1024 - 2)}\n\n`);
    expect(r.text).not.toContain('\uFFFD');
    expect(r.text).toContain("[line 2 is longer than 50 KiB and was cut; see the rest with bash, e.g. `sed -n '2p' long.txt | cut -b 51201-`]");
    expect(r.text).toEndWith('[lines 2-2 of 3; continue with offset=3]');
  });

  test('CRLF is shown without \\r and noted; a BOM is not shown', async () => {
    await file('crlf.txt', '\uFEFFone\r\ntwo\r\n');
    const { read } = await setup();
    const r = await read({ path: 'crlf.txt' });
    expect(r.text).toStartWith('1\tone\n2\ttwo\n\n');
    expect(r.text).toContain('CRLF line endings');
  });

  test('an empty file, and offsets past the end', async () => {
    await file('empty.txt', '');
    await file('three.txt', 'a\nb\nc\n');
    const { read } = await setup();
    expect((await read({ path: 'empty.txt' })).text).toBe(`[empty.txt is empty; revision ${sha('')}]`);
    const past = await read({ path: 'three.txt', offset: 10 });
    expect(past.isError).toBe(true);
    expect(past.text).toContain('offset 10 is past the end of three.txt: it has 3 lines');
    expect((await read({ path: 'empty.txt', offset: 2 })).isError).toBe(true);
  });
});

describe('revision cache and line index', () => {
  test('later pages of an unchanged file seek from checkpoints and match a full scan', async () => {
    // Lines of varying length over several 1 MiB chunks, so checkpoints fall mid-file.
    const lines = Array.from({ length: 60_000 }, (_, i) => `${i + 1}:${'z'.repeat((i * 37) % 90)}`);
    const content = lines.join('\n') + '\n';
    const path = await file('indexed.txt', content);
    await Bun.sleep(30);
    const { read, deps } = await setup({ revisions: new RevisionTracker({ racyWindowMs: 10 }) });
    const first = await read({ path: 'indexed.txt', offset: 1, limit: 5 });
    expect(first.text).toContain(`[revision ${sha(content)}]`);
    const handle = await open(path, 'r');
    const st = await handle.stat({ bigint: true });
    await handle.close();
    expect(deps.revisions.cached(path, st)?.lines?.checkpoints.length).toBeGreaterThan(2);
    for (const offset of [1, 777, 20_001, 31_234, 59_999]) {
      const r = await read({ path: 'indexed.txt', offset, limit: 3 });
      const to = Math.min(offset + 2, 60_000);
      expect(r.text).toStartWith(numbered(offset, to, (n) => lines[n - 1]!) + '\n\n');
      expect(r.text).toContain(`[revision ${sha(content)}]`);
      expect(r.text).toContain(` of 60000`);
    }
  });

  test('a changed file is rescanned', async () => {
    const path = await file('changing.txt', 'one\n');
    await Bun.sleep(30);
    const { read } = await setup({ revisions: new RevisionTracker({ racyWindowMs: 10 }) });
    await read({ path: 'changing.txt' });
    await writeFile(path, 'one\ntwo\n');
    const r = await read({ path: 'changing.txt' });
    expect(r.text).toBe(`1\tone\n2\ttwo\n\n[revision ${sha('one\ntwo\n')}]\n[lines 1-2 of 2; end of file]`);
  });
});

describe('images and binary files', () => {
  const png = Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), Buffer.from('rest-of-png-bytes')]);

  test('images are detected by magic bytes, not by name', async () => {
    await file('picture.txt', png);
    const { read } = await setup();
    const r = await read({ path: 'picture.txt' });
    expect(r.isError).toBeUndefined();
    expect(r.content[1]).toEqual({ type: 'image', mediaType: 'image/png', data: png.toString('base64') });
    expect(r.text).toContain(`PNG image`);
    for (const [name, bytes, type] of [
      ['a.jpg', Buffer.from([0xff, 0xd8, 0xff, 0xe0, 1, 2]), 'image/jpeg'],
      ['a.gif', Buffer.from('GIF89a....'), 'image/gif'],
      ['a.webp', Buffer.from('RIFF\x10\0\0\0WEBPVP8 '), 'image/webp'],
    ] as const) {
      await file(name, bytes);
      expect((await read({ path: name })).content[1]).toMatchObject({ type: 'image', mediaType: type });
    }
  });

  test('an image over the size cap is refused with a clear message', async () => {
    await file('big.png', Buffer.concat([png, Buffer.alloc(4000, 1)]));
    const { read } = await setup({ maxImageBase64Bytes: 1024 });
    const r = await read({ path: 'big.png' });
    expect(r.isError).toBe(true);
    expect(r.text).toContain('big.png is a PNG image of 3.9 KiB; images over 768 B (1.0 KiB as base64) are not sent');
    expect(r.content.some((c) => c.type === 'image')).toBe(false);
  });

  test('binary files are described, not dumped', async () => {
    await file('data.bin', Buffer.from([0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3]));
    await file('latin1.txt', Buffer.from('caf\xe9 cr\xe8me\n', 'latin1'));
    const { read } = await setup();
    const gz = await read({ path: 'data.bin' });
    expect(gz.text).toContain('data.bin is binary: gzip compressed data, 10 B');
    expect(gz.details?.revision).toBe(sha(Buffer.from([0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3])));
    const latin = await read({ path: 'latin1.txt' });
    expect(latin.text).toContain('latin1.txt is binary: unknown binary data');
    expect(latin.text).not.toContain('caf');
  });
});

describe('errors', () => {
  test('not found names the nearest existing directory and look-alikes', async () => {
    await file('pkg/config.json', '{}');
    const { read } = await setup();
    const typo = await read({ path: 'pkg/confg.json' });
    expect(typo.isError).toBe(true);
    expect(typo.text).toBe('File not found: pkg/confg.json. The nearest existing directory is pkg; did you mean pkg/config.json?');
    const deep = await read({ path: 'pkg/nope/deeper/x.ts' });
    expect(deep.text).toStartWith('File not found: pkg/nope/deeper/x.ts. The nearest existing directory is pkg.');
  });

  test('a directory suggests bash ls', async () => {
    await mkdir(join(root, 'adir'), { recursive: true });
    const { read } = await setup();
    const r = await read({ path: 'adir' });
    expect(r.isError).toBe(true);
    expect(r.text).toContain('adir is a directory');
    expect(r.text).toContain('`ls -la adir`');
  });

  test('permission denied is reported as such', async () => {
    const path = await file('locked/secret.txt', 'x');
    if (process.getuid?.() === 0) {
      // root reads anything; check the message as an unprivileged user instead.
      await chmod(root, 0o755);
      await chmod(join(root, 'locked'), 0o755);
      await chmod(path, 0o600);
      const script = await file('locked-check.ts', lockedScript(path));
      await chmod(script, 0o644);
      const child = Bun.spawnSync(['setpriv', '--reuid=65534', '--regid=65534', '--clear-groups', process.execPath, script], { stderr: 'pipe' });
      expect(child.stderr.toString()).toBe('');
      expect(child.stdout.toString()).toContain('Permission denied: cannot read locked/secret.txt');
    } else {
      await chmod(path, 0o000);
      const { read } = await setup();
      const r = await read({ path: 'locked/secret.txt' });
      expect(r.isError).toBe(true);
      expect(r.text).toContain('Permission denied: cannot read locked/secret.txt');
    }
  });

  test('policy refusals throw PolicyError', async () => {
    await file('.env', 'TOKEN=1');
    const { read } = await setup({}, { denySecretFiles: true });
    const error = await read({ path: '.env' }).catch((e) => e);
    expect(error).toBeInstanceOf(PolicyError);
    expect(error.rule).toBe('read.deny');
  });
});

function lockedScript(path: string): string {
  const src = join(import.meta.dir, '..', '..', 'src');
  return `
    import { createReadTool } from '${src}/tools/kernel/read.ts';
    import { Workspace } from '${src}/workspace/paths.ts';
    import { RevisionTracker } from '${src}/workspace/revision.ts';
    const workspace = await Workspace.open({ root: ${JSON.stringify(root)}, unrestricted: false });
    const tool = createReadTool({ workspace, revisions: new RevisionTracker() });
    const r = await tool.execute({ path: ${JSON.stringify(path)} }, { signal: new AbortController().signal });
    console.log(r.content[0].text);
  `;
}

describe('a 1 GiB sparse file', () => {
  const GiB = 1024 ** 3;
  // Text first (more than the 8 KiB sniffed for binary), then a hole, then text at the end.
  const header = Array.from({ length: 1000 }, (_, i) => `head ${i + 1}\n`).join('');
  // The leading newline ends line 1001, which is the hole: about 1 GiB of NUL bytes.
  const trailer = '\n' + Array.from({ length: 100 }, (_, i) => `tail ${i + 1}\n`).join('');

  beforeAll(async () => {
    const fh = await open(join(root, 'sparse.log'), 'w');
    await fh.write(header, 0);
    await fh.write(trailer, GiB - Buffer.byteLength(trailer));
    await fh.close();
  });

  async function measured<T>(work: () => Promise<T>): Promise<{ value: T; growth: number }> {
    Bun.gc(true);
    const before = process.memoryUsage().rss;
    let peak = before;
    const timer = setInterval(() => (peak = Math.max(peak, process.memoryUsage().rss)), 1);
    try {
      const value = await work();
      return { value, growth: Math.max(peak, process.memoryUsage().rss) - before };
    } finally {
      clearInterval(timer);
    }
  }

  test('its last page is read, with the whole-file revision, without loading the file', async () => {
    const { read } = await setup();
    const { value: r, growth } = await measured(() => read({ path: 'sparse.log', offset: 1090 }));
    expect(r.text).toStartWith(numbered(1090, 1101, (n) => `tail ${n - 1001}`) + '\n\n');
    expect(r.text).toEndWith('[lines 1090-1101 of 1101; end of file]');
    expect(growth).toBeLessThan(64 * 1024 * 1024);

    const hash = createHash('sha256');
    const fh = await open(join(root, 'sparse.log'), 'r');
    const chunk = Buffer.alloc(1 << 20);
    for (let pos = 0, n = 0; (n = (await fh.read(chunk, 0, chunk.length, pos)).bytesRead) > 0; pos += n) hash.update(chunk.subarray(0, n));
    await fh.close();
    expect(r.details?.revision).toBe(hash.digest('hex'));
  }, 60_000);

  test('the 1 GiB line itself comes back cut to one page', async () => {
    const { read } = await setup();
    const { value: r, growth } = await measured(() => read({ path: 'sparse.log', offset: 1001, limit: 5 }));
    expect(r.text).toContain('[line 1001 is longer than 50 KiB and was cut');
    expect(r.text).toEndWith('[lines 1001-1001 of 1101; continue with offset=1002]');
    expect(r.text.length).toBeLessThan(52 * 1024);
    expect(growth).toBeLessThan(64 * 1024 * 1024);
  }, 60_000);
});

describe.skipIf(process.platform !== 'linux')('pseudo-files that report a size of 0 (procfs)', () => {
  test('/proc/self/pagemap, hundreds of GiB behind its size of 0, is described without being read to its end', async () => {
    const { read } = await setup();
    const r = await read({ path: '/proc/self/pagemap' });
    expect(r.isError).toBeUndefined();
    expect(r.text).toMatch(/\/pagemap is binary/);
  });

  test('one that fails to read (/proc/self/mem: EIO at offset 0) is an error naming it, not a thrown one', async () => {
    const { read } = await setup();
    const r = await read({ path: '/proc/self/mem' });
    expect(r.isError).toBe(true);
    expect(r.text).toMatch(/^Cannot read \/proc\/\d+\/mem: input\/output error/);
  });

  test('a text one is read up to the pseudo-file cap, and a page cut there says so', async () => {
    const { read } = await setup({ pseudoFileMaxBytes: 64 });
    const r = await read({ path: '/proc/self/status' });
    expect(r.text).toStartWith('1\tName:\t');
    expect(r.text).toContain('reports a size of 0');
    expect(r.text).toContain('only its first 64 B were read');
    const whole = await (await setup()).read({ path: '/proc/self/status' });
    expect(whole.text).toContain('\tPid:\t');
    expect(whole.text).not.toContain('reports a size of 0');
  });
});
