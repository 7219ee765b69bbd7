// Unified line diffs for write/edit results. Common leading and trailing lines are skipped cheaply;
// only the changed middle is diffed (Myers), with a work cap beyond which the middle is shown as a
// plain replacement rather than spending seconds on a perfect diff.

export interface DiffOptions {
  /** Context lines around each change (default 3). */
  context?: number;
  /** 1-based line number of the first line of oldText / newText in their files (default 1). */
  oldStart?: number;
  newStart?: number;
}

export interface Diff {
  /** Hunks ('@@ … @@' and lines); '' when nothing changed. */
  text: string;
  added: number;
  removed: number;
}

type Op = '=' | '-' | '+';
interface Run {
  op: Op;
  len: number;
}

/** Lines with their terminators, so "x" at the end of a file differs from "x\n". */
export function splitLines(text: string): string[] {
  const out: string[] = [];
  for (let start = 0; start < text.length; ) {
    const nl = text.indexOf('\n', start);
    const end = nl === -1 ? text.length : nl + 1;
    out.push(text.slice(start, end));
    start = end;
  }
  return out;
}

/** Myers' O((N+M)D) diff; null when more than maxD differences would be needed. */
function myers(a: string[], b: string[], maxD: number): Op[] | null {
  const n = a.length;
  const m = b.length;
  const off = maxD + 1;
  const v = new Int32Array(2 * maxD + 3);
  const trace: Int32Array[] = [];
  for (let d = 0; d <= maxD; d++) {
    trace.push(v.slice(off - d - 1, off + d + 2));
    for (let k = -d; k <= d; k += 2) {
      let x = k === -d || (k !== d && v[off + k - 1]! < v[off + k + 1]!) ? v[off + k + 1]! : v[off + k - 1]! + 1;
      let y = x - k;
      while (x < n && y < m && a[x] === b[y]) {
        x++;
        y++;
      }
      v[off + k] = x;
      if (x >= n && y >= m) return backtrack(trace, n, m);
    }
  }
  return null;
}

function backtrack(trace: Int32Array[], n: number, m: number): Op[] {
  const ops: Op[] = [];
  let x = n;
  let y = m;
  for (let d = trace.length - 1; d > 0; d--) {
    const snap = trace[d]!; // v before step d, indexed k + d + 1
    const at = (k: number) => snap[k + d + 1]!;
    const k = x - y;
    const prevK = k === -d || (k !== d && at(k - 1) < at(k + 1)) ? k + 1 : k - 1;
    const prevX = at(prevK);
    const prevY = prevX - prevK;
    while (x > prevX && y > prevY) {
      ops.push('=');
      x--;
      y--;
    }
    ops.push(x === prevX ? '+' : '-');
    x = prevX;
    y = prevY;
  }
  while (x > 0 && y > 0) {
    ops.push('=');
    x--;
    y--;
  }
  return ops.reverse();
}

function compress(ops: Op[]): Run[] {
  const runs: Run[] = [];
  for (const op of ops) {
    const last = runs[runs.length - 1];
    if (last && last.op === op) last.len++;
    else runs.push({ op, len: 1 });
  }
  return runs;
}

function middleRuns(a: string[], b: string[]): Run[] {
  if (a.length === 0 || b.length === 0) return compress([...a.map(() => '-' as Op), ...b.map(() => '+' as Op)]);
  // Bound the work to roughly 20M line comparisons.
  const maxD = Math.max(16, Math.min(2000, Math.floor(20_000_000 / (a.length + b.length))));
  const ops = myers(a, b, maxD);
  return ops ? compress(ops) : [{ op: '-', len: a.length }, { op: '+', len: b.length }];
}

function render(prefix: string, line: string): string {
  const text = line.endsWith('\n') ? line.slice(0, line.endsWith('\r\n') ? -2 : -1) : line;
  return `${prefix}${text}${line.endsWith('\n') ? '' : '\n\\ No newline at end of file'}`;
}

export function unifiedDiff(oldText: string, newText: string, options: DiffOptions = {}): Diff {
  if (oldText === newText) return { text: '', added: 0, removed: 0 };
  const ctx = options.context ?? 3;
  const a = splitLines(oldText);
  const b = splitLines(newText);
  let pre = 0;
  while (pre < a.length && pre < b.length && a[pre] === b[pre]) pre++;
  let suf = 0;
  while (suf < a.length - pre && suf < b.length - pre && a[a.length - 1 - suf] === b[b.length - 1 - suf]) suf++;
  const runs: Run[] = [
    ...(pre ? [{ op: '=' as Op, len: pre }] : []),
    ...middleRuns(a.slice(pre, a.length - suf), b.slice(pre, b.length - suf)),
    ...(suf ? [{ op: '=' as Op, len: suf }] : []),
  ];

  const out: string[] = [];
  let added = 0;
  let removed = 0;
  let ai = 0;
  let bi = 0;
  let hunk: { aStart: number; bStart: number; aLen: number; bLen: number; lines: string[] } | null = null;
  const close = () => {
    if (!hunk) return;
    const oldFrom = hunk.aLen === 0 ? hunk.aStart - 1 : hunk.aStart;
    const newFrom = hunk.bLen === 0 ? hunk.bStart - 1 : hunk.bStart;
    out.push(`@@ -${oldFrom + (options.oldStart ?? 1)},${hunk.aLen} +${newFrom + (options.newStart ?? 1)},${hunk.bLen} @@`, ...hunk.lines);
    hunk = null;
  };
  runs.forEach((run, i) => {
    if (run.op === '=') {
      if (hunk) {
        const isLast = i === runs.length - 1;
        const take = isLast || run.len > 2 * ctx ? Math.min(ctx, run.len) : run.len;
        for (let j = 0; j < take; j++) hunk.lines.push(render(' ', a[ai + j]!));
        hunk.aLen += take;
        hunk.bLen += take;
        if (take < run.len || isLast) close();
      }
      ai += run.len;
      bi += run.len;
      return;
    }
    if (!hunk) {
      const lead = Math.min(ctx, ai, bi);
      hunk = { aStart: ai - lead, bStart: bi - lead, aLen: lead, bLen: lead, lines: [] };
      for (let j = lead; j > 0; j--) hunk.lines.push(render(' ', a[ai - j]!));
    }
    if (run.op === '-') {
      for (let j = 0; j < run.len; j++) hunk.lines.push(render('-', a[ai + j]!));
      hunk.aLen += run.len;
      removed += run.len;
      ai += run.len;
    } else {
      for (let j = 0; j < run.len; j++) hunk.lines.push(render('+', b[bi + j]!));
      hunk.bLen += run.len;
      added += run.len;
      bi += run.len;
    }
  });
  close();
  return { text: out.join('\n'), added, removed };
}
