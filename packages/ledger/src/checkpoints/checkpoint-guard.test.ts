import { generateNoteKeys, parseSignerKey, type StoredEvent } from '@vouch/audit';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Database } from '../database';
import { createIntegrityAlarm, type IntegrityAlarm } from '../integrity-alarm';
import { createLedger } from '../ledger';
import { editMerkleNode, rewriteEvent, testBackends } from '../testing';
import type { StoredCheckpoint } from './checkpoint-store';
import { createCheckpointer } from './checkpointer';
import { logOrigin, signLogCheckpoint } from './sign-log-checkpoint';

const PREFIX = 'vouch.test/guard';
const signers = [parseSignerKey(generateNoteKeys(PREFIX).signerKey)];
const origin = (log: string) => logOrigin(PREFIX, log);

describe.each(testBackends())('the checkpointer before it signs, on $name', ({ open }) => {
  let database: Database;
  let logNo = 0;

  beforeAll(async () => {
    database = await open();
  });
  afterAll(async () => {
    await database?.close();
  });

  /** A ledger and a checkpointer sharing one alarm, as the server wires them. */
  function wired(alarm: IntegrityAlarm = createIntegrityAlarm()) {
    const signed: StoredCheckpoint[] = [];
    const checkpointer = createCheckpointer({
      database,
      origin,
      signers,
      intervalMs: 3_600_000,
      integrityAlarm: alarm,
      onCheckpoint: (c) => signed.push(c),
    });
    const ledger = createLedger(database, { afterAppend: [checkpointer.afterAppend], integrityAlarm: alarm });
    const append = (log: string, i: number): Promise<StoredEvent> =>
      ledger.append({ log, kind: 'note', entity: `e${i}`, actor: 'user:alice', payload: { i } });
    return {
      alarm,
      ledger,
      checkpointer,
      signed,
      append,
      async close() {
        await ledger.close();
        await checkpointer.close();
      },
    };
  }

  const checkpointCount = async (log: string) =>
    (
      await database.rows<{ n: number }>(
        sql`select count(*)::int as n from checkpoints where log_id = ${log}`,
      )
    )[0]!.n;

  describe('when the log is sound', () => {
    it('signs round after round, and resumes from its own checkpoint after a restart', async () => {
      const log = `guard-${++logNo}`;
      const first = wired();
      for (let round = 0; round < 3; round++) {
        for (let i = 0; i < 3; i++) await first.append(log, round * 3 + i);
        await first.checkpointer.flush();
      }
      await first.close();
      // The first append may be signed at once (no interval has passed yet); flush signs the rest.
      expect(first.signed.map((c) => c.treeSize)).toEqual(expect.arrayContaining([3, 6, 9]));
      // A new process: nothing verified in memory, so it starts from the checkpoint at 9.
      const second = wired();
      await second.append(log, 10);
      await second.checkpointer.flush();
      await second.close();
      expect(second.signed.map((c) => c.treeSize)).toEqual([10]);
      expect(first.alarm.raised || second.alarm.raised).toBe(false);
    });
  });

  describe('when history was rewritten with every hash recomputed, leaving the tree', () => {
    it('signs nothing more and raises CHAIN_MISMATCH at the first new event', async () => {
      const log = `guard-${++logNo}`;
      const w = wired();
      for (let i = 1; i <= 4; i++) await w.append(log, i);
      await w.checkpointer.flush();
      const kept = await checkpointCount(log);
      await rewriteEvent(database, { log, seq: 2, payload: '{"rewritten":true}' });
      // Appends chain onto the rewritten head; the Merkle hook extends the old tree.
      for (let i = 5; i <= 6; i++) await w.append(log, i);
      await w.checkpointer.flush();
      await w.close();
      expect(w.signed.at(-1)?.treeSize).toBe(4);
      expect(await checkpointCount(log)).toBe(kept);
      expect(w.alarm.alarms()).toEqual([
        expect.objectContaining({ code: 'CHAIN_MISMATCH', log, seq: 5, table: 'audit_events' }),
      ]);
    });

    it('finds it after a restart too: the signed head is no longer in the signed tree', async () => {
      const log = `guard-${++logNo}`;
      const before = wired();
      for (let i = 1; i <= 4; i++) await before.append(log, i);
      await before.checkpointer.flush();
      await before.close();
      await rewriteEvent(database, { log, seq: 3, payload: '{"rewritten":true}' });
      const after = wired();
      await after.append(log, 5);
      await after.checkpointer.flush();
      await after.close();
      expect(after.signed).toEqual([]);
      expect(after.alarm.alarms()).toEqual([
        expect.objectContaining({ code: 'CHECKPOINT_MISMATCH', log, seq: 4, table: 'audit_events' }),
      ]);
    });
  });

  describe('when a stored Merkle node was rewritten', () => {
    it('raises TREE_MISMATCH: the stored root is not the root of the events', async () => {
      const log = `guard-${++logNo}`;
      const w = wired();
      for (let i = 1; i <= 2; i++) await w.append(log, i);
      await w.checkpointer.flush();
      for (let i = 3; i <= 5; i++) await w.append(log, i);
      // The subtree over leaves 0..3, part of the root at 5 and not of the checkpoint at 2.
      await editMerkleNode(database, { log, level: 2, idx: 0 });
      await w.checkpointer.flush();
      await w.close();
      expect(w.signed.at(-1)?.treeSize).toBe(2);
      expect(w.alarm.alarms()).toEqual([
        expect.objectContaining({ code: 'TREE_MISMATCH', log, seq: 5, table: 'merkle_nodes' }),
      ]);
    });
  });

  describe('when signLogCheckpoint is called on its own (as vouch export does)', () => {
    it('checks from its latest checkpoint too, and refuses with INTEGRITY_ALARM', async () => {
      const log = `guard-${++logNo}`;
      const ledger = createLedger(database);
      for (let i = 1; i <= 3; i++)
        await ledger.append({ log, kind: 'note', entity: `e${i}`, actor: 'a', payload: { i } });
      expect(await signLogCheckpoint(database, { log, origin, signers })).toMatchObject({ treeSize: 3 });
      await ledger.append({ log, kind: 'note', entity: 'e4', actor: 'a', payload: { i: 4 } });
      expect(await signLogCheckpoint(database, { log, origin, signers })).toMatchObject({ treeSize: 4 });
      await rewriteEvent(database, { log, seq: 2, payload: '{"rewritten":true}' });
      await ledger.close();
      await expect(signLogCheckpoint(database, { log, origin, signers })).rejects.toMatchObject({
        code: 'INTEGRITY_ALARM',
        details: { code: 'CHECKPOINT_MISMATCH', log, seq: 4 },
      });
    });
  });

  describe('when the alarm was raised elsewhere', () => {
    it('signs no log at all', async () => {
      const log = `guard-${++logNo}`;
      const w = wired();
      // Appended by a ledger without the hook: the first append of a log is signed at once,
      // and that signing could otherwise finish before the alarm below is raised.
      const plain = createLedger(database);
      await plain.append({ log, kind: 'note', entity: 'e1', actor: 'user:alice', payload: { i: 1 } });
      await plain.close();
      w.alarm.raise({
        code: 'RECORD_MISMATCH',
        log: 'other',
        message: 'a record row differs from its event',
      });
      w.checkpointer.notify(log);
      await w.checkpointer.flush();
      await w.close();
      expect(w.signed).toEqual([]);
      expect(await checkpointCount(log)).toBe(0);
    });
  });

  describe('when a row the server did not sign already holds the next tree size', () => {
    it('keeps nothing of it, raises CHECKPOINT_MISMATCH and signs no more', async () => {
      const log = `guard-${++logNo}`;
      const w = wired();
      try {
        await w.append(log, 1);
        await w.checkpointer.flush();
        const [first] = w.signed;
        expect(first?.treeSize).toBe(1);
        // The runtime role may INSERT: the next size, filled with the old signed note.
        await database.rows(
          sql`insert into checkpoints (log_id, tree_size, root_hash, note, created_at)
              values (${log}, 2, ${first!.rootHash}, ${first!.note}, ${first!.createdAt})`,
        );
        await w.append(log, 2);
        await w.checkpointer.flush();
        expect(w.signed).toHaveLength(1);
        expect(w.alarm.alarms()).toMatchObject([
          { code: 'CHECKPOINT_MISMATCH', log, seq: 2, table: 'checkpoints' },
        ]);
        await w.append(log, 3);
        await w.checkpointer.flush();
        expect(w.signed).toHaveLength(1);
      } finally {
        await w.close();
      }
    });
  });
});
