// What a terminal shows of some output, for tests of what is drawn and erased in place.

/**
 * A terminal screen as far as the live stream uses one: text wrapping at `columns` (with the
 * pending wrap of a full row), line feeds as the tty sends them (CR LF), CR, cursor up, erase
 * below. Styles are dropped: what is compared is where the characters end up.
 */
export function screen(output: string, columns: number): string {
  const rows: string[][] = [[]];
  let row = 0;
  let col = 0;
  let wrap = false;
  for (const part of output.split(/(\x1b\[[0-9;]*[A-Za-z])/)) {
    const esc = /^\x1b\[([0-9;]*)([A-Za-z])$/.exec(part);
    if (esc) {
      if (esc[2] === 'A') row = Math.max(0, row - Number(esc[1] || 1));
      if (esc[2] === 'A') wrap = false;
      if (esc[2] === 'J') {
        rows[row]!.length = col;
        rows.length = row + 1;
      }
      continue;
    }
    for (const ch of part) {
      if (ch === '\n' || ch === '\r') {
        if (ch === '\n') row++;
        col = 0;
        wrap = false;
        rows[row] ??= [];
        continue;
      }
      if (wrap) {
        row++;
        col = 0;
        wrap = false;
        rows[row] ??= [];
      }
      const line = rows[row]!;
      while (line.length < col) line.push(' ');
      line[col] = ch;
      const w = Math.max(1, Bun.stringWidth(ch));
      for (let i = 1; i < w; i++) line[col + i] = '';
      col += w;
      if (col >= columns) {
        col = columns;
        wrap = true;
      }
    }
  }
  return rows.map((r) => r.join('').trimEnd()).join('\n').trimEnd();
}
