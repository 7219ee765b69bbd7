// The read tool: numbered pages of text, images for vision models, a description for other binaries.
import { stat, type FileHandle } from 'node:fs/promises';
import type { BigIntStats } from 'node:fs';
import { Type } from '../../core/typebox.ts';
import type { Tool } from '../define.ts';
import type { ToolResult } from '../../core/content.ts';
import {
  DEFAULT_MAX_IMAGE_BASE64_BYTES,
  DEFAULT_READ_MAX_BYTES,
  DEFAULT_READ_MAX_LINES,
  formatBytes,
  type FileToolDeps,
} from '../../files/deps.ts';
import { directoryMessage, fsErrorMessage } from '../../files/errors.ts';
import { errorResult } from '../../core/content.ts';
import { describeBinary, detectImage, looksBinary } from '../../files/filetype.ts';
import { scanFull, scanPage, type Page } from '../../files/read-scan.ts';
import { openVerified } from '../../workspace/open-verified.ts';
import { PSEUDO_FILE_MAX_BYTES, readEnd, revisionOf } from '../../workspace/revision.ts';

/** Bytes examined to tell text from binary. */
const SNIFF_BYTES = 8192;

const parameters = Type.Object(
  {
    path: Type.String({ minLength: 1, description: 'File to read: relative to the workspace root, or absolute.' }),
    offset: Type.Optional(Type.Integer({ minimum: 1, description: '1-based line number to start at (default 1). Use the offset the previous page told you to continue with.' })),
    limit: Type.Optional(Type.Integer({ minimum: 1, description: 'Most lines to return (default 2000). A page also ends at 50 KiB.' })),
  },
  { additionalProperties: false },
);

const describe = (maxLines: number, maxBytes: number) => [
  'Read a file. Text comes back as numbered lines, "N<TAB>text"; the numbers are not part of the file.',
  `A page holds at most ${maxLines} lines or ${formatBytes(maxBytes)}; when more follows, the last line says which offset to continue with.`,
  "Each result states the file's revision (SHA-256); write and edit accept it as expected_revision.",
  'PNG, JPEG, GIF and WebP images are returned as images. Other binary files are described, not dumped.',
  'To list a directory or search, use bash (ls, rg, find).',
].join(' ');

type Fh = FileHandle;

