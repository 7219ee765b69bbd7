// The seccomp filter handed to bwrap (`--seccomp FD`): a classic BPF program generated here, so no
// prebuilt binary is downloaded or trusted. bwrap loads it right before exec'ing the command, after
// its own namespace setup, so the filter never gets in bwrap's way.
//
// What it refuses, and why:
// - socket(AF_UNIX): a host socket reachable through the read-only root (docker.sock, an SSH agent,
//   a desktop bus) is a way out of any filesystem sandbox.
// - socketpair(AF_UNIX) other than SOCK_STREAM and SOCK_SEQPACKET: a datagram pair (SOCK_DGRAM, and
//   SOCK_RAW, which the kernel turns into a datagram socket) can connect() or sendto() any socket
//   path it can see (/dev/log, journald, sd_notify), network namespace or not. A connected stream or
//   seqpacket pair cannot be re-targeted (connect: EISCONN, a sendto address is ignored, even after
//   the peer closed), and shells and many programs use those for internal plumbing, so they stay.
// - ptrace, process_vm_readv/writev: no inspecting or steering other processes.
// - keyctl, add_key, request_key: kernel keyrings belong to the uid, not to a namespace, so a command
//   would share the user's (or root's) keyring with everything else they run.
// - io_uring_*: it performs file and socket operations the filter could not see.
// - ioctl TIOCSTI/TIOCLINUX: typing into the user's terminal (bwrap's --new-session already
//   detaches the controlling terminal; this is the second lock).
// - unshare/clone with CLONE_NEWUSER (clone3: ENOSYS so libc falls back to clone): a nested user
//   namespace hands back capabilities; bwrap's --disable-userns does the same where supported.
// - setuid/setgid bits via chmod, open(O_CREAT), mknod: when conch runs as root, a setuid-root file
//   left in the workspace would be a privilege escalation for anyone who runs it later on the host.
// - any other architecture (i386 compat on x86_64 …): killed; x32 system calls: EPERM.

export type SeccompArch = 'x86_64' | 'aarch64';

const AUDIT_ARCH: Record<SeccompArch, number> = { x86_64: 0xc000003e, aarch64: 0xc00000b7 };
const X32_SYSCALL_BIT = 0x40000000;

interface SyscallTable {
  socket: number;
  socketpair: number;
  ioctl: number;
  ptrace: number;
  process_vm_readv: number;
  process_vm_writev: number;
  io_uring_setup: number;
  io_uring_enter: number;
  io_uring_register: number;
  keyctl: number;
  add_key: number;
  request_key: number;
  unshare: number;
  clone: number;
  clone3: number;
  openat2: number;
  openat: number;
  mknodat: number;
  fchmod: number;
  fchmodat: number;
  fchmodat2: number;
  // x86_64 only (aarch64 has just the *at forms)
  open?: number;
  creat?: number;
  mknod?: number;
  chmod?: number;
}

const SYSCALLS: Record<SeccompArch, SyscallTable> = {
  x86_64: {
    socket: 41, socketpair: 53, ioctl: 16, ptrace: 101, process_vm_readv: 310, process_vm_writev: 311,
    io_uring_setup: 425, io_uring_enter: 426, io_uring_register: 427, keyctl: 250, add_key: 248,
    request_key: 249, unshare: 272, clone: 56,
    clone3: 435, openat2: 437, openat: 257, mknodat: 259, fchmod: 91, fchmodat: 268, fchmodat2: 452,
    open: 2, creat: 85, mknod: 133, chmod: 90,
  },
  aarch64: {
    socket: 198, socketpair: 199, ioctl: 29, ptrace: 117, process_vm_readv: 270, process_vm_writev: 271,
    io_uring_setup: 425, io_uring_enter: 426, io_uring_register: 427, keyctl: 219, add_key: 217,
    request_key: 218, unshare: 97, clone: 220,
    clone3: 435, openat2: 437, openat: 56, mknodat: 33, fchmod: 52, fchmodat: 53, fchmodat2: 452,
  },
};

