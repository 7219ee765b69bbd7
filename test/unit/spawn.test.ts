// runProcess and cleanEnv against real processes (unsandboxed; the sandbox tests cover bwrap).
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { closeSync, mkdtempSync, openSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { cleanEnv, commandPath, runProcess, type SpawnOptions } from '../../src/process/spawn.ts';
import { processAlive } from '../../src/process/group.ts';
import { BoundedOutput, cutHead, cutTail } from '../../src/process/output.ts';

let dir: string;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'conch-spawn-'));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const env = () => cleanEnv(process.env, {}, { tmpDir: dir });
const run = (script: string, extra: Partial<SpawnOptions> = {}) =>
  runProcess({
    argv: ['/bin/sh', '-c', script],
    cwd: dir,
    env: env(),
    timeoutMs: 20_000,
    maxShownBytes: 50 * 1024,
    logDir: join(dir, 'logs'),
    killGraceMs: 300,
    ...extra,
  });
const pids = (output: string) => output.match(/^\d+$/gm)!.map(Number);

describe('exit status', () => {
  for (const code of [0, 1, 42]) {
    test(`exit ${code}`, async () => {
      const r = await run(`echo hi; exit ${code}`);
      expect(r).toMatchObject({ exitCode: code, signal: null, output: 'hi\n', timedOut: false, cancelled: false });
      expect(r.cleanupError).toBeUndefined();
    });
  }

  test('127 for a command that does not exist, inside sh and as argv[0]', async () => {
    // A PATH entry we may not search would make it 126 (permission denied): use a plain one.
    const plain = { env: { PATH: '/usr/bin:/bin' } };
    const r = await run('no-such-command-conch', plain);
    expect(r.exitCode).toBe(127);
    expect(r.output).toContain('no-such-command-conch');
    const direct = await run('', { ...plain, argv: ['no-such-command-conch'] });
    expect(direct.exitCode).toBe(127);
    expect(direct.output).toContain('not found');
  });

  test('a leader killed by a signal reports the signal name and no exit code', async () => {
    const r = await run('kill -TERM $$; sleep 5');
    expect(r.exitCode).toBeNull();
    expect(r.signal).toBe('SIGTERM');
  });

  test('a shell whose child was killed reports 128+n', async () => {
    const r = await run(`sh -c 'kill -KILL $$'`);
    expect(r.exitCode).toBe(128 + 9);
    expect(r.signal).toBeNull();
  });

  test('a cwd that does not exist is a start error, not an exception', async () => {
    const r = await run('true', { cwd: join(dir, 'missing') });
    expect(r.exitCode).toBeNull();
    expect(r.signal).toBeNull();
    expect(r.startError).toContain(join(dir, 'missing'));
  });
});

describe('process group teardown', () => {
  test('`sleep 1000 &` returns and the sleeper is gone', async () => {
    const r = await run('sleep 1000 & echo $!');
    expect(r.exitCode).toBe(0);
    const [sleeper] = pids(r.output);
    expect(processAlive(sleeper!)).toBe(false);
    expect(r.cleanupError).toBeUndefined();
  });

  test('a background child that ignores SIGTERM is SIGKILLed after the grace', async () => {
    const r = await run(`(trap '' TERM; exec sleep 1000) & echo $!`);
    const [sleeper] = pids(r.output);
    expect(processAlive(sleeper!)).toBe(false);
    expect(r.cleanupError).toBeUndefined();
  });

  test('timeout kills the whole tree, grandchildren included', async () => {
    const script = `sleep 1000 & echo $!; sh -c 'sleep 1000 & echo $!; wait' & wait`;
    const r = await run(script, { timeoutMs: 500 });
    expect(r.timedOut).toBe(true);
    expect(r.cancelled).toBe(false);
    const found = pids(r.output);
    expect(found.length).toBe(2);
    for (const pid of found) expect(processAlive(pid)).toBe(false);
    expect(r.cleanupError).toBeUndefined();
  });

  test('aborting the signal cancels and kills the group', async () => {
    const controller = new AbortController();
    let seen = '';
    const r = await run(`sh -c 'sleep 1000 & echo $!; wait' & wait`, {
      signal: controller.signal,
      onOutput: (chunk) => {
        seen += chunk;
        if (/\d+\n/.test(seen)) controller.abort();
      },
    });
    expect(r.cancelled).toBe(true);
    expect(r.timedOut).toBe(false);
    const [grandchild] = pids(r.output);
    expect(processAlive(grandchild!)).toBe(false);
  });

  test('an already aborted signal starts nothing', async () => {
    const marker = join(dir, 'should-not-exist');
    const r = await run(`touch ${marker}`, { signal: AbortSignal.abort() });
    expect(r.cancelled).toBe(true);
    expect(() => statSync(marker)).toThrow();
  });

  test('a process escaping the group with setsid is reported, not ignored', async () => {
    // Not a group leader, so setsid(1) calls setsid() itself and execs: $! is the escapee.
    const r = await run('setsid sleep 1000 & echo $!; sleep 0.2');
    expect(r.exitCode).toBe(0);
    expect(r.cleanupError).toMatch(/left the process group/);
    if (process.platform === 'linux') {
      // Found through the output pipe it still held, and killed.
      expect(r.cleanupError).toContain('conch killed them');
      expect(processAlive(pids(r.output)[0]!)).toBe(false);
    }
  });
});

