import { createReadStream } from 'node:fs';
import { mkdtemp, open, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type VerifyBundleFileOptions, verifyBundleFile } from './bundle-file-node';
import { splitLines } from './bundle-format';
import { type BundleFailure, type VerifyBundleOptions, verifyBundle } from './bundle-verify';
import { lineRanges } from './file-lines-node';
import { chain, linesOf, sealed, verifiers } from './fixtures/bundles';

// verifyBundleFile must give exactly the report verifyBundle gives over the same file read
// as a text stream (what `vouch verify --bundle` did before): the same failures in the same
// order, whatever was tampered with and wherever, on one thread or across worker threads
// whose parts meet anywhere. Parts of a few lines put seams everywhere in a small file.

const EVENTS = 40;
/** About two event lines per part. */
const PART_BYTES = 700;

let dir: string;
let clean: string[];
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'vouch-bundle-file-'));
  clean = await linesOf(chain(EVENTS));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

let files = 0;
async function fileOf(content: string | Buffer): Promise<string> {
  const path = join(dir, `bundle-${files++}.jsonl`);
  await writeFile(path, content);
  return path;
}

/** The report of the one-pass verifier over the file, read as a UTF-8 stream in small chunks. */
function sequential(path: string, options?: Partial<VerifyBundleOptions>) {
  const chunks = createReadStream(path, { encoding: 'utf8', highWaterMark: 97 });
  return verifyBundle(splitLines(chunks), { verifiers, ...options });
}

function fromFile(path: string, options?: Partial<VerifyBundleFileOptions>) {
  return verifyBundleFile(path, { verifiers, partBytes: PART_BYTES, ...options });
}

const TAMPERS = [
  'edit-payload',
  'delete',
  'duplicate',
  'swap-with-next',
  'not-json',
  'empty-line',
  'edit-seq',
  'checkpoint-here',
  'invalid-utf8',
  'lone-surrogate',
  'reseal',
  'extra-member',
] as const;
type Tamper = (typeof TAMPERS)[number];

/** The bundle's bytes with one line (0 = header) tampered with. */
function tampered(lines: readonly string[], at: number, tamper: Tamper): Buffer {
  const out = [...lines];
  const line = out[at]!;
  const event = () => JSON.parse(line) as Record<string, unknown>;
  switch (tamper) {
    case 'edit-payload':
      out[at] = line.replace('"n\\":', '"n\\":9');
      break;
    case 'delete':
      out.splice(at, 1);
      break;
    case 'duplicate':
      out.splice(at, 0, line);
      break;
    case 'swap-with-next':
      if (at + 1 < out.length) [out[at], out[at + 1]] = [out[at + 1]!, line];
      break;
    case 'not-json':
      out[at] = `${line.slice(0, 10)}`;
      break;
    case 'empty-line':
      out.splice(at, 0, '');
      break;
    case 'edit-seq':
      out[at] = line.replace(/"seq":(\d+)/, (_, seq) => `"seq":${Number(seq) + 1}`);
      break;
    case 'checkpoint-here':
      out.splice(at, 0, out.at(-1)!);
      break;
    case 'invalid-utf8': {
      const bytes = Buffer.from(`${out.join('\n')}\n`);
      const offset = Buffer.byteLength(`${out.slice(0, at).join('\n')}\n`) + 5;
      bytes[Math.min(offset, bytes.length - 1)] = 0xff;
      return bytes;
    }
    case 'lone-surrogate':
      out[at] = line.replace('"entity":"', '"entity":"\\ud800');
      break;
    case 'reseal':
      // A forger who recomputes this event's hashes: the next link breaks instead.
      if (line.includes('"seq"')) out[at] = JSON.stringify(sealed({ ...event(), actor: 'forger' } as never));
      break;
    case 'extra-member':
      out[at] = line.replace('{', '{"extra":1,');
      break;
  }
  return Buffer.from(`${out.join('\n')}\n`);
}

const tamperArb = fc.constantFrom(...TAMPERS);

