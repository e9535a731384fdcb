import { bytesToHex } from '@noble/hashes/utils.js';
import { describe, expect, it } from 'vitest';
import { encodeBundle } from './bundle-format';
import { canonicalJson } from './canonical-json';
import { signCheckpoint } from './checkpoint';
import { generateCosignerKeys, parseCosignerSignerKey } from './cosignature';
import { isAuditError } from './errors';
import { eventHashOf, GENESIS_PREV_HASH, payloadHashOf, type StoredEvent } from './event-hash';
import { eventLeafHash } from './merkle-hash';
import { MemoryMerkleTree } from './merkle-memory-tree';
import { consistencyProof } from './merkle-proofs';
import { signNote } from './note';
import { generateNoteKeys, parseSignerKey } from './note-keys';
import { type WitnessLogOptions, witnessBundle, witnessLog } from './witness';
import type { WitnessFetch } from './witness-http';
import { nextTrustedNote } from './witness-trusted-note';

// The witness against a fake server built from this package's own primitives: what it
// stores (events, Merkle tree, checkpoints) can be made to disagree the way a database
// owner could make them disagree, and every route can be made to fail.

const LOG = 'orders';
const ORIGIN = `audit.example/v/${LOG}`;
const keys = generateNoteKeys('audit.example/v');
const signer = parseSignerKey(keys.signerKey);
const verifiers = [keys.verifierKey];

/** Events 1..n of `payloads`, chained by the ledger's rules. */
function chain(payloads: readonly unknown[], log = LOG): StoredEvent[] {
  const events: StoredEvent[] = [];
  for (const [i, value] of payloads.entries()) {
    const payload = canonicalJson({ value, text: 'é\u2028✓' });
    const header = {
      log,
      seq: i + 1,
      kind: 'note',
      entity: `e${i + 1}`,
      actor: 'user:alice',
      at: new Date(Date.UTC(2026, 11, 1, 0, 0, i)).toISOString(),
      payload_hash: payloadHashOf(payload),
      prev_hash: events[i - 1]?.hash ?? GENESIS_PREV_HASH,
    };
    events.push({ ...header, payload, hash: eventHashOf(header) });
  }
  return events;
}

const numbers = (n: number) => Array.from({ length: n }, (_, i) => i + 1);
const treeOf = (events: readonly StoredEvent[]) =>
  MemoryMerkleTree.fromLeafHashes(events.map((e) => eventLeafHash(e.hash)));
const checkpointOf = (events: readonly StoredEvent[], size = events.length, origin = ORIGIN) =>
  signCheckpoint({ origin, treeSize: size, rootHash: treeOf(events).root(size) }, [signer]);

/** What the fake server stores and how each route answers. */
interface FakeServer {
  events: StoredEvent[];
  /** The stored Merkle tree proofs come from (default: over `events`). */
  tree?: MemoryMerkleTree;
  /** The latest checkpoint note (default: signed over all `events`). */
  checkpoint?: string;
  status?: Partial<Record<'checkpoint' | 'export' | 'consistency', number>>;
  /** Bytes per body chunk of the export (default: one line per chunk). */
  chunkBytes?: number;
  /** Fail the export body after this many chunks. */
  breakAfterChunks?: number;
  /** Send nothing more of the export body after this many chunks, and never end it. */
  stallAfterChunks?: number;
  /** Raw lines to serve instead of the events. */
  lines?: string[];
}

interface Served {
  fetch: WitnessFetch;
  /** Export chunks the witness pulled, and whether it cancelled the body. */
  pulled(): number;
  cancelled(): boolean;
}

