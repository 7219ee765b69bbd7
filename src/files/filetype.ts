// What a file is, from its first bytes (never from its name).

/** Images the model can see, with their media types. */
export type ImageType = 'image/png' | 'image/jpeg' | 'image/gif' | 'image/webp';

function startsWith(bytes: Uint8Array, magic: number[] | string, at = 0): boolean {
  const seq = typeof magic === 'string' ? [...magic].map((c) => c.charCodeAt(0)) : magic;
  if (bytes.length < at + seq.length) return false;
  return seq.every((b, i) => bytes[at + i] === b);
}

export function detectImage(head: Uint8Array): ImageType | null {
  if (startsWith(head, [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])) return 'image/png';
  if (startsWith(head, [0xff, 0xd8, 0xff])) return 'image/jpeg';
  if (startsWith(head, 'GIF87a') || startsWith(head, 'GIF89a')) return 'image/gif';
  if (startsWith(head, 'RIFF') && startsWith(head, 'WEBP', 8)) return 'image/webp';
  return null;
}

const SIGNATURES: [string, (h: Uint8Array) => boolean][] = [
  ['PDF document', (h) => startsWith(h, '%PDF-')],
  ['ZIP archive (also jar, docx, xlsx, apk)', (h) => startsWith(h, [0x50, 0x4b, 0x03, 0x04]) || startsWith(h, [0x50, 0x4b, 0x05, 0x06])],
  ['gzip compressed data', (h) => startsWith(h, [0x1f, 0x8b])],
  ['bzip2 compressed data', (h) => startsWith(h, 'BZh')],
  ['xz compressed data', (h) => startsWith(h, [0xfd, 0x37, 0x7a, 0x58, 0x5a, 0x00])],
  ['zstd compressed data', (h) => startsWith(h, [0x28, 0xb5, 0x2f, 0xfd])],
  ['7-zip archive', (h) => startsWith(h, [0x37, 0x7a, 0xbc, 0xaf, 0x27, 0x1c])],
  ['tar archive', (h) => startsWith(h, 'ustar', 257)],
  ['ELF executable or library', (h) => startsWith(h, [0x7f, 0x45, 0x4c, 0x46])],
  ['Mach-O executable', (h) => [[0xcf, 0xfa, 0xed, 0xfe], [0xce, 0xfa, 0xed, 0xfe], [0xca, 0xfe, 0xba, 0xbe]].some((m) => startsWith(h, m))],
  ['Windows executable (PE)', (h) => startsWith(h, 'MZ')],
  ['WebAssembly module', (h) => startsWith(h, [0x00, 0x61, 0x73, 0x6d])],
  ['SQLite database', (h) => startsWith(h, 'SQLite format 3\0')],
  ['BMP image (not sent: only PNG, JPEG, GIF and WebP are)', (h) => startsWith(h, 'BM')],
  ['TIFF image (not sent: only PNG, JPEG, GIF and WebP are)', (h) => startsWith(h, 'II*\0') || startsWith(h, 'MM\0*')],
  ['ICO image (not sent: only PNG, JPEG, GIF and WebP are)', (h) => startsWith(h, [0x00, 0x00, 0x01, 0x00])],
  ['MP4/QuickTime/HEIC media', (h) => startsWith(h, 'ftyp', 4)],
  ['MP3 audio', (h) => startsWith(h, 'ID3')],
  ['Ogg media', (h) => startsWith(h, 'OggS')],
  ['WAV audio', (h) => startsWith(h, 'RIFF') && startsWith(h, 'WAVE', 8)],
  ['UTF-16 text (little-endian BOM)', (h) => startsWith(h, [0xff, 0xfe])],
  ['UTF-16 text (big-endian BOM)', (h) => startsWith(h, [0xfe, 0xff])],
];

/** A human name for a binary file's type, or 'unknown binary data'. */
export function describeBinary(head: Uint8Array): string {
  return SIGNATURES.find(([, test]) => test(head))?.[0] ?? 'unknown binary data';
}

/**
 * Binary if the block holds a NUL byte or is not valid UTF-8. A multi-byte character cut by the end
 * of the block is not held against it when more of the file follows.
 */
export function looksBinary(block: Uint8Array, moreFollows: boolean): boolean {
  if (block.includes(0)) return true;
  try {
    new TextDecoder('utf-8', { fatal: true }).decode(block, { stream: moreFollows });
    return false;
  } catch {
    return true;
  }
}

/**
 * The longest prefix of `bytes` no longer than `max` that does not end inside a UTF-8 sequence.
 * Backs off over continuation bytes (10xxxxxx) to the lead byte of the sequence that would be cut.
 */
export function utf8SafeLength(bytes: Uint8Array, max: number): number {
  if (max >= bytes.length) return bytes.length;
  let i = max;
  while (i > 0 && ((bytes[i] ?? 0) & 0xc0) === 0x80) i--;
  return i;
}