describe('verifyBundleFile', () => {
  describe('when the bundle is a faithful export', () => {
    it.each([1, 2])('reports what verifyBundle reports, with %i thread(s)', async (threads) => {
      const path = await fileOf(`${clean.join('\n')}\n`);
      const report = await fromFile(path, { threads });
      expect(report.ok).toBe(true);
      expect(report.checked).toBe(EVENTS);
      expect(report).toEqual(await sequential(path));
    });

    it('reports each part through onProgress, ending at the number of events', async () => {
      const path = await fileOf(`${clean.join('\n')}\n`);
      const seen: number[] = [];
      await fromFile(path, { threads: 2, onProgress: (n) => seen.push(n) });
      expect(seen.length).toBeGreaterThan(2);
      expect(seen).toEqual([...seen].sort((a, b) => a - b));
      expect(seen.at(-1)).toBe(EVENTS);
    });
  });

  describe('when one line anywhere was tampered with', () => {
    it('gives the same report as verifyBundle, on one thread and on two', async () => {
      await fc.assert(
        fc.asyncProperty(fc.integer({ min: 0, max: EVENTS + 1 }), tamperArb, async (at, tamper) => {
          const bytes = tampered(clean, at, tamper);
          fc.pre(!bytes.equals(Buffer.from(`${clean.join('\n')}\n`)));
          const path = await fileOf(bytes);
          const expected = await sequential(path);
          // The header may carry informational members (`BundleHeader`): one more is no tamper.
          expect(expected.ok).toBe(at === 0 && tamper === 'extra-member');
          expect(await fromFile(path, { threads: 1 })).toEqual(expected);
          expect(await fromFile(path, { threads: 2 })).toEqual(expected);
        }),
        { numRuns: 60 },
      );
    });
  });

  describe('when the tampered line is exactly at a seam between two parts', () => {
    it('gives the same first failure, and the same report, as verifyBundle', async () => {
      const path = await fileOf(`${clean.join('\n')}\n`);
      const handle = await open(path, 'r');
      const header = Buffer.byteLength(`${clean[0]}\n`);
      const { size } = await handle.stat();
      const ranges = await lineRanges(handle, { start: header, end: size }, PART_BYTES);
      await handle.close();
      // The line numbers (0 = header) that start a part, and the lines that end one.
      const offsets = clean.map((_, i) =>
        Buffer.byteLength(
          clean
            .slice(0, i)
            .map((l) => `${l}\n`)
            .join(''),
        ),
      );
      const firsts = ranges.slice(1).map((r) => offsets.indexOf(r.start));
      expect(firsts.length).toBeGreaterThan(10);
      expect(firsts).not.toContain(-1);
      await fc.assert(
        fc.asyncProperty(
          fc.constantFrom(...firsts),
          fc.boolean(),
          tamperArb,
          async (first, before, tamper) => {
            const at = before ? first - 1 : first;
            const tamperedPath = await fileOf(tampered(clean, at, tamper));
            const expected = await sequential(tamperedPath);
            const report = await fromFile(tamperedPath, { threads: 2 });
            expect(report.failures[0]).toEqual(expected.failures[0]);
            expect(report).toEqual(expected);
          },
        ),
        { numRuns: 40 },
      );
    });
  });

  describe('when onEvent checks the events (as the CLI checks record rules)', () => {
    it('sees them in file order and its failures land where one pass puts them', async () => {
      await fc.assert(
        fc.asyncProperty(fc.integer({ min: 1, max: EVENTS }), tamperArb, async (at, tamper) => {
          const path = await fileOf(tampered(clean, at, tamper));
          const run = async (verify: (o: Partial<VerifyBundleFileOptions>) => Promise<unknown>) => {
            const seen: number[] = [];
            const onEvent = (event: { seq: number }, fail: (f: BundleFailure) => void) => {
              seen.push(event.seq);
              if (event.seq % 3 === 0)
                fail({ seq: event.seq, code: 'RECORD_RULE_VIOLATION', message: 'rule' });
            };
            return { report: await verify({ onEvent }), seen };
          };
          const expected = await run((o) => sequential(path, o));
          expect(await run((o) => fromFile(path, { ...o, threads: 2 }))).toEqual(expected);
          expect(
            await run((o) => fromFile(path, { ...o, threads: 2, onEventKinds: ['proposal.created'] })),
          ).toEqual(expected);
        }),
        { numRuns: 25 },
      );
    });

    it('keeps events of other kinds than onEventKinds in the workers', async () => {
      const path = await fileOf(`${clean.join('\n')}\n`);
      const seen: number[] = [];
      const report = await fromFile(path, {
        threads: 2,
        onEventKinds: ['decision'],
        onEvent: (event) => seen.push(event.seq),
      });
      expect(report.ok).toBe(true);
      expect(seen).toEqual([]);
    });
  });

  describe('when there are more failures than maxFailures', () => {
    it('keeps the same ones and counts the rest, across parts', async () => {
      const lines = clean.map((line, i) => (i > 0 && i <= EVENTS ? line.replace('"n\\":', '"n\\":7') : line));
      const path = await fileOf(`${lines.join('\n')}\n`);
      const expected = await sequential(path, { maxFailures: 5 });
      expect(expected.failuresOmitted).toBeGreaterThan(0);
      expect(await fromFile(path, { threads: 2, maxFailures: 5 })).toEqual(expected);
    });
  });
});
