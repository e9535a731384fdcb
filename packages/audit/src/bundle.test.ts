import { bytesToHex } from '@noble/hashes/utils.js';
import fc from 'fast-check';
import { describe, expect, it, vi } from 'vitest';
import { encodeBundle, splitLines } from './bundle-format';
import { type BundleReport, type VerifyBundleOptions, verifyBundle } from './bundle-verify';
import { canonicalJson } from './canonical-json';
import { isAuditError } from './errors';
import {
  chain,
  checkpointFor,
  LOG,
  linesOf,
  ORIGIN,
  rootOf,
  sealed,
  signer,
  verifiers,
} from './fixtures/bundles';
import { EMPTY_TREE_ROOT } from './merkle-hash';
import { signNote } from './note';
import { generateNoteKeys, parseSignerKey } from './note-keys';

async function verify(
  lines: Iterable<string>,
  options?: Partial<VerifyBundleOptions>,
): Promise<BundleReport> {
  return verifyBundle(lines, { verifiers, ...options });
}

const codes = (report: BundleReport) => report.failures.map((f) => `${f.seq} ${f.code}`);

describe('verifyBundle', () => {
  describe('when the bundle is a faithful export', () => {
    it.each([0, 1, 13])('reports ok for a log of %i events', async (count) => {
      const events = chain(count);
      const report = await verify(await linesOf(events));
      expect(codes(report)).toEqual([]);
      expect(report).toMatchObject({
        ok: true,
        log: LOG,
        checked: count,
        head: count === 0 ? null : { seq: count, hash: events[count - 1]!.hash },
        checkpoint: {
          origin: ORIGIN,
          treeSize: count,
          rootHash: bytesToHex(rootOf(events)),
          verifiedBy: [ORIGIN],
        },
        root: bytesToHex(count === 0 ? EMPTY_TREE_ROOT : rootOf(events)),
      });
    });

    it('reads a file written with newlines through splitLines, in chunks of any size', async () => {
      const text = `${(await linesOf(chain(5))).join('\n')}\n`;
      await fc.assert(
        fc.asyncProperty(fc.integer({ min: 1, max: 200 }), async (size) => {
          const chunks = Array.from({ length: Math.ceil(text.length / size) }, (_, i) =>
            text.slice(i * size, (i + 1) * size),
          );
          expect((await verifyBundle(splitLines(chunks), { verifiers })).ok).toBe(true);
        }),
        { numRuns: 20 },
      );
    });

    it('accepts the empty last line of a text split on newlines', async () => {
      const lines = await linesOf(chain(3));
      expect((await verify(`${lines.join('\n')}\n`.split('\n'))).ok).toBe(true);
    });

    it('reports progress through onProgress', async () => {
      const onProgress = vi.fn();
      await verify(await linesOf(chain(5)), { onProgress, progressEvery: 2 });
      expect(onProgress.mock.calls).toEqual([[2], [4], [5]]);
    });
  });

  describe('when a payload was edited in the bundle', () => {
    it('reports PAYLOAD_HASH_MISMATCH at that seq and nothing else', async () => {
      const events = chain(6);
      const lines = await linesOf(events);
      lines[3] = JSON.stringify({ ...JSON.parse(lines[3]!), payload: canonicalJson({ n: 4 }) });
      expect(codes(await verify(lines))).toEqual(['3 PAYLOAD_HASH_MISMATCH']);
    });
  });

  describe('when history was rewritten and re-chained (every hash recomputed)', () => {
    it('passes the chain checks but reports ROOT_MISMATCH against the signed checkpoint', async () => {
      const original = chain(6);
      const forged = chain(6);
      forged[2] = sealed({ ...forged[2]!, payload: canonicalJson({ n: 'forged' }) });
      for (let i = 3; i < forged.length; i++)
        forged[i] = sealed({ ...forged[i]!, prev_hash: forged[i - 1]!.hash });
      const report = await verify(await linesOf(forged, checkpointFor(original)));
      expect(codes(report)).toEqual(['0 ROOT_MISMATCH']);
    });
  });

  describe('when an event line was deleted', () => {
    it('reports the gap, the broken link, the header count and the truncation', async () => {
      const lines = await linesOf(chain(5));
      lines.splice(3, 1);
      expect(codes(await verify(lines))).toEqual([
        '0 BUNDLE_MALFORMED',
        '4 SEQ_GAP',
        '4 PREV_HASH_MISMATCH',
        '5 TRUNCATED',
      ]);
    });
  });

  describe('when the checkpoint covers fewer events than the bundle holds', () => {
    it('reports BUNDLE_MALFORMED at the first uncovered seq', async () => {
      const events = chain(5);
      const lines = await linesOf(events, checkpointFor(events.slice(0, 3)));
      expect(codes(await verify(lines))).toEqual(['4 BUNDLE_MALFORMED']);
    });
  });

  describe('when lines are not what vouch-bundle/1 or /2 allows', () => {
    it.each([
      ['not JSON', '{"log":'],
      ['an array', '[1]'],
      ['an empty line', ''],
      ['an extra member', (line: string) => line.replace('{"log"', '{"extra":1,"log"')],
      ['an extra member at the end', (line: string) => line.replace(/}$/, ',"extra":1}')],
      [
        'a field commitment without its fields',
        (line: string) => line.replace(/}$/, ',"commitment":"fields/1"}'),
      ],
      ['a missing member', (line: string) => line.replace(/"actor":"gateway",/, '')],
      ['a string seq', (line: string) => line.replace('"seq":2', '"seq":"2"')],
      ['a numeric kind', (line: string) => line.replace('"kind":"proposal.created"', '"kind":7')],
      ['a lone surrogate', (line: string) => line.replace('"kind":"proposal.created"', '"kind":"\\ud800"')],
      [
        'an uppercase hash',
        (line: string) => line.replace(/"hash":"([0-9a-f]+)"/, (_, h) => `"hash":"${h.toUpperCase()}"`),
      ],
      ['a checkpoint that is not text', '{"checkpoint":1}'],
    ])('reports BUNDLE_MALFORMED for %s instead of event 2', async (_, change) => {
      const lines = await linesOf(chain(3));
      lines[2] = typeof change === 'string' ? change : change(lines[2]!);
      const report = await verify(lines);
      expect(report.failures).toContainEqual(
        expect.objectContaining({ seq: 2, code: 'BUNDLE_MALFORMED', line: 3 }),
      );
      expect(report.ok).toBe(false);
    });

    it.each([
      ['no JSON object', () => 'x'],
      ['an unknown format', (h: Record<string, unknown>) => ({ ...h, format: 'vouch-bundle/3' })],
      ['no log', (h: Record<string, unknown>) => ({ ...h, log: undefined })],
      ['an empty origin', (h: Record<string, unknown>) => ({ ...h, origin: '' })],
      ['a negative tree size', (h: Record<string, unknown>) => ({ ...h, treeSize: -1 })],
      ['a fractional tree size', (h: Record<string, unknown>) => ({ ...h, treeSize: 1.5 })],
    ])('reports BUNDLE_MALFORMED at seq 0 and stops for a header with %s', async (_, change) => {
      const lines = await linesOf(chain(2));
      const changed = change(JSON.parse(lines[0]!));
      lines[0] = typeof changed === 'string' ? changed : JSON.stringify(changed);
      const report = await verify(lines);
      expect(codes(report)).toEqual(['0 BUNDLE_MALFORMED']);
      expect(report.checked).toBe(0);
    });

    it('takes an event line whose members come in another order', async () => {
      const lines = await linesOf(chain(3));
      const event = JSON.parse(lines[2]!) as Record<string, unknown>;
      lines[2] = JSON.stringify(Object.fromEntries(Object.entries(event).reverse()));
      expect(codes(await verify(lines))).toEqual([]);
    });

    it('reports BUNDLE_MALFORMED for a member the line lacks and only Object.prototype has', async () => {
      const lines = await linesOf(chain(3));
      const hash = (JSON.parse(lines[2]!) as { hash: string }).hash;
      lines[2] = lines[2]!.replace(/,"hash":"[0-9a-f]+"}$/, '}');
      // Polluted, enumerable: for-in walks it after the line's own nine members.
      Object.defineProperty(Object.prototype, 'hash', {
        value: hash,
        enumerable: true,
        configurable: true,
        writable: true,
      });
      try {
        const report = await verify(lines);
        expect(report.failures).toContainEqual(
          expect.objectContaining({ seq: 2, code: 'BUNDLE_MALFORMED', line: 3 }),
        );
      } finally {
        delete (Object.prototype as { hash?: unknown }).hash;
      }
    });

    it('reports BUNDLE_MALFORMED for an empty bundle', async () => {
      expect(codes(await verify([]))).toEqual(['0 BUNDLE_MALFORMED']);
    });

    it('reports BUNDLE_MALFORMED when the checkpoint line is missing', async () => {
      const lines = await linesOf(chain(2));
      expect(codes(await verify(lines.slice(0, -1)))).toEqual(['0 BUNDLE_MALFORMED']);
    });

    it('reports BUNDLE_MALFORMED for a line after the checkpoint', async () => {
      const lines = await linesOf(chain(2));
      const report = await verify([...lines, lines[1]!]);
      expect(codes(report)).toEqual(['3 BUNDLE_MALFORMED']);
    });

    it('ignores informational header members', async () => {
      const events = chain(2);
      const lines: string[] = [];
      const extra = { exportedAt: '2026-11-30T05:00:00.000Z' };
      for await (const line of encodeBundle({
        log: LOG,
        origin: ORIGIN,
        treeSize: 2,
        checkpoint: checkpointFor(events),
        events,
        extra,
      })) {
        lines.push(line);
      }
      expect(JSON.parse(lines[0]!)).toMatchObject(extra);
      expect((await verify(lines)).ok).toBe(true);
    });
  });

  describe('when the checkpoint is not vouched for', () => {
    it('reports NO_TRUSTED_SIGNATURE when signed by a key the auditor does not trust', async () => {
      const stranger = parseSignerKey(generateNoteKeys(ORIGIN).signerKey);
      const events = chain(2);
      const lines = await linesOf(events, checkpointFor(events, { signers: [stranger] }));
      expect(codes(await verify(lines))).toEqual(['0 NO_TRUSTED_SIGNATURE']);
    });

    it('reports SIGNATURE_INVALID when the signed checkpoint was edited', async () => {
      const events = chain(2);
      const note = checkpointFor(events).replace(`${ORIGIN}\n2\n`, `${ORIGIN}\n3\n`);
      expect(codes(await verify(await linesOf(events, note)))).toEqual(['0 SIGNATURE_INVALID']);
    });

    it('reports CHECKPOINT_INVALID when the note is not a checkpoint', async () => {
      const events = chain(2);
      const note = signNote(`${ORIGIN}\nnot a size\n`, [signer]);
      expect(codes(await verify(await linesOf(events, note)))).toEqual(['0 CHECKPOINT_INVALID']);
    });

    it('reports ORIGIN_MISMATCH when the checkpoint is for another origin than the header', async () => {
      const events = chain(2);
      const lines = await linesOf(events, checkpointFor(events, { origin: 'vouch.example/log/other' }));
      expect(codes(await verify(lines))).toEqual(['0 ORIGIN_MISMATCH']);
    });

    it('reports ORIGIN_MISMATCH when the auditor expects another origin', async () => {
      const lines = await linesOf(chain(2));
      expect(codes(await verify(lines, { origin: 'vouch.example/log/mine' }))).toEqual(['0 ORIGIN_MISMATCH']);
    });
  });

  describe('when the key rotated and the checkpoint carries both signatures', () => {
    it('reports ok for an auditor who only knows the new key', async () => {
      const rotated = generateNoteKeys(ORIGIN);
      const events = chain(3);
      const note = checkpointFor(events, { signers: [signer, parseSignerKey(rotated.signerKey)] });
      const report = await verify(await linesOf(events, note), { verifiers: [rotated.verifierKey] });
      expect(report.ok).toBe(true);
    });
  });

  describe('when the auditor expects another log', () => {
    it('reports LOG_MISMATCH for the header and every event', async () => {
      const report = await verify(await linesOf(chain(2)), { log: 'tenant-b' });
      expect(codes(report)).toEqual(['0 LOG_MISMATCH', '1 LOG_MISMATCH', '2 LOG_MISMATCH']);
    });
  });

  describe('when the auditor holds an earlier trusted checkpoint', () => {
    const events = chain(8);

    it('reports ok when the bundle extends it', async () => {
      const trusted = { treeSize: 5, rootHash: rootOf(events.slice(0, 5)) };
      expect(codes(await verify(await linesOf(events), { trusted }))).toEqual([]);
    });

    it('reports ok for a trusted empty tree', async () => {
      const trusted = { treeSize: 0, rootHash: EMPTY_TREE_ROOT };
      expect((await verify(await linesOf(events), { trusted })).ok).toBe(true);
    });

    it('reports ROOT_MISMATCH at its size when the log was forked since', async () => {
      const other = chain(5, LOG).map((e) => e);
      other[4] = sealed({ ...other[4]!, actor: 'someone else' });
      const trusted = { treeSize: 5, rootHash: rootOf(other) };
      expect(codes(await verify(await linesOf(events), { trusted }))).toEqual(['5 ROOT_MISMATCH']);
    });

    it('reports TRUNCATED when the bundle ends before it', async () => {
      const trusted = { treeSize: 9, rootHash: EMPTY_TREE_ROOT };
      expect(codes(await verify(await linesOf(events), { trusted }))).toEqual(['9 TRUNCATED']);
    });

    it('throws MALFORMED_CHECKPOINT for a trusted state that is not one', async () => {
      const trusted = { treeSize: 1.5, rootHash: EMPTY_TREE_ROOT };
      const error = await verify(await linesOf(events), { trusted }).catch((e: unknown) => e);
      expect(isAuditError(error) && error.code).toBe('MALFORMED_CHECKPOINT');
    });
  });

  describe('when the auditor holds a trusted chain head', () => {
    it('reports REWRITTEN when the bundle disagrees with it', async () => {
      const events = chain(4);
      const report = await verify(await linesOf(events), { expectHead: { seq: 2, hash: events[2]!.hash } });
      expect(codes(report)).toEqual(['2 REWRITTEN']);
    });

    it('reports TRUNCATED when the bundle ends before it', async () => {
      const events = chain(4);
      const report = await verify(await linesOf(events.slice(0, 2)), {
        expectHead: { seq: 3, hash: events[2]!.hash },
      });
      expect(codes(report)).toContain('3 TRUNCATED');
    });
  });

  describe('when there are more failures than maxFailures', () => {
    it('keeps that many and counts the rest', async () => {
      const lines = await linesOf(chain(6));
      lines[4] = JSON.stringify({ ...JSON.parse(lines[4]!), payload: canonicalJson({ n: 0 }) });
      const broken = [lines[0]!, 'x', 'y', 'z', ...lines.slice(1)];
      const report = await verify(broken, { maxFailures: 2 });
      expect(codes(report)).toEqual(['1 BUNDLE_MALFORMED', '1 BUNDLE_MALFORMED']);
      expect(report.failuresOmitted).toBe(2);
    });
  });

  describe('when the signal is aborted', () => {
    it('rejects with the abort reason', async () => {
      const controller = new AbortController();
      controller.abort(new Error('stop'));
      await expect(verify(await linesOf(chain(2)), { signal: controller.signal })).rejects.toThrow('stop');
    });
  });
});

