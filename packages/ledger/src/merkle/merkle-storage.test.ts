import {
  bytesEqual,
  eventLeafHash,
  type StoredEvent,
  verifyConsistency,
  verifyInclusion,
} from '@vouch/audit';
import { MemoryMerkleTree } from '@vouch/audit/merkle';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { Database } from '../database';
import { createLedger, type Ledger } from '../ledger';
import { tamper, testBackends } from '../testing';
import { merkleAppendHook } from './merkle-append-hook';
import { merkleConsistencyProof, merkleInclusionProof, merkleRoot, merkleTreeSize } from './merkle-proofs';

function errorCode(promise: Promise<unknown>): Promise<string | undefined> {
  return promise.then(
    () => undefined,
    (error: { code?: string }) => error.code,
  );
}

describe.each(testBackends())('Merkle storage on $name', ({ open }) => {
  let database: Database;
  let ledger: Ledger;
  let plain: Ledger;
  let logNo = 0;

  beforeAll(async () => {
    database = await open();
    ledger = createLedger(database, { afterAppend: [merkleAppendHook], maxBatch: 7 });
    plain = createLedger(database, { merkle: false });
  });
  afterAll(async () => {
    await ledger?.close();
    await plain?.close();
    await database?.close();
  });

  const note = (log: string, i: number) => ({
    log,
    kind: 'note',
    entity: `e${i}`,
    actor: 'user:alice',
    payload: { i },
  });

  /** `n` events on a fresh log through `through`, some one by one and some in concurrent batches. */
  async function freshLog(
    n: number,
    through: Ledger = ledger,
  ): Promise<{ log: string; events: StoredEvent[] }> {
    const log = `merkle-${++logNo}`;
    const events: StoredEvent[] = [];
    let i = 0;
    while (i < n) {
      const burst = Math.min(n - i, (i % 5) + 1);
      const batch = Array.from({ length: burst }, (_, k) => through.append(note(log, i + k + 1)));
      events.push(...(await Promise.all(batch)));
      i += burst;
    }
    return { log, events };
  }

  const nodeCount = async (log: string) =>
    (
      await database.rows<{ n: number }>(
        sql`select count(*)::int as n from merkle_nodes where log_id = ${log}`,
      )
    )[0]!.n;

  describe('when events are appended with the hook', () => {
    it('stores every complete subtree, and roots at every size equal the reference tree', async () => {
      const { log, events } = await freshLog(37);
      const reference = MemoryMerkleTree.fromLeafHashes(events.map((e) => eventLeafHash(e.hash)));
      expect(await merkleTreeSize(database, log)).toBe(37);
      // n leaves have n - popcount(n) complete subtrees above the leaves: 37 = 0b100101 → 34.
      // Leaves are not stored: a leaf is its event's hash.
      expect(await nodeCount(log)).toBe(37 - 3);
      for (let size = 0; size <= 37; size++) {
        expect(bytesEqual(await merkleRoot(database, { log, treeSize: size }), reference.root(size))).toBe(
          true,
        );
      }
    });

    it('answers inclusion proofs that verify for every event at every tree size', async () => {
      const { log, events } = await freshLog(13);
      const reference = MemoryMerkleTree.fromLeafHashes(events.map((e) => eventLeafHash(e.hash)));
      for (let treeSize = 1; treeSize <= 13; treeSize++) {
        for (const event of events.slice(0, treeSize)) {
          const proof = await merkleInclusionProof(database, { log, seq: event.seq, treeSize });
          expect(
            verifyInclusion(
              eventLeafHash(event.hash),
              event.seq - 1,
              treeSize,
              proof,
              reference.root(treeSize),
            ),
          ).toBe(true);
        }
      }
    });

    it('answers consistency proofs that verify between every pair of sizes', async () => {
      const { log, events } = await freshLog(11);
      const reference = MemoryMerkleTree.fromLeafHashes(events.map((e) => eventLeafHash(e.hash)));
      for (let size2 = 1; size2 <= 11; size2++) {
        for (let size1 = 1; size1 <= size2; size1++) {
          const proof = await merkleConsistencyProof(database, { log, size1, size2 });
          expect(verifyConsistency(size1, size2, proof, reference.root(size1), reference.root(size2))).toBe(
            true,
          );
        }
      }
    });

    it('reads each proof and root with a single query', async () => {
      const { log } = await freshLog(100);
      const spy = vi.spyOn(database, 'rows');
      await merkleInclusionProof(database, { log, seq: 37, treeSize: 100 });
      await merkleConsistencyProof(database, { log, size1: 37, size2: 100 });
      await merkleRoot(database, { log, treeSize: 99 });
      expect(spy).toHaveBeenCalledTimes(3);
    });
  });

  describe('when a proof asks for more than the log holds', () => {
    it('refuses a tree size past the head with NOT_FOUND', async () => {
      const { log } = await freshLog(5);
      expect(await errorCode(merkleInclusionProof(database, { log, seq: 2, treeSize: 6 }))).toBe('NOT_FOUND');
      expect(await errorCode(merkleConsistencyProof(database, { log, size1: 3, size2: 8 }))).toBe(
        'NOT_FOUND',
      );
      expect(await errorCode(merkleRoot(database, { log, treeSize: 6 }))).toBe('NOT_FOUND');
    });

    it('refuses a seq outside the tree with MALFORMED_PROOF', async () => {
      const { log } = await freshLog(3);
      expect(await errorCode(merkleInclusionProof(database, { log, seq: 0, treeSize: 3 }))).toBe(
        'MALFORMED_PROOF',
      );
      expect(await errorCode(merkleInclusionProof(database, { log, seq: 4, treeSize: 3 }))).toBe(
        'MALFORMED_PROOF',
      );
      expect(await errorCode(merkleConsistencyProof(database, { log, size1: 0, size2: 3 }))).toBe(
        'MALFORMED_PROOF',
      );
    });
  });

  describe('when a log was appended to before the hook ran', () => {
    it('builds the missing nodes from the events in the next batch', async () => {
      const { log, events } = await freshLog(9, plain);
      expect(await nodeCount(log)).toBe(0);
      events.push(await ledger.append(note(log, 10)));
      // Half with, half without the hook again: the gap in the middle is caught up too.
      events.push(await plain.append(note(log, 11)), await plain.append(note(log, 12)));
      events.push(await ledger.append(note(log, 13)));
      const reference = MemoryMerkleTree.fromLeafHashes(events.map((e) => eventLeafHash(e.hash)));
      expect(await merkleTreeSize(database, log)).toBe(13);
      expect(bytesEqual(await merkleRoot(database, { log, treeSize: 13 }), reference.root())).toBe(true);
      expect(bytesEqual(await merkleRoot(database, { log, treeSize: 9 }), reference.root(9))).toBe(true);
    });
  });

  describe('when the stored tree is longer than the chain', () => {
    it('refuses the append with CHAIN_CONFLICT and writes nothing', async () => {
      const { log } = await freshLog(6);
      // Seq 4 completes (1, 1) and (2, 0), which are still stored.
      await tamper(database, sql`delete from audit_events where log_id = ${log} and seq > 3`);
      expect(await errorCode(ledger.append(note(log, 4)))).toBe('CHAIN_CONFLICT');
      expect((await ledger.head(log))?.seq).toBe(3);
    });
  });

  describe('when the hook is listed twice', () => {
    it('stores each batch once', async () => {
      const twice = createLedger(database, { afterAppend: [merkleAppendHook, merkleAppendHook] });
      const log = `merkle-${++logNo}`;
      await Promise.all([1, 2, 3].map((i) => twice.append(note(log, i))));
      await twice.close();
      expect(await merkleTreeSize(database, log)).toBe(3);
      expect(await nodeCount(log)).toBe(1);
    });
  });

  describe('when Merkle rows are changed', () => {
    it('is refused by the database', async () => {
      const { log } = await freshLog(2);
      const failed = await database
        .rows(sql`update merkle_nodes set hash = ${'0'.repeat(64)} where log_id = ${log}`)
        .then(
          () => false,
          () => true,
        );
      expect(failed).toBe(true);
    });
  });
});
