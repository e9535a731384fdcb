import { bytesEqual, eventLeafHash } from '@vouch/audit';
import { MemoryMerkleTree } from '@vouch/audit/merkle';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Database } from '../database';
import { createLedger, type Ledger } from '../ledger';
import { editMerkleNode, tamper, testBackends } from '../testing';
import { merkleRoot } from './merkle-proofs';
import { merkleRootFromEvents } from './recompute-root';

const errorCode = (promise: Promise<unknown>) =>
  promise.then(
    () => undefined,
    (error: { code?: string }) => error.code,
  );

describe.each(testBackends())('merkleRootFromEvents on $name', ({ open }) => {
  let database: Database;
  let ledger: Ledger;
  let reference: MemoryMerkleTree;
  const log = 'roots';

  beforeAll(async () => {
    database = await open();
    ledger = createLedger(database);
    const hashes: Uint8Array[] = [];
    for (let i = 1; i <= 21; i++) {
      const event = await ledger.append({
        log,
        kind: 'note',
        entity: `e${i}`,
        actor: 'user:a',
        payload: { i },
      });
      hashes.push(eventLeafHash(event.hash));
    }
    reference = MemoryMerkleTree.fromLeafHashes(hashes);
  });
  afterAll(async () => {
    await ledger?.close();
    await database?.close();
  });

  describe('when the stored tree is intact', () => {
    it('equals the root from the stored nodes and the reference tree at every size', async () => {
      for (let size = 0; size <= 21; size++) {
        const { root } = await merkleRootFromEvents(database, { log, treeSize: size });
        expect(bytesEqual(root, reference.root(size))).toBe(true);
        expect(bytesEqual(root, await merkleRoot(database, { log, treeSize: size }))).toBe(true);
      }
    });

    it('resumes from the compact range it returned', async () => {
      const { range } = await merkleRootFromEvents(database, { log, treeSize: 7 });
      const { root } = await merkleRootFromEvents(database, { log, treeSize: 21, from: range });
      expect(bytesEqual(root, reference.root(21))).toBe(true);
    });
  });

  describe('when a stored node was edited', () => {
    it('still gives the root of the events, where the stored nodes no longer do', async () => {
      // The root at 21 folds the stored nodes (4, 0), (2, 4) and (0, 20).
      await editMerkleNode(database, { log, level: 4, idx: 0 });
      const stored = await merkleRoot(database, { log, treeSize: 21 });
      const { root } = await merkleRootFromEvents(database, { log, treeSize: 21 });
      expect(bytesEqual(stored, reference.root(21))).toBe(false);
      expect(bytesEqual(root, reference.root(21))).toBe(true);
    });
  });

  describe('when the log is shorter or has a hole', () => {
    it('refuses a size past the head with NOT_FOUND', async () => {
      expect(await errorCode(merkleRootFromEvents(database, { log, treeSize: 22 }))).toBe('NOT_FOUND');
    });

    it('refuses a missing seq with CHAIN_CONFLICT', async () => {
      await tamper(database, sql`delete from audit_events where log_id = ${log} and seq = 5`);
      expect(await errorCode(merkleRootFromEvents(database, { log, treeSize: 21 }))).toBe('CHAIN_CONFLICT');
    });
  });
});
