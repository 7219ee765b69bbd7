/*
 * Signal counting for the watchdog (watchdog-worker.ts), compiled at run time by bun:ffi's cc.
 * Bun runs a JavaScript signal listener on the main thread, so a plugin that never yields makes
 * SIGTERM and Ctrl-C wait forever. These handlers only count (async-signal-safe); the watchdog's
 * own thread reads the counts, passes each signal on to the main thread and, when that thread is
 * stuck, ends the run itself. No headers: the few libc declarations needed are written out.
 */
typedef void (*handler_t)(int);
handler_t signal(int sig, handler_t handler);
void _exit(int code);

static volatile int counts[65];

static void count(int sig) {
  if (sig > 0 && sig < 65) counts[sig]++;
}

int catch_signal(int sig) {
  return signal(sig, count) == (handler_t)-1 ? -1 : 0;
}

int signals_taken(int sig) {
  return sig > 0 && sig < 65 ? counts[sig] : 0;
}

/* Ends the whole process from the watchdog's thread (process.exit there ends only the thread). */
void exit_now(int code) {
  _exit(code);
}