function serve(server: FakeServer): Served {
  let pulled = 0;
  let cancelled = false;
  const fetch: WitnessFetch = async (url, init) => {
    expect(init.headers.authorization).toBe('Bearer vch_auditor');
    const { pathname, searchParams } = new URL(url);
    const route = pathname.replace(`/v1/logs/${LOG}/`, '');
    const name = route === 'proofs/consistency' ? 'consistency' : route;
    const status = server.status?.[name as 'checkpoint'];
    if (status !== undefined) {
      return Response.json(
        { error: { code: status === 404 ? 'NOT_FOUND' : 'X', message: 'no' } },
        { status },
      );
    }
    if (route === 'checkpoint') return new Response(server.checkpoint ?? checkpointOf(server.events));
    if (route === 'proofs/consistency') {
      const size1 = Number(searchParams.get('first'));
      const size2 = Number(searchParams.get('second'));
      const proof = await consistencyProof(server.tree ?? treeOf(server.events), { size1, size2 });
      return Response.json({ first: size1, second: size2, proof: proof.map(bytesToHex) });
    }
    if (route === 'export') {
      const text = (server.lines ?? server.events.map((e) => JSON.stringify(e))).map((l) => `${l}\n`);
      const bytes = new TextEncoder().encode(text.join(''));
      const chunks: Uint8Array[] = [];
      if (server.chunkBytes === undefined) {
        for (const line of text) chunks.push(new TextEncoder().encode(line));
      } else {
        for (let i = 0; i < bytes.length; i += server.chunkBytes)
          chunks.push(bytes.slice(i, i + server.chunkBytes));
      }
      const body = new ReadableStream<Uint8Array>(
        {
          pull(controller) {
            if (server.breakAfterChunks !== undefined && pulled >= server.breakAfterChunks) {
              controller.error(new Error('connection reset'));
              return;
            }
            if (server.stallAfterChunks !== undefined && pulled >= server.stallAfterChunks) {
              return new Promise<void>(() => {});
            }
            const chunk = chunks[pulled++];
            if (chunk === undefined) controller.close();
            else controller.enqueue(chunk);
          },
          cancel() {
            cancelled = true;
          },
        },
        { highWaterMark: 0 },
      );
      return new Response(body);
    }
    return new Response('no route', { status: 404 });
  };
  return { fetch, pulled: () => pulled, cancelled: () => cancelled };
}

function witness(served: Served, trusted: string | null, extra: Partial<WitnessLogOptions> = {}) {
  const common = { url: 'http://vouch.test/', apiKey: 'vch_auditor', fetch: served.fetch, verifiers };
  return trusted === null
    ? witnessLog({ ...common, trusted: null, log: LOG, ...extra } as WitnessLogOptions)
    : witnessLog({ ...common, trusted, ...extra } as WitnessLogOptions);
}

/** The events with event `seq` rewritten and every later hash recomputed: a valid chain. */
function rewritten(events: StoredEvent[], seq: number): StoredEvent[] {
  return chain(events.map((e) => (e.seq === seq ? 'rewritten' : JSON.parse(e.payload).value)));
}

async function rejection(promise: Promise<unknown>): Promise<string> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  return isAuditError(error) ? error.code : `not an AuditError: ${String(error)}`;
}

