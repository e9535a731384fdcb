import type { FileHandle } from 'node:fs/promises';

const BLOCK_BYTES = 1 << 20;

/** Bytes `[start, end)` of a file. */
export interface ByteRange {
  start: number;
  end: number;
}
const NEWLINE = 0x0a;

/**
 * Block buffers of earlier calls, kept for the next: a worker verifies a part of a few MiB per
 * call, and fresh 1 MiB buffers for each were external memory the collector had to chase.
 */
const freeBlocks: Buffer[] = [];

function takeBlock(bytes: number): Buffer {
  const index = freeBlocks.findIndex((block) => block.length === bytes);
  return index === -1 ? Buffer.allocUnsafe(bytes) : freeBlocks.splice(index, 1)[0]!;
}

/**
 * Call `onLine` with each line of the bytes `[start, end)` of a file, decoded as UTF-8
 * without its `\n`, the lines `splitLines` gives for the same bytes (a final empty line
 * after the last `\n` is not one). Reads blocks into two reused buffers, the next block
 * while the lines of this one are checked, and decodes each line once, where a text stream
 * would decode every block and then copy each line out of a concatenation. A `\n` byte
 * never occurs inside a UTF-8 sequence, so decoding line by line gives the same text (with
 * the same U+FFFD for invalid bytes) as decoding the whole. `onLine` returns false to stop
 * reading.
 */
export async function forEachLine(
  handle: FileHandle,
  range: ByteRange,
  onLine: (line: string) => unknown,
  blockBytes = BLOCK_BYTES,
): Promise<void> {
  const buffers = [takeBlock(blockBytes), takeBlock(blockBytes)] as const;
  let position = range.start;
  const read = (buffer: Buffer): Promise<number> => {
    const length = Math.min(buffer.length, range.end - position);
    if (length <= 0) return Promise.resolve(0);
    const at = position;
    position += length;
    return handle.read(buffer, 0, length, at).then(({ bytesRead }) => {
      // A file cut short under us: read on from where it really ended.
      if (bytesRead < length) position = at + bytesRead;
      return bytesRead;
    });
  };
  // The start of a line that runs past the block it began in, copied out of that block.
  let carry: Buffer | undefined;
  let [current, spare] = buffers;
  let next = read(current);
  try {
    for (;;) {
      const bytesRead = await next;
      if (bytesRead === 0) break;
      const bytes = current.subarray(0, bytesRead);
      [current, spare] = [spare, current];
      next = read(current);
      let lineStart = 0;
      let newline = bytes.indexOf(NEWLINE);
      if (carry !== undefined) {
        if (newline === -1) {
          carry = Buffer.concat([carry, bytes]);
          continue;
        }
        const line = Buffer.concat([carry, bytes.subarray(0, newline)]).toString('utf8');
        carry = undefined;
        if (onLine(line) === false) return;
        lineStart = newline + 1;
        newline = bytes.indexOf(NEWLINE, lineStart);
      }
      while (newline !== -1) {
        if (onLine(bytes.toString('utf8', lineStart, newline)) === false) return;
        lineStart = newline + 1;
        newline = bytes.indexOf(NEWLINE, lineStart);
      }
      if (lineStart < bytesRead) carry = Buffer.from(bytes.subarray(lineStart));
    }
  } finally {
    // The read ahead must land before the caller closes the file.
    await next.catch(() => undefined);
    freeBlocks.push(...buffers);
  }
  if (carry !== undefined) onLine(carry.toString('utf8'));
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