describe('output', () => {
  test('stdout and stderr interleave in write order', async () => {
    const r = await run('i=0; while [ $i -lt 200 ]; do echo "out $i"; echo "err $i" >&2; i=$((i+1)); done');
    const expected = Array.from({ length: 200 }, (_, i) => `out ${i}\nerr ${i}\n`).join('');
    expect(r.output).toBe(expected);
  });

  test('stdin is closed', async () => {
    const r = await run('cat; echo done');
    expect(r.output).toBe('done\n');
  });

  test('invalid UTF-8 becomes replacement characters; control characters are escaped', async () => {
    const r = await run(`printf '\\377\\376ok\\n\\033[31mred\\r\\nnul\\000end'`);
    expect(r.output).toBe('\uFFFD\uFFFDok\n\\x1b[31mred\nnul\\x00end');
  });

  test('truncation never splits a multibyte character at the head or tail cut', async () => {
    // 'a' shifts the 4-byte emoji off any boundary aligned with the 40/60 head/tail split.
    const r = await run(`printf a; i=0; while [ $i -lt 200 ]; do printf '\\360\\237\\230\\200'; i=$((i+1)); done`, {
      maxShownBytes: 101,
    });
    expect(r.truncated).toBe(true);
    expect(r.output).not.toContain('\uFFFD');
    const [head, tail] = r.output.split(/\n\[\.\.\. \d+ bytes omitted[^\]]*\]\n/);
    expect(head).toMatch(/^a(😀)+$/u);
    expect(tail).toMatch(/^(😀)+$/u);
    const omitted = Number(r.output.match(/(\d+) bytes omitted/)![1]);
    expect(Buffer.byteLength(head!) + Buffer.byteLength(tail!) + omitted).toBe(801);
  });

  test('onOutput receives the output as it arrives', async () => {
    const chunks: string[] = [];
    const r = await run('echo one; sleep 0.1; echo two', { onOutput: (c) => chunks.push(c) });
    expect(chunks.join('')).toBe('one\ntwo\n');
    expect(r.output).toBe('one\ntwo\n');
  });

  test('100 MB flood: bounded memory, head and tail shown, the log holds everything', async () => {
    const lines = 12_000_000; // seq 1..12e6 is about 97 MB
    let expectedBytes = 0;
    for (let digits = 1, low = 1; low <= lines; digits++, low *= 10) {
      expectedBytes += (Math.min(lines, low * 10 - 1) - low + 1) * (digits + 1);
    }
    // Measured in a child process of its own: RSS of the shared test runner moves with whatever
    // other test files allocated, which would make the bound meaningless.
    const probe = `
      import { runProcess } from ${JSON.stringify(join(import.meta.dir, '../../src/process/spawn.ts'))};
      Bun.gc(true);
      const baseline = process.memoryUsage().rss;
      let peak = baseline;
      const sampler = setInterval(() => (peak = Math.max(peak, process.memoryUsage().rss)), 5);
      const r = await runProcess({ argv: ['/bin/sh', '-c', 'seq 1 ${lines}'], cwd: ${JSON.stringify(dir)},
        env: { PATH: process.env.PATH }, timeoutMs: 120000, maxShownBytes: 50 * 1024,
        logDir: ${JSON.stringify(join(dir, 'logs'))}, killGraceMs: 300 });
      clearInterval(sampler);
      peak = Math.max(peak, process.memoryUsage().rss);
      console.log(JSON.stringify({ growth: peak - baseline, r }));`;
    const child = Bun.spawn([process.execPath, '-e', probe], { stdout: 'pipe', stderr: 'inherit' });
    const { growth, r } = JSON.parse(await new Response(child.stdout).text());
    expect(await child.exited).toBe(0);
    console.log(`flood: ${expectedBytes} bytes, peak RSS +${(growth / 1e6).toFixed(1)} MB`);
    // Holding the flood would cost at least its 97 MB; the bound allows for the runtime's own buffers.
    expect(growth).toBeLessThan(60e6);
    expect(r).toMatchObject({ exitCode: 0, truncated: true, totalBytes: expectedBytes });
    expect(r.output.startsWith('1\n2\n3\n')).toBe(true);
    expect(r.output.endsWith(`${lines - 1}\n${lines}\n`)).toBe(true);
    expect(Buffer.byteLength(r.output)).toBeLessThan(50 * 1024 + 300);
    expect(r.output).toContain(`full output (${expectedBytes} bytes) in ${r.logPath}`);
    expect(statSync(r.logPath!).size).toBe(expectedBytes);
    const hasher = new Bun.CryptoHasher('sha256');
    for await (const chunk of Bun.file(r.logPath!).stream()) hasher.update(chunk);
    const reference = await run(`seq 1 ${lines} | sha256sum`, { timeoutMs: 120_000 });
    expect(reference.output.split(' ')[0]).toBe(hasher.digest('hex'));
  }, 180_000);
});

