// The relay inside a sandbox with the network allowlist. The command has its own network namespace
// (loopback only), so its only way out is this relay: it listens on 127.0.0.1:RELAY_PORT (where
// HTTP_PROXY points) and carries each accepted connection over one inherited channel to the proxy
// on the host (channel.ts frames: type u8, id u32, length u32, payload; 1 open, 2 data, 3 close).
//
// Why an inherited channel and not the proxy's Unix socket bound in: conch's seccomp filter refuses
// socket(AF_UNIX) inside the sandbox, on purpose (docker.sock, agents, buses). An exception for one
// path cannot be expressed in seccomp (it sees no paths), and loosening it would reopen every host
// socket; a relay started before the filter would need its own filter loader. A connected stream
// socketpair inherited as fd 4 needs no socket() call at all, and the filter already allows using
// one (it cannot be re-targeted). Many connections share it, multiplexed.
//
// Perl (no modules at all, not even strict.pm: loading it is 0.3 ms of CPU on every command)
// because it starts in about 1.5 ms, and it is on every Linux that has a shell toolchain; without
// it the allowlist refuses to run commands (fails closed) and says so. The command waits only for
// the listening socket: the script it runs first (RELAY_START) is a few lines, and the relay
// compiles its loop (RELAY_LOOP, a string it evals) after the command has started. The relay is
// made with clone(CLONE_PARENT): a sibling of the command, a child of bwrap's pid 1 at once, so it
// dies with the sandbox's pid namespace when the command ends, and the command (bwrap's main
// process: its exit status is the command's) never has it as a child to wait for. Where that
// syscall is not known or refused, it double-forks instead: the same tree, one fork and a wait more.
import { hostSeccompArch, syscallNumber } from './seccomp.ts';

export const RELAY_PORT = 3128;
export const CHANNEL_FD = 4;

/** What runs before the command: open the channel, listen, start the relay, exec the command. */
const RELAY_START = String.raw`
my ($loop, $chno, $port, $clone, @cmd) = @ARGV;
open(my $ch, '+<&=', $chno) or die "conch relay: no channel on fd $chno: $!\n";
# Linux values, the same on x86_64 and aarch64: AF_INET 2, SOCK_STREAM 1, SOL_SOCKET 1, SO_REUSEADDR 2.
socket(my $ls, 2, 1, 0) or die "conch relay: socket: $!\n";
setsockopt($ls, 1, 2, pack('i', 1));
bind($ls, pack('S n a4 x8', 2, $port, "\x7f\0\0\x01")) or die "conch relay: cannot listen on 127.0.0.1:$port: $!\n";
listen($ls, 128) or die "conch relay: listen: $!\n";
# CLONE_PARENT (0x8000) | SIGCHLD (17); the other arguments are 0 on every architecture.
my $pid = $clone ? syscall($clone, 0x8011, 0, 0, 0, 0) : -1;
if ($pid < 0) {
  $pid = fork() // die "conch relay: fork: $!\n";
  if ($pid) { waitpid($pid, 0); } elsif (fork()) { exit 0; }
}
if ($pid) {
  close $ls; close $ch;
  exec { $cmd[0] } @cmd or do { print STDERR "sh: $cmd[0]: $!\n"; exit 127; };
}
eval $loop;
exit 1;
`;

/** The relay: $ls (listening), $ch and $chno come from RELAY_START, whose scope it is evaluated in. */
const RELAY_LOOP = String.raw`
# EINTR 4, EAGAIN 11, F_GETFL 3, F_SETFL 4, O_NONBLOCK 0x800 (Linux, x86_64 and aarch64).
my ($F_GETFL, $F_SETFL, $O_NONBLOCK) = (3, 4, 0x800);
open(STDIN, '<', '/dev/null'); open(STDOUT, '>', '/dev/null'); open(STDERR, '>', '/dev/null');
$SIG{PIPE} = 'IGNORE';
my %c; my ($in, $out, $next) = ('', '', 0);
sub put { my ($t, $id, $d) = @_; $d = '' unless defined $d; $out .= pack('CNN', $t, $id, length $d) . $d; }
sub drop { my $x = delete $c{$_[0]} or return; close $x->{s}; }
for (;;) {
  my ($r, $w) = ('', '');
  vec($r, fileno $ls, 1) = 1; vec($r, $chno, 1) = 1;
  vec($w, $chno, 1) = 1 if length $out;
  for my $x (values %c) {
    vec($r, fileno $x->{s}, 1) = 1 unless $x->{eof} || length($out) > 4194304;
    vec($w, fileno $x->{s}, 1) = 1 if length $x->{out};
  }
  my $n = select(my $ro = $r, my $wo = $w, undef, undef);
  if ($n < 0) { next if $! == 4; exit 1; }
  if (vec($ro, fileno $ls, 1) && accept(my $s, $ls)) {
    my $flags = fcntl($s, $F_GETFL, 0); fcntl($s, $F_SETFL, $flags | $O_NONBLOCK);
    my $id = ++$next; $c{$id} = { s => $s, out => '', eof => 0 }; put(1, $id);
  }
  if (vec($ro, $chno, 1)) {
    my $k = sysread($ch, my $buf, 262144);
    exit 0 unless $k;
    $in .= $buf;
    while (length $in >= 9) {
      my ($t, $id, $len) = unpack('CNN', $in);
      last if length $in < 9 + $len;
      my $d = substr($in, 9, $len); substr($in, 0, 9 + $len) = '';
      my $x = $c{$id} or next;
      if ($t == 2) { $x->{out} .= $d; } elsif ($t == 3) { $x->{closing} = 1; }
    }
  }
  if (length $out && vec($wo, $chno, 1)) { my $k = syswrite($ch, $out); substr($out, 0, $k) = '' if $k; }
  for my $id (keys %c) {
    my $x = $c{$id}; my $fn = fileno $x->{s};
    if (length $x->{out} && vec($wo, $fn, 1)) {
      my $k = syswrite($x->{s}, $x->{out});
      if (defined $k) { substr($x->{out}, 0, $k) = ''; } elsif ($! != 11) { put(3, $id) unless $x->{closing}; drop($id); next; }
    }
    if ($x->{closing} && !length $x->{out}) { drop($id); next; }
    if (!$x->{eof} && vec($ro, $fn, 1)) {
      my $k = sysread($x->{s}, my $buf, 65536);
      if ($k) { put(2, $id, $buf); } elsif (defined $k || $! != 11) { $x->{eof} = 1; put(3, $id); }
    }
  }
}
`;

/** clone(2)'s number on this machine, or 0 where conch does not know it (the relay double-forks). */
function cloneSyscall(): number {
  const arch = hostSeccompArch();
  return (arch && syscallNumber(arch, 'clone')) ?? 0;
}

/** `perl` running the relay in front of `command` (channel on CHANNEL_FD, listening on RELAY_PORT). */
export function relayArgv(perl: string, command: string[], clone = cloneSyscall()): string[] {
  return [perl, '-e', RELAY_START, RELAY_LOOP, String(CHANNEL_FD), String(RELAY_PORT), String(clone), ...command];
}
