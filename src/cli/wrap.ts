// Lines conch says on a terminal (the welcome line, `conch: …` errors and notices), broken between
// words at its width: the terminal's own wrap cuts a word in two at the last column, and a narrow
// pane (40 columns) made a path or a flag in an error unreadable.

/** Continued lines are indented, so the next message still starts at the left edge. */
const INDENT = '  ';

/**
 * `text` with each line longer than `columns` broken at its last space that fits; undefined columns
 * (not a terminal) leave it as it is. Indented lines (a table, a listing) are laid out already and
 * stay; a word wider than the line is left for the terminal to wrap. Widths are as shown (escape
 * sequences take none, wide characters two).
 */
export function wrapWords(text: string, columns: number | undefined): string {
  if (!columns || columns < 20) return text;
  return text
    .split('\n')
    .map((line) => (line.startsWith(' ') || Bun.stringWidth(line) <= columns ? line : breakLine(line, columns)))
    .join('\n');
}

function breakLine(line: string, columns: number): string {
  const rows: string[] = [];
  let row = '';
  for (const word of line.split(' ')) {
    const next = row === '' ? word : `${row} ${word}`;
    if (row !== '' && Bun.stringWidth(next) > columns) {
      rows.push(row);
      row = `${INDENT}${word}`;
    } else row = next;
  }
  rows.push(row);
  return rows.join('\n');
}
