import { describe, expect, test } from 'bun:test';
import {
  BPF,
  buildFilter,
  encodeFilter,
  hostSeccompArch,
  SECCOMP_RET,
  syscallNumber,
  type Instruction,
  type SeccompArch,
} from '../../src/sandbox/seccomp.ts';

// A classic-BPF interpreter for the subset the generator emits, so the verdicts below are computed
// by running the program the kernel would run, not by reading the generator's intentions.
function run(program: Instruction[], data: { nr: number; arch: number; args?: number[] }): number {
  const bytes = new DataView(new ArrayBuffer(64));
  bytes.setInt32(0, data.nr, true);
  bytes.setUint32(4, data.arch, true);
  (data.args ?? []).forEach((value, i) => {
    bytes.setUint32(16 + 8 * i, value >>> 0, true);
    bytes.setUint32(20 + 8 * i, Math.floor(value / 2 ** 32) >>> 0, true);
  });
  let a = 0;
  for (let pc = 0; pc < program.length; pc++) {
    const ins = program[pc]!;
    switch (ins.code) {
      case BPF.LD_W_ABS:
        a = bytes.getUint32(ins.k, true);
        break;
      case BPF.JEQ_K:
        pc += a === ins.k >>> 0 ? ins.jt : ins.jf;
        break;
      case BPF.JGE_K:
        pc += a >>> 0 >= ins.k >>> 0 ? ins.jt : ins.jf;
        break;
      case BPF.JSET_K:
        pc += (a & ins.k) >>> 0 !== 0 ? ins.jt : ins.jf;
        break;
      case BPF.AND_K:
        a = (a & ins.k) >>> 0;
        break;
      case BPF.RET_K:
        return ins.k >>> 0;
      default:
        throw new Error(`unexpected opcode ${ins.code}`);
    }
  }
  throw new Error('program fell off the end');
}

const ARCH = { x86_64: 0xc000003e, aarch64: 0xc00000b7, i386: 0x40000003 };
const EPERM = SECCOMP_RET.ERRNO | 1;
const ENOSYS = SECCOMP_RET.ERRNO | 38;
const { ALLOW } = SECCOMP_RET;