describe('BoundedOutput', () => {
  test('head and tail are exact slices of the stream whatever the chunking', () => {
    // Deterministic pseudo-random chunk sizes exercise every wrap of the tail ring.
    let seed = 7;
    const rand = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
    const data = new Uint8Array(20_000).map((_, i) => 97 + (i % 26)); // a-z, no line breaks
    for (const max of [10, 100, 999]) {
      const sink = new BoundedOutput(max, join(dir, 'ring-logs'));
      for (let at = 0; at < data.length; ) {
        const size = Math.min(data.length - at, 1 + Math.floor(rand() * 3 * max));
        sink.push(data.subarray(at, at + size));
        at += size;
      }
      const out = sink.finish();
      const headLen = Math.floor(max * 0.4);
      const text = new TextDecoder().decode(data);
      expect(out.output.startsWith(text.slice(0, headLen) + '\n[... ')).toBe(true);
      expect(out.output.endsWith(' ...]\n' + text.slice(text.length - (max - headLen)))).toBe(true);
      expect(readFileSync(out.logPath!, 'utf8')).toBe(text);
    }
  });

  test('cuts snap to nearby line breaks and never split a character', () => {
    const enc = (s: string) => new TextEncoder().encode(s);
    const dec = (b: Uint8Array) => new TextDecoder().decode(b);
    expect(dec(cutHead(enc('line one\nline t')))).toBe('line one\n');
    expect(dec(cutTail(enc('ne one\nline two')))).toBe('line two');
    for (const ch of ['é', '€', '😀']) {
      const bytes = enc(`x${ch}`);
      for (let cut = 2; cut < bytes.length; cut++) {
        expect(dec(cutHead(bytes.subarray(0, cut)))).toBe('x');
        expect(dec(cutTail(bytes.subarray(cut - 1)))).not.toContain('\uFFFD');
      }
      expect(dec(cutHead(bytes))).toBe(`x${ch}`);
    }
  });

  test('a throwing onOutput does not stop the draining', async () => {
    const r = await run('seq 1 50000', {
      onOutput: () => {
        throw new Error('progress bug');
      },
    });
    expect(r.exitCode).toBe(0);
    expect(r.totalBytes).toBe(288_894);
  });
});

describe('child setup', () => {
  test('extra fds reach the child as fd 3', async () => {
    const file = join(dir, 'fd3.txt');
    writeFileSync(file, 'through fd three\n');
    const fd = openSync(file, 'r');
    try {
      const r = await run('cat <&3', { extraFds: [fd] });
      expect(r.output).toBe('through fd three\n');
    } finally {
      closeSync(fd);
    }
  });

  test("with outputFd, a first-line syntax error longer than a pipe holds is reported whole (bash as /bin/sh quotes the line)", async () => {
    // The sandbox's layout: the output pipe as fd 4, moved onto 1 and 2 by the command's first line,
    // which a syntax error keeps from running; the shell's message then goes to fd 2.
    const bash = Bun.which('bash');
    if (!bash) {
      console.warn('SKIPPED (loudly): bash is not installed; a long syntax error before the output moves is untested here');
      return;
    }
    const word = 'a'.repeat(100_000);
    const fd = openSync('/dev/null', 'r');
    try {
      const r = await run('', { argv: [bash, '-c', `exec 1>&4 2>&4 4>&-; echo ${word} )`], extraFds: [fd], outputFd: 4, maxShownBytes: 256 * 1024 });
      expect(r.timedOut).toBe(false);
      expect(r.exitCode).toBe(2);
      expect(r.output).toStartWith(`${bash}: -c: line 1: syntax error near unexpected token \`)'\n`);
      expect(r.output).toEndWith(`${word} )'\n`);
    } finally {
      closeSync(fd);
    }
  });

  test('bwrap reads a seccomp program from fd 3 through runProcess', async () => {
    const bwrap = Bun.which('bwrap');
    if (!bwrap) {
      console.warn('SKIPPED (loudly): bwrap is not installed; the fd-3 hand-off to bwrap --seccomp is untested here');
      return;
    }
    // One BPF instruction, RET ALLOW: enough for bwrap to load it (it rejects a malformed program).
    const program = join(dir, 'allow.bpf');
    writeFileSync(program, Buffer.from([0x06, 0, 0, 0, 0, 0, 0xff, 0x7f]));
    const garbage = join(dir, 'bad.bpf');
    writeFileSync(garbage, Buffer.from([1, 2, 3]));
    const argv = [bwrap, '--ro-bind', '/', '/', '--dev', '/dev', '--unshare-user', '--unshare-pid', '--proc', '/proc', '--die-with-parent', '--seccomp', '3', '--', '/bin/echo', 'inside'];
    const fds = [openSync(program, 'r'), openSync(garbage, 'r')];
    try {
      const ok = await run('', { argv, extraFds: [fds[0]!] });
      if (ok.exitCode !== 0 && /namespace|uid map|Operation not permitted/i.test(ok.output)) {
        console.warn(`SKIPPED (loudly): bwrap cannot create a sandbox here: ${ok.output.trim()}`);
        return;
      }
      expect(ok).toMatchObject({ exitCode: 0, output: 'inside\n' });
      // A program bwrap must reject proves it really read fd 3.
      const bad = await run('', { argv, extraFds: [fds[1]!] });
      expect(bad.exitCode).not.toBe(0);
      expect(bad.output).toMatch(/seccomp/i);
    } finally {
      for (const fd of fds) closeSync(fd);
    }
  });

  test('runs in the given cwd with exactly the given environment', async () => {
    const r = await run('pwd; env', { env: { PATH: '/usr/bin:/bin', ONLY_THIS: 'yes' } });
    const [pwd, ...vars] = r.output.trim().split('\n');
    expect(pwd).toBe(dir);
    const names = vars.map((v) => v.split('=')[0]).filter((n) => n !== 'PWD' && n !== 'SHLVL' && n !== '_');
    expect(names.sort()).toEqual(['ONLY_THIS', 'PATH']);
  });
});

