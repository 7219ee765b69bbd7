// The relay inside a sandbox with the network allowlist. The command has its own network namespace
// (loopback only), so its only way out is this relay: it listens on 127.0.0.1:RELAY_PORT (where
// HTTP_PROXY points) and carries each accepted connection over one inherited channel to the proxy
// on the host (channel.ts frames: type u8, id u32, length u32, payload; 1 open, 2 data, 3 close, and
// from conch 4 credit: a u32 of that connection's upload the proxy has taken, which the relay may send
// again; it sends at most WINDOW bytes of one connection ahead of its credit).
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
// the listening socket: the script perl runs first (RELAY_START) is a few lines, and the relay
// compiles its loop (RELAY_LOOP, a string it evals) only when the command first connects.
//
// The relay is bwrap's main process and the command its child: the command never has the relay as
// a child to wait for, and the relay ends when the command does (a pidfd says when), exiting with
// the command's status, which bwrap reports as its own. So the sandbox is over when bwrap is: with
// the relay beside the command (a sibling, made by clone(CLONE_PARENT)), bwrap reported the command's
// end while the relay still ran, and conch, which waits for a sandbox to run nothing before it reads
// the command's output to its end, polled 5 ms (often more under load) in every command.
import { SandboxRequestError } from './directories.ts';

export const RELAY_PORT = 3128;
export const CHANNEL_FD = 4;
/** Upload bytes of one connection the relay sends ahead of conch's credit for them. */
export const WINDOW = 64 * 1024;

/** What runs before the command: open the channel, listen, start the command, wait for a connection. */
const RELAY_START = String.raw`
my ($loop, $chno, $port, $pidfd_open, @cmd) = @ARGV;
open(my $ch, '+<&=', $chno) or die "conch relay: no channel on fd $chno: $!\n";
# Linux values, the same on x86_64 and aarch64: AF_INET 2, SOCK_STREAM 1, SOL_SOCKET 1, SO_REUSEADDR 2.
socket(my $ls, 2, 1, 0) or die "conch relay: socket: $!\n";
setsockopt($ls, 1, 2, pack('i', 1));
bind($ls, pack('S n a4 x8', 2, $port, "\x7f\0\0\x01")) or die "conch relay: cannot listen on 127.0.0.1:$port: $!\n";
listen($ls, 128) or die "conch relay: listen: $!\n";
my $pid = fork() // die "conch relay: fork: $!\n";
if (!$pid) {
  close $ls; close $ch;
  delete $ENV{PERL_SKIP_LOCALE_INIT} if ($ENV{PERL_SKIP_LOCALE_INIT} // '') eq 'conch-relay';
  exec { $cmd[0] } @cmd or do { print STDERR "sh: $cmd[0]: $!\n"; exit 127; };
}
# The relay holds nothing of the command's: conch reads the command's output to its end, which
# comes only once no process has the pipe open.
open(STDIN, '<', '/dev/null'); open(STDOUT, '>', '/dev/null'); open(STDERR, '>', '/dev/null');
my %keep = (0 => 1, 1 => 1, 2 => 1, fileno($ls) => 1, $chno => 1);
my @fds;
if (opendir(my $d, '/proc/self/fd')) { @fds = grep { /^\d+$/ && !$keep{$_} } readdir $d; closedir $d; }
for (@fds) { open(my $x, '<&=', $_) and close $x; }
# A pidfd is readable once the command has ended. Without one (a kernel before 5.3) SIGCHLD breaks
# the wait (select returns EINTR), and a look every 50 ms covers one that came just before it.
my $ended = $pidfd_open ? syscall($pidfd_open, $pid, 0) : -1;
my $tick = $ended < 0 ? 0.05 : undef;
$SIG{CHLD} = sub {} if $ended < 0;
my $status;
# Whether the command has ended (then reaped, its status kept); reaped(1) waits for it.
sub reaped { $status = $? if !defined $status && waitpid($pid, $_[0] ? 0 : 1) == $pid; return defined $status; }
# $ro: what select found readable (undef: nothing).
sub over { return $ended >= 0 ? defined $_[0] && vec($_[0], $ended, 1) : reaped(0); }
# The command's status is the relay's, which bwrap reports: 128 + the signal that ended it, as bwrap says.
sub finish { reaped(1); exit($status & 127 ? 128 + ($status & 127) : $status >> 8); }
# Most commands never connect: until one does, the relay only waits, and compiles its loop (CPU the
# command would share, its sandbox being one scheduling group) then.
my $r = ''; vec($r, fileno $ls, 1) = 1;
vec($r, $ended, 1) = 1 if $ended >= 0;
for (;;) {
  my $n = select(my $ro = $r, undef, undef, $tick);
  finish() if over($n > 0 ? $ro : undef) || ($n < 0 && $! != 4);
  last if $n > 0 && vec($ro, fileno $ls, 1);
}
eval $loop;
finish();
`;