for (const arch of ['x86_64', 'aarch64'] as SeccompArch[]) {
  describe(`seccomp filter (${arch})`, () => {
    const program = buildFilter(arch);
    const n = (name: Parameters<typeof syscallNumber>[1]) => {
      const value = syscallNumber(arch, name);
      if (value === undefined) throw new Error(`${name} has no number on ${arch}`);
      return value;
    };
    const verdict = (name: Parameters<typeof syscallNumber>[1], args: number[] = []) =>
      run(program, { nr: n(name), arch: ARCH[arch], args });

    test('a foreign architecture is killed', () => {
      const other = arch === 'x86_64' ? ARCH.aarch64 : ARCH.x86_64;
      expect(run(program, { nr: 0, arch: other })).toBe(SECCOMP_RET.KILL_PROCESS);
      expect(run(program, { nr: 0, arch: ARCH.i386 })).toBe(SECCOMP_RET.KILL_PROCESS);
    });

    test('socket(AF_UNIX) is EPERM, other families are allowed', () => {
      expect(verdict('socket', [1, 1, 0])).toBe(EPERM);
      expect(verdict('socket', [2, 1, 0])).toBe(ALLOW);
      expect(verdict('socket', [10, 2, 0])).toBe(ALLOW);
      // high bits set do not smuggle AF_UNIX past the check: the kernel reads an int
      expect(verdict('socket', [2 ** 32 + 1, 1, 0])).toBe(EPERM);
    });

    test('socketpair(AF_UNIX): stream and seqpacket pairs pass, datagram (and raw, which is datagram) are EPERM', () => {
      const NONBLOCK = 0o4000;
      const CLOEXEC = 0o2000000;
      expect(verdict('socketpair', [1, 1, 0])).toBe(ALLOW); // SOCK_STREAM
      expect(verdict('socketpair', [1, 1 | CLOEXEC, 0])).toBe(ALLOW);
      expect(verdict('socketpair', [1, 5 | NONBLOCK | CLOEXEC, 0])).toBe(ALLOW); // SOCK_SEQPACKET
      expect(verdict('socketpair', [1, 2, 0])).toBe(EPERM); // SOCK_DGRAM
      expect(verdict('socketpair', [1, 2 | NONBLOCK | CLOEXEC, 0])).toBe(EPERM);
      expect(verdict('socketpair', [1, 3, 0])).toBe(EPERM); // SOCK_RAW
      expect(verdict('socketpair', [1, 0, 0])).toBe(EPERM);
      expect(verdict('socketpair', [1, 2 ** 32 + 2, 0])).toBe(EPERM); // the kernel reads an int
      expect(verdict('socketpair', [2 ** 32 + 1, 2, 0])).toBe(EPERM);
      // other families: the kernel refuses or handles them itself, nothing to re-target
      expect(verdict('socketpair', [2, 2, 0])).toBe(ALLOW);
      expect(verdict('socketpair', [16, 2, 0])).toBe(ALLOW);
    });

    test('ptrace, process_vm_*, io_uring and keyrings are EPERM', () => {
      for (const name of ['ptrace', 'process_vm_readv', 'process_vm_writev', 'io_uring_setup', 'io_uring_enter', 'io_uring_register', 'keyctl', 'add_key', 'request_key'] as const) {
        expect(verdict(name, [0, 0, 0])).toBe(EPERM);
      }
    });

    test('TIOCSTI and TIOCLINUX are EPERM, other ioctls pass', () => {
      expect(verdict('ioctl', [0, 0x5412])).toBe(EPERM);
      expect(verdict('ioctl', [0, 0x541c])).toBe(EPERM);
      expect(verdict('ioctl', [0, 0x5401])).toBe(ALLOW); // TCGETS
    });

    test('new user namespaces are refused; ordinary clone/unshare pass; clone3 and openat2 are ENOSYS', () => {
      expect(verdict('unshare', [0x10000000])).toBe(EPERM);
      expect(verdict('unshare', [0x10000000 | 0x20000])).toBe(EPERM);
      expect(verdict('unshare', [0x20000])).toBe(ALLOW);
      expect(verdict('clone', [0x10000000 | 17])).toBe(EPERM);
      expect(verdict('clone', [0x01200011])).toBe(ALLOW); // fork()
      expect(verdict('clone3', [0, 88])).toBe(ENOSYS);
      expect(verdict('openat2', [0, 0, 0, 24])).toBe(ENOSYS);
    });

    test('setuid/setgid bits cannot be set', () => {
      expect(verdict('fchmod', [3, 0o4755])).toBe(EPERM);
      expect(verdict('fchmod', [3, 0o2755])).toBe(EPERM);
      expect(verdict('fchmod', [3, 0o755])).toBe(ALLOW);
      expect(verdict('fchmodat', [-100, 0, 0o4755])).toBe(EPERM);
      expect(verdict('fchmodat', [-100, 0, 0o644])).toBe(ALLOW);
      expect(verdict('fchmodat2', [-100, 0, 0o6755, 0])).toBe(EPERM);
      expect(verdict('mknodat', [-100, 0, 0o104755, 0])).toBe(EPERM);
      // openat creating a setuid file is refused; opening without O_CREAT ignores the mode slot
      expect(verdict('openat', [-100, 0, 0o100 | 1, 0o4755])).toBe(EPERM);
      expect(verdict('openat', [-100, 0, 0o100 | 1, 0o644])).toBe(ALLOW);
      expect(verdict('openat', [-100, 0, 0, 0o7777])).toBe(ALLOW);
      expect(verdict('openat', [-100, 0, 0o20200000 | 2, 0o4700])).toBe(EPERM); // O_TMPFILE
      if (arch === 'x86_64') {
        expect(verdict('chmod', [0, 0o4755])).toBe(EPERM);
        expect(verdict('creat', [0, 0o4755])).toBe(EPERM);
        expect(verdict('creat', [0, 0o755])).toBe(ALLOW);
        expect(verdict('open', [0, 0o101, 0o2755])).toBe(EPERM);
        expect(verdict('open', [0, 0, 0o2755])).toBe(ALLOW);
        expect(verdict('mknod', [0, 0o104755])).toBe(EPERM);
      }
    });

    test('everything else is allowed', () => {
      for (const nr of [0, 1, 3, 59, 60, 63, 221, 231]) {
        const denied = [...['keyctl', 'add_key', 'request_key', 'ptrace', 'socket', 'socketpair', 'ioctl', 'clone', 'unshare', 'clone3', 'openat', 'openat2', 'fchmod', 'fchmodat', 'mknodat', 'open', 'creat', 'chmod', 'mknod', 'process_vm_readv', 'process_vm_writev'].map((name) => syscallNumber(arch, name as never))];
        if (denied.includes(nr)) continue;
        expect(run(program, { nr, arch: ARCH[arch] })).toBe(ALLOW);
      }
    });

    if (arch === 'x86_64') {
      test('x32 system calls are EPERM', () => {
        expect(run(program, { nr: 0x40000000 | 39, arch: ARCH.x86_64 })).toBe(EPERM);
      });
    }

    test('encodes as 8-byte little-endian sock_filter records', () => {
      const bytes = encodeFilter(program);
      expect(bytes.length).toBe(program.length * 8);
      const view = new DataView(bytes.buffer);
      expect(view.getUint16(0, true)).toBe(BPF.LD_W_ABS);
      expect(view.getUint32(4, true)).toBe(4); // offsetof(seccomp_data, arch)
      const last = program.length - 1;
      expect(view.getUint16(last * 8, true)).toBe(BPF.RET_K);
      expect(view.getUint32(last * 8 + 4, true)).toBe(EPERM);
      expect(program.length).toBeLessThan(4096); // BPF_MAXINSNS
    });
  });
}

test('host architecture mapping', () => {
  expect(hostSeccompArch('x64')).toBe('x86_64');
  expect(hostSeccompArch('arm64')).toBe('aarch64');
  expect(hostSeccompArch('ia32')).toBeNull();
});
