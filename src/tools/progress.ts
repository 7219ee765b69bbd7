// Live progress of a running tool (a command's output, an MCP server's notifications) reaches hosts
// (terminal spinner, editor tool-call view, trace) at most once per window: a tool may report
// thousands of times a second, and each report is an event for every host. Each tool keeps what
// it has pending its own way (the bash tool whole lines of its output's tail, an MCP tool the latest
// notification); the window is shared so both keep one pace.

export const PROGRESS_EVERY_MS = 250;
/** The most text one update carries. */
export const PROGRESS_CHARS = 4096;

/** `flush` runs once, `ms` after the first `poke` of a window; `stop` drops a window not yet flushed. */
export function progressWindow(flush: () => void, ms = PROGRESS_EVERY_MS) {
  let timer: ReturnType<typeof setTimeout> | null = null;
  return {
    poke() {
      timer ??= setTimeout(() => {
        timer = null;
        flush();
      }, ms);
    },
    stop() {
      if (timer) clearTimeout(timer);
      timer = null;
    },
  };
}
