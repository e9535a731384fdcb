import type { FileHandle } from 'node:fs/promises';

const BLOCK_BYTES = 1 << 20;

/** Bytes `[start, end)` of a file. */
export interface ByteRange {
  start: number;
  end: number;
}
const NEWLINE = 0x0a;

/**
 * Call `onLine` with each line of the bytes `[start, end)` of a file, decoded as UTF-8
 * without its `\n`, the lines `splitLines` gives for the same bytes (a final empty line
 * after the last `\n` is not one). Reads blocks into one reused buffer and decodes each
 * line once, where a text stream would decode every block and then copy each line out of
 * a concatenation. A `\n` byte never occurs inside a UTF-8 sequence, so decoding line by
 * line gives the same text (with the same U+FFFD for invalid bytes) as decoding the whole.
 * `onLine` returns false to stop reading.
 */
export async function forEachLine(
  handle: FileHandle,
  range: ByteRange,
  onLine: (line: string) => unknown,
): Promise<void> {
  let buffer = Buffer.allocUnsafe(BLOCK_BYTES);
  let filled = 0;
  let position = range.start;
  while (position < range.end) {
    if (filled === buffer.length) {
      // A line longer than the buffer: grow it rather than split the line.
      const bigger = Buffer.allocUnsafe(buffer.length * 2);
      buffer.copy(bigger, 0, 0, filled);
      buffer = bigger;
    }
    const length = Math.min(buffer.length - filled, range.end - position);
    const { bytesRead } = await handle.read(buffer, filled, length, position);
    if (bytesRead === 0) break;
    position += bytesRead;
    filled += bytesRead;
    const bytes = buffer.subarray(0, filled);
    let lineStart = 0;
    for (let newline = bytes.indexOf(NEWLINE); newline !== -1; newline = bytes.indexOf(NEWLINE, lineStart)) {
      if (onLine(bytes.toString('utf8', lineStart, newline)) === false) return;
      lineStart = newline + 1;
    }
    buffer.copy(buffer, 0, lineStart, filled);
    filled -= lineStart;
  }
  if (filled > 0) onLine(buffer.toString('utf8', 0, filled));
}

/**
 * Cut `range` into ranges of whole lines of about `partBytes` each: every cut is just after
 * a `\n`, so each range starts at the beginning of a line.
 */
export async function lineRanges(
  handle: FileHandle,
  range: ByteRange,
  partBytes: number,
): Promise<ByteRange[]> {
  const ranges: ByteRange[] = [];
  const probe = Buffer.allocUnsafe(64 * 1024);
  let start = range.start;
  let target = start + partBytes;
  while (target < range.end) {
    const { bytesRead } = await handle.read(probe, 0, Math.min(probe.length, range.end - target), target);
    const newline = probe.subarray(0, bytesRead).indexOf(NEWLINE);
    if (newline === -1) {
      // A line longer than the probe: look further on.
      target += bytesRead;
      if (bytesRead === 0) break;
      continue;
    }
    const cut = target + newline + 1;
    if (cut >= range.end) break;
    ranges.push({ start, end: cut });
    start = cut;
    target = start + partBytes;
  }
  ranges.push({ start, end: range.end });
  return ranges;
}