/** The relay: $ls (listening), $ch, $chno, $tick, over() and finish() come from RELAY_START, whose scope it is evaluated in. */
const RELAY_LOOP = String.raw`
# EINTR 4, EAGAIN 11, F_GETFL 3, F_SETFL 4, O_NONBLOCK 0x800 (Linux, x86_64 and aarch64).
my ($F_GETFL, $F_SETFL, $O_NONBLOCK) = (3, 4, 0x800);
$SIG{PIPE} = 'IGNORE';
my %c; my ($in, $out, $next) = ('', '', 0);
sub put { my ($t, $id, $d) = @_; $d = '' unless defined $d; $out .= pack('CNN', $t, $id, length $d) . $d; }
sub drop { my $x = delete $c{$_[0]} or return; close $x->{s}; }
for (;;) {
  my ($r, $w) = ('', '');
  vec($r, $ended, 1) = 1 if $ended >= 0;
  vec($r, fileno $ls, 1) = 1; vec($r, $chno, 1) = 1;
  vec($w, $chno, 1) = 1 if length $out;
  for my $x (values %c) {
    vec($r, fileno $x->{s}, 1) = 1 unless $x->{eof} || $x->{win} <= 0 || length($out) > 4194304;
    vec($w, fileno $x->{s}, 1) = 1 if length $x->{out};
  }
  my $n = select(my $ro = $r, my $wo = $w, undef, $tick);
  finish() if $n < 0 && $! != 4;
  # The command ended: what it sent last still goes out, then the relay is done.
  if (over($n > 0 ? $ro : undef)) { syswrite($ch, $out) if length $out; finish(); }
  next if $n <= 0;
  if (vec($ro, fileno $ls, 1) && accept(my $s, $ls)) {
    my $flags = fcntl($s, $F_GETFL, 0); fcntl($s, $F_SETFL, $flags | $O_NONBLOCK);
    my $id = ++$next; $c{$id} = { s => $s, out => '', eof => 0, win => ${WINDOW} }; put(1, $id);
  }
  if (vec($ro, $chno, 1)) {
    my $k = sysread($ch, my $buf, 262144);
    # No more channel (conch is gone, and the sandbox with it): nothing left to relay.
    finish() unless $k;
    $in .= $buf;
    while (length $in >= 9) {
      my ($t, $id, $len) = unpack('CNN', $in);
      last if length $in < 9 + $len;
      my $d = substr($in, 9, $len); substr($in, 0, 9 + $len) = '';
      my $x = $c{$id} or next;
      if ($t == 2) { $x->{out} .= $d; } elsif ($t == 3) { $x->{closing} = 1; } elsif ($t == 4) { $x->{win} += unpack('N', $d); }
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
      my $k = sysread($x->{s}, my $buf, $x->{win} < 65536 ? $x->{win} : 65536);
      if ($k) { put(2, $id, $buf); $x->{win} -= $k; } elsif (defined $k || $! != 11) { $x->{eof} = 1; put(3, $id); }
    }
  }
}
`;

/** pidfd_open(2): 434 on every architecture (a number added after the tables were unified). */
const PIDFD_OPEN = 434;

/**
 * `perl` running the relay in front of `command` (channel on CHANNEL_FD, listening on RELAY_PORT).
 * `pidfdOpen` is the syscall the relay learns the command's end from (0: none, as on old kernels).
 */
export function relayArgv(perl: string, command: string[], pidfdOpen = PIDFD_OPEN): string[] {
  return [perl, '-e', RELAY_START, RELAY_LOOP, String(CHANNEL_FD), String(RELAY_PORT), String(pidfdOpen), ...command];
}

/** relayArgv with the perl found inside the sandbox's PATH; none there is a refusal. */
export function relayCommand(command: string[]): string[] {
  const perl = Bun.which('perl', { PATH: '/usr/bin:/bin:/usr/local/bin' });
  if (!perl) {
    throw new SandboxRequestError(
      'the network allowlist (--allow-net, sandbox.network.allow) needs perl inside the sandbox for its relay, and there is none in /usr/bin, /bin or /usr/local/bin; install perl (apt-get install perl-base), or run with the network on or --no-network.',
    );
  }
  return relayArgv(perl, command);
}

/**
 * Set for the relay's perl, which removes it before the command starts: perl then skips its locale
 * set-up (a dozen files read, 0.3 ms of CPU before the command can start); the relay needs none.
 */
export const RELAY_ENV = { PERL_SKIP_LOCALE_INIT: 'conch-relay' };