const AF_UNIX = 1;
/** socket type without SOCK_NONBLOCK / SOCK_CLOEXEC (include/linux/net.h SOCK_TYPE_MASK). */
const SOCK_TYPE_MASK = 0xf;
const SOCK_STREAM = 1;
const SOCK_SEQPACKET = 5;
const TIOCSTI = 0x5412;
const TIOCLINUX = 0x541c;
const CLONE_NEWUSER = 0x10000000;
const O_CREAT = 0o100;
const O_TMPFILE_BIT = 0o20000000;
const SETID_BITS = 0o6000;
const EPERM = 1;
const ENOSYS = 38;

export const SECCOMP_RET = {
  KILL_PROCESS: 0x80000000,
  ERRNO: 0x00050000,
  ALLOW: 0x7fff0000,
} as const;

// Classic BPF opcodes used by the program.
export const BPF = {
  LD_W_ABS: 0x20,
  JEQ_K: 0x15,
  JGE_K: 0x35,
  JSET_K: 0x45,
  AND_K: 0x54,
  RET_K: 0x06,
} as const;

/** offsetof(struct seccomp_data, …); arguments are read as their low 32 bits (little endian). */
const NR = 0;
const ARCH = 4;
const argLow = (index: number) => 16 + 8 * index;

export interface Instruction {
  code: number;
  jt: number;
  jf: number;
  k: number;
}

type Target = string | 'next';
type Item =
  | { op: 'label'; name: string }
  | { op: 'ld'; offset: number }
  | { op: 'and'; k: number }
  | { op: 'jump'; code: number; k: number; yes: Target; no: Target }
  | { op: 'ret'; value: number };

/** A tiny assembler: forward jumps to named labels, resolved to BPF's 8-bit relative offsets. */
class Program {
  private items: Item[] = [];
  label(name: string) { this.items.push({ op: 'label', name }); }
  ld(offset: number) { this.items.push({ op: 'ld', offset }); }
  and(k: number) { this.items.push({ op: 'and', k }); }
  jeq(k: number, yes: Target, no: Target = 'next') { this.items.push({ op: 'jump', code: BPF.JEQ_K, k, yes, no }); }
  jge(k: number, yes: Target, no: Target = 'next') { this.items.push({ op: 'jump', code: BPF.JGE_K, k, yes, no }); }
  jset(k: number, yes: Target, no: Target = 'next') { this.items.push({ op: 'jump', code: BPF.JSET_K, k, yes, no }); }
  ret(value: number) { this.items.push({ op: 'ret', value }); }

  assemble(): Instruction[] {
    const positions = new Map<string, number>();
    let pc = 0;
    for (const item of this.items) {
      if (item.op === 'label') positions.set(item.name, pc);
      else pc++;
    }
    const out: Instruction[] = [];
    for (const item of this.items) {
      if (item.op === 'label') continue;
      const here = out.length;
      const offset = (target: Target): number => {
        if (target === 'next') return 0;
        const at = positions.get(target);
        if (at === undefined) throw new Error(`seccomp: unknown label ${target}`);
        const delta = at - here - 1;
        if (delta < 0 || delta > 255) throw new Error(`seccomp: jump to ${target} out of range (${delta})`);
        return delta;
      };
      if (item.op === 'ld') out.push({ code: BPF.LD_W_ABS, jt: 0, jf: 0, k: item.offset });
      else if (item.op === 'and') out.push({ code: BPF.AND_K, jt: 0, jf: 0, k: item.k });
      else if (item.op === 'ret') out.push({ code: BPF.RET_K, jt: 0, jf: 0, k: item.value });
      else out.push({ code: item.code, jt: offset(item.yes), jf: offset(item.no), k: item.k });
    }
    return out;
  }
}