export function createReadTool(deps: FileToolDeps): Tool {
  const maxLines = deps.readMaxLines ?? DEFAULT_READ_MAX_LINES;
  const maxBytes = deps.readMaxBytes ?? DEFAULT_READ_MAX_BYTES;
  const maxImage = deps.maxImageBase64Bytes ?? DEFAULT_MAX_IMAGE_BASE64_BYTES;
  const pseudoMax = deps.pseudoFileMaxBytes ?? PSEUDO_FILE_MAX_BYTES;
  const ws = deps.workspace;

  async function readText(fh: Fh, abs: string, st: BigIntStats, offset: number, limit: number, signal: AbortSignal): Promise<ToolResult> {
    const end = readEnd(st, pseudoMax);
    const request = { offset, limit: Math.min(limit, maxLines), maxBytes, end };
    let page: Page;
    let revision: string;
    let total: number;
    const facts = deps.revisions.cached(abs, st);
    if (facts?.lines) {
      ({ revision } = facts);
      total = facts.lines.total;
      page = offset > total ? { lines: [], first: offset, stoppedBy: null, cutLine: null } : await scanPage(fh, request, facts.lines.checkpoints, signal);
    } else {
      const startedAt = Date.now();
      const full = await scanFull(fh, request, signal);
      ({ page, revision } = full);
      total = full.totalLines;
      deps.revisions.remember(abs, st, { revision, lines: { total, checkpoints: full.checkpoints } }, startedAt);
    }
    deps.revisions.record(abs, revision);
    const shown = ws.display(abs);
    const details = { path: abs, revision, totalLines: total };
    if (total === 0) {
      if (offset > 1) return errorResult(`offset ${offset} is past the end: ${shown} is empty (revision ${revision}).`, details);
      return { content: [{ type: 'text', text: `[${shown} is empty; revision ${revision}]` }], details };
    }
    if (offset > total) {
      return errorResult(`offset ${offset} is past the end of ${shown}: it has ${total} lines (revision ${revision}). Use an offset from 1 to ${total}.`, details);
    }
    // A pseudo-file may hold more than was read: say so rather than call its page the end of the file.
    const cutAt = st.size === 0n && (await fh.read(Buffer.alloc(1), 0, 1, end)).bytesRead > 0 ? end : null;
    return { content: [{ type: 'text', text: formatPage(page, total, revision, shown, maxBytes, cutAt) }], details };
  }

  async function readImage(fh: Fh, abs: string, st: BigIntStats, mediaType: string): Promise<ToolResult> {
    const size = Number(st.size);
    const shown = ws.display(abs);
    const kind = mediaType.slice('image/'.length).toUpperCase();
    if (Math.ceil(size / 3) * 4 > maxImage) {
      const rawCap = Math.floor(maxImage / 4) * 3;
      return errorResult(
        `${shown} is a ${kind} image of ${formatBytes(size)}; images over ${formatBytes(rawCap)} (${formatBytes(maxImage)} as base64) are not sent to the model. ` +
          `Make a smaller copy with bash (e.g. \`convert ${shown} -resize 50% /tmp/small.png\`) and read that.`,
      );
    }
    // Only the bytes the size promised: an image a command keeps appending to is not chased.
    const end = readEnd(st, pseudoMax);
    const buffer = Buffer.alloc(end);
    let length = 0;
    while (length < end) {
      const { bytesRead } = await fh.read(buffer, length, end - length, length);
      if (bytesRead === 0) break;
      length += bytesRead;
    }
    const bytes = buffer.subarray(0, length);
    const revision = revisionOf(bytes);
    deps.revisions.record(abs, revision);
    return {
      content: [
        { type: 'text', text: `[${shown}: ${kind} image, ${formatBytes(bytes.length)}; revision ${revision}]` },
        { type: 'image', mediaType, data: Buffer.from(bytes).toString('base64') },
      ],
      details: { path: abs, revision },
    };
  }

  return {
    name: 'read',
    source: 'kernel',
    description: describe(maxLines, maxBytes),
    parameters,
    async execute(args, ctx) {
      const { path, offset = 1, limit = maxLines } = args as { path: string; offset?: number; limit?: number };
      const abs = await ws.resolve(path, 'read');
      let fh: Fh;
      try {
        // Stat before opening: opening a FIFO would block, and a device may never end.
        const pre = await stat(abs);
        if (pre.isDirectory()) return errorResult(directoryMessage(abs, ws, 'read'));
        if (!pre.isFile()) return errorResult(`${ws.display(abs)} is not a regular file (a device, FIFO or socket); read only reads files.`);
        // Non-blocking, then checked again on the handle: the path may have become a FIFO since the
        // stat, and a blocked open would hang the run past every deadline. Verified: the handle is
        // the file the policy approved, even if a directory on its path was swapped since.
        fh = await openVerified(abs);
        if (!(await fh.stat()).isFile()) {
          await fh.close();
          return errorResult(`${ws.display(abs)} is not a regular file (a device, FIFO or socket); read only reads files.`);
        }
      } catch (error) {
        const message = await fsErrorMessage(error, abs, ws, 'read');
        if (message === null) throw error;
        return errorResult(message);
      }
      try {
        const st = await fh.stat({ bigint: true });
        const size = Number(st.size);
        const head = Buffer.alloc(SNIFF_BYTES);
        const { bytesRead } = await fh.read(head, 0, head.length, 0);
        const sniff = head.subarray(0, bytesRead);
        const image = detectImage(sniff);
        if (image) return await readImage(fh, abs, st, image);
        if (looksBinary(sniff, bytesRead === SNIFF_BYTES)) {
          const revision = await deps.revisions.revisionOfHandle(abs, fh, st, ctx.signal, readEnd(st, pseudoMax));
          deps.revisions.record(abs, revision);
          return {
            content: [
              {
                type: 'text',
                text:
                  `[${ws.display(abs)} is binary: ${describeBinary(sniff)}, ${formatBytes(size)}; revision ${revision}. ` +
                  'Its content is not shown; inspect it with bash (e.g. `file`, `xxd | head`, `unzip -l`).]',
              },
            ],
            details: { path: abs, revision, binary: true },
          };
        }
        return await readText(fh, abs, st, offset, limit, ctx.signal);
      } catch (error) {
        const message = await fsErrorMessage(error, abs, ws, 'read');
        if (message === null) throw error;
        return errorResult(message);
      } finally {
        await fh.close();
      }
    },
  };
}

function formatPage(page: Page, total: number, revision: string, shown: string, maxBytes: number, cutAt: number | null): string {
  const decoder = new TextDecoder('utf-8', { ignoreBOM: true });
  const last = page.first + page.lines.length - 1;
  const width = String(last).length;
  let crlf = false;
  const out: string[] = [];
  page.lines.forEach((bytes, i) => {
    let text = decoder.decode(bytes);
    if (page.first + i === 1 && text.startsWith('\uFEFF')) text = text.slice(1);
    if (text.endsWith('\r')) {
      text = text.slice(0, -1);
      crlf = true;
    }
    out.push(`${String(page.first + i).padStart(width)}\t${text}`);
  });
  const notes: string[] = [];
  if (page.cutLine !== null) {
    notes.push(
      `[line ${page.cutLine} is longer than ${formatBytes(maxBytes)} and was cut; see the rest with bash, e.g. \`sed -n '${page.cutLine}p' ${shown} | cut -b ${maxBytes + 1}-\`]`,
    );
  }
  if (crlf) notes.push('[the file uses CRLF line endings (shown without \\r); edit keeps them]');
  if (cutAt !== null) {
    notes.push(`[${shown} reports a size of 0, as /proc and /sys files do; only its first ${formatBytes(cutAt)} were read; see the rest with bash, e.g. \`tail -c +${cutAt + 1} ${shown} | head -c ${maxBytes}\`]`);
  }
  notes.push(`[revision ${revision}]`);
  const why = page.stoppedBy === 'bytes' && page.cutLine === null ? ` (page limit ${formatBytes(maxBytes)})` : '';
  notes.push(last < total ? `[lines ${page.first}-${last} of ${total}${why}; continue with offset=${last + 1}]` : `[lines ${page.first}-${last} of ${total}; end of file]`);
  return `${out.join('\n')}\n\n${notes.join('\n')}`;
}