describe('witnessLog', () => {
  const log = chain(numbers(8));
  const trustedAt4 = checkpointOf(log, 4);

  describe('when the log only grew', () => {
    it('recomputes every served event and returns the new checkpoint to keep', async () => {
      const served = checkpointOf(log);
      const { report, note } = await witness(serve({ events: log }), trustedAt4);
      expect(report).toMatchObject({
        ok: true,
        status: 'CONSISTENT',
        log: LOG,
        checked: 8,
        trusted: { tree_size: 4, origin: ORIGIN },
        latest: { tree_size: 8 },
        failures: [],
      });
      expect(note).toBe(served);
    });

    it('reports unchanged and keeps the file as it is when the checkpoint did not move', async () => {
      const same = checkpointOf(log);
      const { report, note } = await witness(serve({ events: log, checkpoint: same }), same);
      expect([report.status, report.message, note]).toEqual(['CONSISTENT', 'unchanged at 8 events', null]);
    });

    it('reads the events only up to the checkpoint, and cancels the rest of the body', async () => {
      const longer = chain(numbers(40));
      const server = serve({ events: longer, checkpoint: checkpointOf(longer, 8) });
      const { report } = await witness(server, trustedAt4);
      expect([report.status, report.checked]).toEqual(['CONSISTENT', 8]);
      expect(server.pulled()).toBe(8);
      expect(server.cancelled()).toBe(true);
    });

    it('reassembles lines split anywhere, inside a multi-byte character too', async () => {
      const { report } = await witness(serve({ events: log, chunkBytes: 7 }), trustedAt4);
      expect([report.status, report.checked]).toEqual(['CONSISTENT', 8]);
    });

    it('reports progress as it recomputes', async () => {
      const seen: number[] = [];
      await witness(serve({ events: log }), trustedAt4, {
        onProgress: (n) => seen.push(n),
        progressEvery: 3,
      });
      expect(seen).toEqual([3, 6, 8]);
    });
  });

  describe('when the owner rewrote events and left the stored tree and checkpoints alone', () => {
    it('reports FORKED for an edit inside the trusted prefix, though the served proof verifies', async () => {
      const { report, note } = await witness(
        serve({ events: rewritten(log, 3), tree: treeOf(log), checkpoint: checkpointOf(log) }),
        trustedAt4,
      );
      expect([report.ok, report.status, note]).toEqual([false, 'FORKED', null]);
      expect(report.failures).toContainEqual(expect.objectContaining({ seq: 4, code: 'ROOT_MISMATCH' }));
    });

    it('reports FORKED for a deleted event (renumbered) and for two swapped events', async () => {
      const values = numbers(8);
      const deleted = chain([...values.filter((v) => v !== 2), 9]);
      const swapped = chain([1, 3, 2, 4, 5, 6, 7, 8]);
      for (const events of [deleted, swapped]) {
        const { report } = await witness(
          serve({ events, tree: treeOf(log), checkpoint: checkpointOf(log) }),
          trustedAt4,
        );
        expect(report.status).toBe('FORKED');
      }
    });

    it('reports BROKEN with ROOT_MISMATCH for an edit after the trusted prefix', async () => {
      const { report } = await witness(
        serve({ events: rewritten(log, 6), tree: treeOf(log), checkpoint: checkpointOf(log) }),
        trustedAt4,
      );
      expect(report.status).toBe('BROKEN');
      expect(report.failures).toEqual([expect.objectContaining({ seq: 0, code: 'ROOT_MISMATCH' })]);
    });

    it('reports BROKEN with the seq of an event edited without recomputing its hash', async () => {
      const edited = log.map((e) => (e.seq === 6 ? { ...e, payload: canonicalJson({ value: 66 }) } : e));
      const { report } = await witness(serve({ events: edited }), trustedAt4);
      expect(report.status).toBe('BROKEN');
      expect(report.failures).toContainEqual(
        expect.objectContaining({ seq: 6, code: 'PAYLOAD_HASH_MISMATCH' }),
      );
    });

    it('reports BROKEN for a served line that is not an event', async () => {
      const lines = log.map((e) => JSON.stringify(e));
      lines[5] = '{"not":"an event"}';
      const { report } = await witness(serve({ events: log, lines }), trustedAt4);
      expect(report.status).toBe('BROKEN');
      expect(report.failures).toContainEqual(
        expect.objectContaining({
          seq: 6,
          code: 'BUNDLE_MALFORMED',
          line: 6,
          message: expect.stringMatching(/^line 6:/),
        }),
      );
    });

    it('reports PROOF_INVALID when the events verify but the stored tree was altered', async () => {
      const { report } = await witness(serve({ events: log, tree: treeOf(rewritten(log, 2)) }), trustedAt4);
      expect(report.status).toBe('PROOF_INVALID');
    });
  });

  describe('when the server serves fewer events than it must', () => {
    it('reports TRUNCATED for a checkpoint behind the trusted one', async () => {
      const { report } = await witness(serve({ events: log.slice(0, 3) }), trustedAt4);
      expect([report.status, report.checked]).toEqual(['TRUNCATED', 0]);
    });

    it('reports TRUNCATED for events short of its own checkpoint, without a "header" complaint', async () => {
      const { report } = await witness(
        serve({ events: log.slice(0, 6), checkpoint: checkpointOf(log) }),
        trustedAt4,
      );
      expect(report.status).toBe('TRUNCATED');
      expect(report.failures.map((f) => f.code)).toEqual(['TRUNCATED']);
    });

    it('reports TRUNCATED for events short of the trusted size', async () => {
      const { report } = await witness(
        serve({ events: log.slice(0, 2), checkpoint: checkpointOf(log) }),
        trustedAt4,
      );
      expect(report.status).toBe('TRUNCATED');
      expect(report.message).toContain('fewer than the 4 you trusted');
    });

    it.each(['checkpoint', 'export', 'consistency'] as const)(
      'reports WITHHELD when %s answers 404',
      async (route) => {
        const { report, note } = await witness(serve({ events: log, status: { [route]: 404 } }), trustedAt4);
        expect([report.ok, report.status, note]).toEqual([false, 'WITHHELD', null]);
        expect(report.message).toContain('NOT_FOUND');
      },
    );

    it.each([410, 451])('reports WITHHELD when the checkpoint or the export answers %s', async (status) => {
      // Gone, or unavailable for legal reasons: the server says it will not serve what it signed.
      for (const route of ['checkpoint', 'export'] as const) {
        const { report } = await witness(serve({ events: log, status: { [route]: status } }), trustedAt4);
        expect([report.ok, report.status]).toEqual([false, 'WITHHELD']);
      }
    });
  });

  describe('when the newer checkpoint is not acceptable', () => {
    it('reports FORKED for another root at the trusted size', async () => {
      const other = checkpointOf(chain([1, 2, 3, 99]));
      const { report } = await witness(serve({ events: log, checkpoint: other }), trustedAt4);
      expect(report.status).toBe('FORKED');
    });

    it('reports NO_TRUSTED_SIGNATURE for a checkpoint signed by another key', async () => {
      const forger = parseSignerKey(generateNoteKeys('audit.example/v').signerKey);
      const forged = signCheckpoint({ origin: ORIGIN, treeSize: 8, rootHash: treeOf(log).root() }, [forger]);
      const { report } = await witness(serve({ events: log, checkpoint: forged }), trustedAt4);
      expect(report.status).toBe('NO_TRUSTED_SIGNATURE');
    });

    it('reports ORIGIN_MISMATCH for a checkpoint of another log', async () => {
      const other = checkpointOf(log, 8, 'audit.example/v/other');
      expect((await witness(serve({ events: log, checkpoint: other }), trustedAt4)).report.status).toBe(
        'ORIGIN_MISMATCH',
      );
      expect((await witness(serve({ events: log, checkpoint: other }), null)).report.status).toBe(
        'ORIGIN_MISMATCH',
      );
    });
  });

  describe('when the server is briefly unavailable', () => {
    it('asks again and concludes once it answers', async () => {
      const served = serve({ events: log });
      let calls = 0;
      const flaky: WitnessFetch = (url, init) =>
        ++calls <= 2 ? Promise.resolve(new Response('busy', { status: 503 })) : served.fetch(url, init);
      const { report } = await witness({ ...served, fetch: flaky }, trustedAt4, {
        retry: { minDelayMs: 1, maxDelayMs: 5 },
      });
      expect(report.status).toBe('CONSISTENT');
      expect(calls).toBeGreaterThan(2);
    });
  });

  describe('when nothing can be concluded', () => {
    it.each([
      [500, 'SERVER_UNREACHABLE'],
      [503, 'SERVER_UNREACHABLE'],
      [401, 'SERVER_REFUSED'],
      [403, 'SERVER_REFUSED'],
    ])('throws for HTTP %i: %s', async (status, code) => {
      expect(await rejection(witness(serve({ events: log, status: { export: status } }), trustedAt4))).toBe(
        code,
      );
    });

    it('throws SERVER_UNREACHABLE when the connection fails or the body breaks off', async () => {
      const refused: WitnessFetch = () => Promise.reject(new TypeError('fetch failed'));
      expect(await rejection(witness({ ...serve({ events: log }), fetch: refused }, trustedAt4))).toBe(
        'SERVER_UNREACHABLE',
      );
      expect(await rejection(witness(serve({ events: log, breakAfterChunks: 5 }), trustedAt4))).toBe(
        'SERVER_UNREACHABLE',
      );
    });

    it('throws SERVER_UNREACHABLE when the events stop coming for timeoutMs, and does not hang', async () => {
      const outcome = witness(serve({ events: log, stallAfterChunks: 3 }), trustedAt4, { timeoutMs: 200 });
      expect(await rejection(outcome)).toBe('SERVER_UNREACHABLE');
    });

    it('throws SERVER_UNREACHABLE when the server does not answer within timeoutMs', async () => {
      const silent: WitnessFetch = (_url, init) =>
        new Promise((_, reject) => init.signal.addEventListener('abort', () => reject(init.signal.reason)));
      const started = Date.now();
      const outcome = witness({ ...serve({ events: log }), fetch: silent }, trustedAt4, {
        timeoutMs: 20,
        retry: { attempts: 2, minDelayMs: 1, maxDelayMs: 1 },
      });
      expect(await rejection(outcome)).toBe('SERVER_UNREACHABLE');
      expect(Date.now() - started).toBeLessThan(5_000);
    });

    it('throws TRUSTED_CHECKPOINT_INVALID for a trusted note no given key signed', async () => {
      const other = generateNoteKeys('audit.example/v').verifierKey;
      expect(await rejection(witness(serve({ events: log }), trustedAt4, { verifiers: [other] }))).toBe(
        'TRUSTED_CHECKPOINT_INVALID',
      );
    });
  });

  describe('at first use', () => {
    it('trusts the current checkpoint once the served events hash to its root', async () => {
      const { report, note } = await witness(serve({ events: log }), null);
      expect([report.status, report.trusted, report.checked, note]).toEqual([
        'CONSISTENT',
        null,
        8,
        checkpointOf(log),
      ]);
    });

    it('refuses a checkpoint the served events do not support', async () => {
      const { report, note } = await witness(
        serve({ events: rewritten(log, 3), checkpoint: checkpointOf(log) }),
        null,
      );
      expect([report.status, note]).toEqual(['BROKEN', null]);
    });
  });
});