describe('encodeBundle', () => {
  describe('when the events carry extra columns', () => {
    it('writes only the StoredEvent members', async () => {
      const events = chain(1).map((e) => ({ ...e, created_by_db: 'x' }));
      const lines: string[] = [];
      for await (const line of encodeBundle({
        log: LOG,
        origin: ORIGIN,
        treeSize: 1,
        checkpoint: '',
        events,
      })) {
        lines.push(line);
      }
      expect(Object.keys(JSON.parse(lines[1]!))).toEqual([
        'log',
        'seq',
        'kind',
        'entity',
        'actor',
        'at',
        'payload',
        'payload_hash',
        'prev_hash',
        'hash',
      ]);
    });
  });
});

describe('splitLines', () => {
  describe('when lines are cut across chunks anywhere', () => {
    it('gives back exactly the lines', async () => {
      await fc.assert(
        fc.asyncProperty(
          fc.array(fc.string({ unit: fc.constantFrom('a', 'é', '\r', ' ') }), { minLength: 1, maxLength: 8 }),
          fc.array(fc.nat(), { maxLength: 6 }),
          async (lines, cuts) => {
            const text = `${lines.join('\n')}\n`;
            const points = [...new Set(cuts.map((c) => c % (text.length + 1)))].sort((a, b) => a - b);
            const chunks = [0, ...points].map((start, i) => text.slice(start, [...points, text.length][i]));
            const out: string[] = [];
            for await (const line of splitLines(chunks)) out.push(line);
            expect(out).toEqual(lines);
          },
        ),
      );
    });
  });

  describe('when the text does not end in a newline', () => {
    it('yields the last partial line', async () => {
      const out: string[] = [];
      for await (const line of splitLines(['a\nb', 'c'])) out.push(line);
      expect(out).toEqual(['a', 'bc']);
    });
  });
});
