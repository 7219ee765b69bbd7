// What the terminal can take: colours, live text, Markdown. The Markdown and highlighting code is
// imported only when stdout is a terminal, so a piped run (scripts, CI) never loads it.
import { stderr, stdout } from '../core/stdio.ts';
import type { HumanOptions } from './render.ts';

/** NO_COLOR (any value) and TERM=dumb ask for text without escape codes. */
export function colorAllowed(env: NodeJS.ProcessEnv = process.env): boolean {
  return !env.NO_COLOR && env.TERM !== 'dumb';
}

export async function terminalOptions(json: boolean, cwd: string): Promise<HumanOptions> {
  const interactive = Boolean(stderr.isTTY) && !json;
  const streamText = Boolean(stdout.isTTY) && !json;
  const color = colorAllowed();
  let markdown: HumanOptions['markdown'];
  if (streamText) {
    const { markdownStream } = await import('./markdown.ts');
    // The paragraph being written shows as it arrives; the screen's size bounds what can be redrawn
    // (with cursor codes, which a dumb terminal would print as they are).
    const live = process.env.TERM === 'dumb' ? {} : { live: { columns: () => stdout.columns ?? 100, rows: () => stdout.rows ?? 24 } };
    markdown = markdownStream({ color, width: () => Math.max(20, (stdout.columns ?? 100) - 1), ...live });
  }
  // The spinner redraws its line with \r and an erase-line code, which a dumb terminal prints as is.
  const spinner = process.env.TERM !== 'dumb';
  return { color: interactive && color, interactive, streamText, markdown, cwd, ...(spinner ? {} : { spinner: false }) };
}