describe('witnessBundle', () => {
  const log = chain(numbers(6));
  const bundle = (events: StoredEvent[]) =>
    encodeBundle({
      log: LOG,
      origin: ORIGIN,
      treeSize: events.length,
      checkpoint: checkpointOf(events),
      events,
    });

  it('reports CONSISTENT and the bundle checkpoint to keep when the bundle extends the trusted tree', async () => {
    const { report, note } = await witnessBundle(bundle(log), { verifiers, trusted: checkpointOf(log, 3) });
    expect([report.status, report.latest?.tree_size, note]).toEqual(['CONSISTENT', 6, checkpointOf(log)]);
  });

  it('keeps the checkpoint of a checkpoint line spelled with spaces, as the bundle parser reads it', async () => {
    const spaced: string[] = [];
    for await (const line of bundle(log)) spaced.push(line.replace(/^\{"checkpoint":/, '{ "checkpoint": '));
    expect(spaced.at(-1)).toMatch(/^\{ "checkpoint": /);
    const { report, note } = await witnessBundle(spaced, { verifiers, trusted: checkpointOf(log, 3) });
    expect([report.status, note]).toEqual(['CONSISTENT', checkpointOf(log)]);
  });

  it('reports FORKED for a re-signed rewrite, and TRUNCATED for a shorter bundle', async () => {
    const trusted = checkpointOf(log, 5);
    expect((await witnessBundle(bundle(rewritten(log, 2)), { verifiers, trusted })).report.status).toBe(
      'FORKED',
    );
    expect((await witnessBundle(bundle(log.slice(0, 4)), { verifiers, trusted })).report.status).toBe(
      'TRUNCATED',
    );
  });

  describe('with a newer checkpoint kept beside the trusted one (ahead)', () => {
    it('checks from the newer one: back at the trusted size is TRUNCATED', async () => {
      const trusted = checkpointOf(log, 4);
      const ahead = checkpointOf(log, 6);
      expect((await witnessBundle(bundle(log.slice(0, 4)), { verifiers, trusted })).report.status).toBe(
        'CONSISTENT',
      );
      const { report } = await witnessBundle(bundle(log.slice(0, 4)), { verifiers, trusted, ahead });
      expect([report.status, report.trusted?.tree_size]).toEqual(['TRUNCATED', 6]);
    });

    it('reports FORKED for one of the trusted size with another root: the log signed both', async () => {
      const trusted = checkpointOf(log, 5);
      const other = checkpointOf(rewritten(log, 2), 5);
      const { report, note } = await witnessBundle(bundle(log), { verifiers, trusted, ahead: other });
      expect([report.ok, report.status, note]).toEqual([false, 'FORKED', null]);
    });

    it('ignores one no larger than the trusted one, and refuses one that does not open', async () => {
      const trusted = checkpointOf(log, 5);
      const stale = await witnessBundle(bundle(log), { verifiers, trusted, ahead: checkpointOf(log, 3) });
      expect([stale.report.status, stale.report.trusted?.tree_size]).toEqual(['CONSISTENT', 5]);
      const forged = checkpointOf(log, 6).replace(/\n— .*\n$/, '\n— audit.example/v AAAA\n');
      await expect(witnessBundle(bundle(log), { verifiers, trusted, ahead: forged })).rejects.toMatchObject({
        code: 'TRUSTED_CHECKPOINT_INVALID',
      });
    });
  });
});

describe('nextTrustedNote', () => {
  const witnessKeys = generateNoteKeys('witness.example/w1');
  const log = chain(numbers(4));
  const text = (note: string) => note.slice(0, note.lastIndexOf('\n\n') + 1);
  /** `note` with a signature by `keyText`'s key added, as another witness would cosign it. */
  const cosigned = (note: string, keyText = witnessKeys.signerKey) => {
    const signed = signNote(text(note), [parseSignerKey(keyText)]);
    return note + signed.slice(signed.lastIndexOf('\n\n') + 2);
  };

  describe('when the server serves the same checkpoint without the cosignature', () => {
    it('keeps the cosigned note as it is', () => {
      const served = checkpointOf(log);
      expect(nextTrustedNote({ trusted: cosigned(served), served, verifiers })).toEqual({ note: null });
    });

    it('merges a new cosignature into the trusted one', () => {
      const served = checkpointOf(log);
      const other = generateNoteKeys('witness.example/w2').signerKey;
      const { note } = nextTrustedNote({
        trusted: cosigned(served),
        served: cosigned(served, other),
        verifiers,
      });
      expect(note).toBe(cosigned(cosigned(served), other));
    });
  });

  describe('when the log grew', () => {
    const grown = checkpointOf(chain(numbers(6)));

    it('keeps a cosigned trusted note and says why', () => {
      const next = nextTrustedNote({ trusted: cosigned(checkpointOf(log)), served: grown, verifiers });
      expect(next.note).toBeNull();
      expect(next.kept).toContain('witness.example/w1');
      // The newer note, for the witness to check from next time rather than stop advancing.
      expect(next.ahead).toBe(grown);
    });

    describe('with the witnesses the auditor trusts', () => {
      const w1 = generateCosignerKeys('witness.example/w1');
      const cosignedBy = (note: string, keys: { signerKey: string }) =>
        note + parseCosignerSignerKey(keys.signerKey).cosign(note, 1_764_547_200);

      it('keeps the trusted note for a valid cosignature of one of them', () => {
        const trusted = cosignedBy(checkpointOf(log), w1);
        const next = nextTrustedNote({ trusted, served: grown, verifiers, witnesses: [w1.verifierKey] });
        expect([next.note, next.ahead]).toEqual([null, grown]);
      });

      it('takes the newer note over one whose extra lines none of them made', () => {
        const stranger = generateCosignerKeys('evil.example/w');
        const trusted = cosigned(cosignedBy(checkpointOf(log), stranger));
        expect(nextTrustedNote({ trusted, served: grown, verifiers, witnesses: [w1.verifierKey] })).toEqual({
          note: grown,
        });
        // Without the list, any line might be a witness's: kept, and the newer one handed back.
        expect(nextTrustedNote({ trusted, served: grown, verifiers }).ahead).toBe(grown);
      });
    });

    it('takes the newer note when the trusted one carries only the log signature, even after a key rotation', () => {
      expect(nextTrustedNote({ trusted: checkpointOf(log), served: grown, verifiers })).toEqual({
        note: grown,
      });
      const rotated = generateNoteKeys('audit.example/v');
      const newer = signCheckpoint({ origin: ORIGIN, treeSize: 4, rootHash: treeOf(log).root() }, [
        parseSignerKey(rotated.signerKey),
      ]);
      expect(
        nextTrustedNote({
          trusted: grown,
          served: newer,
          verifiers: [keys.verifierKey, rotated.verifierKey],
        }),
      ).toEqual({ note: newer });
    });
  });
});