describe('cleanEnv', () => {
  const parent = {
    PATH: '/opt/bin:/usr/bin',
    HOME: '/home/u',
    USER: 'u',
    LOGNAME: 'u',
    LANG: 'de_DE.UTF-8',
    ANTHROPIC_API_KEY: 'sk-ant-secret',
    OPENAI_API_KEY: 'sk-openai-secret',
    AWS_SECRET_ACCESS_KEY: 'aws',
    BASH_ENV: '/home/u/.evil',
    ENV: '/home/u/.shrc',
    TERM: 'xterm-256color',
  };

  test('keeps the small set, drops everything else', () => {
    const result = cleanEnv(parent, { CONCH_TASK_ID: '7' }, { tmpDir: '/tmp/run' });
    expect(result).toEqual({
      PATH: '/opt/bin:/usr/bin',
      HOME: '/home/u',
      USER: 'u',
      LOGNAME: 'u',
      LANG: 'de_DE.UTF-8',
      TERM: 'dumb',
      TMPDIR: '/tmp/run',
      SHELL: '/bin/sh',
      CONCH_TASK_ID: '7',
    });
  });

  test('defaults: PATH and a UTF-8 locale when the parent has none; LC_ALL kept when set', () => {
    const bare = cleanEnv({}, {});
    expect(bare.PATH).toContain('/usr/bin');
    expect(bare.LANG).toBe('C.UTF-8');
    expect(bare.HOME).toBeUndefined();
    expect(cleanEnv({ LC_ALL: 'C' }, {})).toMatchObject({ LC_ALL: 'C' });
    expect(cleanEnv({ LC_ALL: 'C' }, {}).LANG).toBeUndefined();
  });

  test('provider keys never reach a command even when the parent has them', async () => {
    const r = await run('env', { env: cleanEnv({ ...process.env, ...parent }, { CONCH_TASK_X: 'x y' }) });
    expect(r.output).not.toContain('ANTHROPIC_API_KEY');
    expect(r.output).not.toContain('sk-ant-secret');
    expect(r.output).not.toContain('OPENAI_API_KEY');
    expect(r.output).toContain('CONCH_TASK_X=x y\n');
  });

  test('a non-CONCH_TASK_ extra is a bug and throws', () => {
    expect(() => cleanEnv(parent, { PATH: '/evil' })).toThrow(/CONCH_TASK_/);
  });
});

describe('commandPath', () => {
  test('drops relative entries and entries under the temp directory, keeps the rest in order', () => {
    expect(commandPath('/tmp/repo/node_modules/.bin:.:bin::/usr/local/bin:/usr/bin:/tmp')).toBe('/usr/local/bin:/usr/bin');
    expect(commandPath('/tmpfoo/bin:/usr/bin')).toBe('/tmpfoo/bin:/usr/bin');
    expect(commandPath('')).toContain('/usr/bin');
    expect(commandPath('./x:/tmp/y')).toContain('/usr/bin');
  });
});
