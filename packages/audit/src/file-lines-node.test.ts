import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { open } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { forEachLine } from './file-lines-node';

const dir = mkdtempSync(join(tmpdir(), 'vouch-file-lines-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
let files = 0;

/** The lines of `bytes[start, end)` through forEachLine, reading blocks of `blockBytes`. */
async function linesOf(
  bytes: Uint8Array,
  start: number,
  end: number,
  blockBytes: number,
  stopAfter = Infinity,
) {
  const path = join(dir, `${files++}.txt`);
  writeFileSync(path, bytes);
  const handle = await open(path, 'r');
  const lines: string[] = [];
  try {
    await forEachLine(handle, { start, end }, (line) => lines.push(line) < stopAfter, blockBytes);
  } finally {
    await handle.close();
  }
  return lines;
}

/** What splitLines gives for the decoded text: split on \n, without the empty line after a last \n. */
function expected(bytes: Uint8Array): string[] {
  const text = Buffer.from(bytes).toString('utf8');
  const lines = text.split('\n');
  if (lines.at(-1) === '') lines.pop();
  return lines;
}

// Newlines, ASCII, the bytes of multi-byte characters (whole or cut) and invalid ones.
const someBytes = fc
  .array(
    fc.oneof(
      fc.constant([0x0a]),
      fc.constant([0x61]),
      fc.constant([0xc3, 0xa9]),
      fc.constant([0xf0, 0x9f, 0x98, 0x80]),
      fc.constant([0xe2, 0x82]),
      fc.constant([0xff]),
    ),
    { maxLength: 80 },
  )
  .map((parts) => Uint8Array.from(parts.flat()));

describe('forEachLine', () => {
  it('gives the lines splitLines gives, whatever the block size', async () => {
    await fc.assert(
      fc.asyncProperty(someBytes, fc.integer({ min: 1, max: 16 }), async (bytes, blockBytes) => {
        expect(await linesOf(bytes, 0, bytes.length, blockBytes)).toEqual(expected(bytes));
      }),
      { numRuns: 300 },
    );
  });

  it('reads only the range it is given', async () => {
    const bytes = new TextEncoder().encode('skip\nfirst\nsecond\nafter\n');
    expect(await linesOf(bytes, 5, 18, 3)).toEqual(['first', 'second']);
  });

  it('gives each of several calls at once its own lines', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(someBytes, { minLength: 2, maxLength: 4 }), async (texts) => {
        const all = await Promise.all(texts.map((bytes) => linesOf(bytes, 0, bytes.length, 4)));
        expect(all).toEqual(texts.map(expected));
      }),
      { numRuns: 100 },
    );
  });

  it('stops reading when onLine returns false', async () => {
    await fc.assert(
      fc.asyncProperty(
        someBytes,
        fc.integer({ min: 1, max: 16 }),
        fc.nat(5),
        async (bytes, blockBytes, stop) => {
          const all = expected(bytes);
          const lines = await linesOf(bytes, 0, bytes.length, blockBytes, stop + 1);
          expect(lines).toEqual(all.slice(0, stop + 1));
        },
      ),
      { numRuns: 100 },
    );
  });
});