/** The filter for one architecture, as instructions (see encodeFilter for the bytes bwrap reads). */
export function buildFilter(arch: SeccompArch): Instruction[] {
  const nr = SYSCALLS[arch];
  const deny = SECCOMP_RET.ERRNO | EPERM;
  const p = new Program();

  p.ld(ARCH);
  p.jeq(AUDIT_ARCH[arch], 'native');
  p.ret(SECCOMP_RET.KILL_PROCESS);
  p.label('native');
  p.ld(NR);
  if (arch === 'x86_64') p.jge(X32_SYSCALL_BIT, 'deny');

  const always = [
    nr.ptrace, nr.process_vm_readv, nr.process_vm_writev,
    nr.io_uring_setup, nr.io_uring_enter, nr.io_uring_register,
    nr.keyctl, nr.add_key, nr.request_key,
  ];
  for (const call of always) p.jeq(call, 'deny');
  p.jeq(nr.clone3, 'nosys');
  p.jeq(nr.openat2, 'nosys');
  p.jeq(nr.socket, 'socket');
  p.jeq(nr.socketpair, 'socketpair');
  p.jeq(nr.ioctl, 'ioctl');
  p.jeq(nr.unshare, 'newuser');
  p.jeq(nr.clone, 'newuser');
  // mode argument position per call: the check is the same, only the offset differs.
  const modeAt: [number | undefined, number, string][] = [
    [nr.fchmod, 1, 'mode1'], [nr.chmod, 1, 'mode1'], [nr.mknod, 1, 'mode1'],
    [nr.fchmodat, 2, 'mode2'], [nr.fchmodat2, 2, 'mode2'], [nr.mknodat, 2, 'mode2'],
  ];
  for (const [call, , label] of modeAt) if (call !== undefined) p.jeq(call, label);
  if (nr.creat !== undefined) p.jeq(nr.creat, 'mode1');
  if (nr.open !== undefined) p.jeq(nr.open, 'open');
  p.jeq(nr.openat, 'openat');
  p.ret(SECCOMP_RET.ALLOW);

  p.label('socket');
  p.ld(argLow(0));
  p.jeq(AF_UNIX, 'deny');
  p.ret(SECCOMP_RET.ALLOW);

  p.label('socketpair');
  p.ld(argLow(0));
  p.jeq(AF_UNIX, 'next', 'allow');
  p.ld(argLow(1));
  p.and(SOCK_TYPE_MASK);
  p.jeq(SOCK_STREAM, 'allow');
  p.jeq(SOCK_SEQPACKET, 'allow');
  p.ret(deny);

  p.label('ioctl');
  p.ld(argLow(1));
  p.jeq(TIOCSTI, 'deny');
  p.jeq(TIOCLINUX, 'deny');
  p.ret(SECCOMP_RET.ALLOW);

  p.label('newuser');
  p.ld(argLow(0));
  p.jset(CLONE_NEWUSER, 'deny');
  p.ret(SECCOMP_RET.ALLOW);

  // open(path, flags, mode) and openat(dirfd, path, flags, mode): the mode only counts when a file
  // is created, and callers pass garbage there otherwise.
  if (nr.open !== undefined) {
    p.label('open');
    p.ld(argLow(1));
    p.jset(O_CREAT | O_TMPFILE_BIT, 'mode2');
    p.ret(SECCOMP_RET.ALLOW);
  }
  p.label('openat');
  p.ld(argLow(2));
  p.jset(O_CREAT | O_TMPFILE_BIT, 'mode3');
  p.ret(SECCOMP_RET.ALLOW);

  for (const index of [1, 2, 3]) {
    p.label(`mode${index}`);
    p.ld(argLow(index));
    p.jset(SETID_BITS, 'deny');
    p.ret(SECCOMP_RET.ALLOW);
  }

  p.label('allow');
  p.ret(SECCOMP_RET.ALLOW);
  p.label('nosys');
  p.ret(SECCOMP_RET.ERRNO | ENOSYS);
  p.label('deny');
  p.ret(deny);
  return p.assemble();
}

/** struct sock_filter[] in native (little-endian) layout: u16 code, u8 jt, u8 jf, u32 k. */
export function encodeFilter(program: Instruction[]): Uint8Array {
  const bytes = new Uint8Array(program.length * 8);
  const view = new DataView(bytes.buffer);
  program.forEach((ins, i) => {
    view.setUint16(i * 8, ins.code, true);
    view.setUint8(i * 8 + 2, ins.jt);
    view.setUint8(i * 8 + 3, ins.jf);
    view.setUint32(i * 8 + 4, ins.k >>> 0, true);
  });
  return bytes;
}

/** The architecture conch is running on, or null where no filter can be generated. */
export function hostSeccompArch(arch: string = process.arch): SeccompArch | null {
  if (arch === 'x64') return 'x86_64';
  if (arch === 'arm64') return 'aarch64';
  return null;
}

export function syscallNumber(arch: SeccompArch, name: keyof SyscallTable): number | undefined {
  return SYSCALLS[arch][name];
}
