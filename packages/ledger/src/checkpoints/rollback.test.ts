import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { generateNoteKeys, parseSignerKey, readCheckpointUnverified } from '@vouch/audit';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Database } from '../database';
import { createIntegrityAlarm } from '../integrity-alarm';
import { createLedger } from '../ledger';
import { tamper, testBackends } from '../testing';
import { type CheckpointState, checkpointStateDir, keptCheckpointOf } from './checkpoint-state';
import type { StoredCheckpoint } from './checkpoint-store';
import { createCheckpointer } from './checkpointer';
import { logOrigin } from './sign-log-checkpoint';

const PREFIX = 'vouch.test/rollback';
const signers = [parseSignerKey(generateNoteKeys(PREFIX).signerKey)];
const origin = (log: string) => logOrigin(PREFIX, log);

/**
 * What restoring an older backup does to one log, done as the table owner: every event past
 * `size`, the Merkle nodes over them, and the checkpoints (and cosignatures) past it are gone,
 * and what is left agrees with itself. `keepCheckpoints` keeps the checkpoint rows: a log cut
 * back behind the ledger's back rather than restored.
 */
async function cutBack(database: Database, log: string, size: number, keepCheckpoints = false) {
  await tamper(
    database,
    sql`delete from audit_events where log_id = ${log} and seq > ${size}`,
    sql`delete from merkle_nodes where log_id = ${log} and (idx + 1) * (1::bigint << level) > ${size}`,
    ...(keepCheckpoints
      ? []
      : [
          sql`delete from checkpoint_cosignatures where log_id = ${log} and tree_size > ${size}`,
          sql`delete from checkpoints where log_id = ${log} and tree_size > ${size}`,
        ]),
  );
}

describe.each(testBackends())('a restored or cut-back database, on $name', ({ open }) => {
  let database: Database;
  let stateDir: string;
  let logNo = 0;

  beforeAll(async () => {
    database = await open();
    stateDir = mkdtempSync(join(tmpdir(), 'vouch-rollback-'));
  });
  afterAll(async () => {
    await database?.close();
    rmSync(stateDir, { recursive: true, force: true });
  });

  /** A server's ledger and checkpointer, started afresh (nothing verified in memory). */
  function start(state: CheckpointState | undefined) {
    const alarm = createIntegrityAlarm();
    const signed: StoredCheckpoint[] = [];
    const errors: unknown[] = [];
    const checkpointer = createCheckpointer({
      database,
      origin,
      signers,
      intervalMs: 3_600_000,
      integrityAlarm: alarm,
      ...(state ? { state } : {}),
      onCheckpoint: (c) => signed.push(c),
      onError: (e) => errors.push(e),
    });
    // Appends are signed only when flushed: a signature between two appends would make the
    // size each test signs at depend on timing.
    const ledger = createLedger(database, { integrityAlarm: alarm });
    return {
      alarm,
      signed,
      checkpointer,
      async append(log: string, from: number, to: number, tag = 'a') {
        for (let i = from; i <= to; i++) {
          await ledger.append({
            log,
            kind: 'note',
            entity: `e${i}`,
            actor: 'user:alice',
            payload: { i, tag },
          });
        }
        checkpointer.notify(log);
        await checkpointer.flush();
      },
      async close() {
        await ledger.close();
        await checkpointer.close();
      },
    };
  }

  const signedSizes = async (log: string) =>
    (
      await database.rows<{ n: number }>(
        sql`select tree_size::int as n from checkpoints where log_id = ${log} order by tree_size`,
      )
    ).map((r) => r.n);

  describe('with the last signed checkpoint kept outside the database', () => {
    it('keeps it atomically after each signature, as the signed note, and starts cleanly on the same database', async () => {
      const log = `rb-${++logNo}`;
      const state = checkpointStateDir(join(stateDir, log));
      const first = start(state);
      await first.append(log, 1, 3);
      await first.append(log, 4, 6);
      await first.close();
      const saved = await state.read(log);
      expect(saved).toMatchObject({ log, treeSize: 6 });
      expect(readCheckpointUnverified(saved!.note)?.treeSize).toBe(6);
      expect(saved!.note).toBe(first.signed.at(-1)!.note);
      const second = start(state);
      expect(await second.checkpointer.checkSavedState()).toEqual([]);
      await second.append(log, 7, 7);
      await second.close();
      expect(second.alarm.raised).toBe(false);
      expect(second.signed.map((c) => c.treeSize)).toEqual([7]);
      expect((await state.read(log))?.treeSize).toBe(7);
    });

    it('raises ROLLBACK_DETECTED at start when an older backup is restored, and signs nothing after', async () => {
      const log = `rb-${++logNo}`;
      const state = checkpointStateDir(join(stateDir, log));
      const before = start(state);
      await before.append(log, 1, 3);
      await before.append(log, 4, 6);
      await before.close();
      await cutBack(database, log, 3);
      const after = start(state);
      const findings = await after.checkpointer.checkSavedState();
      expect(findings).toEqual([
        expect.objectContaining({ code: 'ROLLBACK_DETECTED', log, seq: 4, table: 'audit_events' }),
      ]);
      expect(findings[0]!.message).toMatch(/restored from an older backup.*vouch restore accept/);
      // It grows past what was signed: still nothing is signed (the tree at 6 is another).
      await after.append(log, 4, 8, 'restored');
      await after.close();
      expect(after.alarm.alarms().map((a) => a.code)).toEqual(['ROLLBACK_DETECTED']);
      expect(after.signed).toEqual([]);
      expect(await signedSizes(log)).toEqual([3]);
    });

    it('raises ROLLBACK_DETECTED before signing a log rewritten back to the signed size', async () => {
      const log = `rb-${++logNo}`;
      const state = checkpointStateDir(join(stateDir, log));
      const before = start(state);
      await before.append(log, 1, 2);
      await before.append(log, 3, 4);
      await before.close();
      await cutBack(database, log, 2);
      // Without the start-up check: the first signature is refused all the same.
      const after = start(state);
      await after.append(log, 3, 4, 'forked');
      await after.close();
      expect(after.signed).toEqual([]);
      expect(after.alarm.alarms()).toEqual([
        expect.objectContaining({ code: 'ROLLBACK_DETECTED', log, seq: 4, table: 'merkle_nodes' }),
      ]);
      expect(await signedSizes(log)).toEqual([2]);
    });

    it('signs again once the saved state is superseded (an operator accepted the restore)', async () => {
      const log = `rb-${++logNo}`;
      const state = checkpointStateDir(join(stateDir, log));
      const before = start(state);
      await before.append(log, 1, 2);
      await before.append(log, 3, 4);
      await before.close();
      await cutBack(database, log, 2);
      const moved = await state.supersede(log, { reason: 'restored the backup of Monday' });
      expect(moved).toMatch(/superseded/);
      expect(JSON.parse(readFileSync(`${moved}.accepted`, 'utf8'))).toMatchObject({
        reason: 'restored the backup of Monday',
      });
      const after = start(state);
      expect(await after.checkpointer.checkSavedState()).toEqual([]);
      await after.append(log, 3, 3, 'restored');
      await after.close();
      expect(after.alarm.raised).toBe(false);
      expect(after.signed.map((c) => c.treeSize)).toEqual([3]);
    });

    it('reads a kept checkpoint as a witness keeps it (a signed note) or as a state file, of its own log only', async () => {
      const log = `rb-${++logNo}`;
      const state = checkpointStateDir(join(stateDir, log));
      const w = start(state);
      await w.append(log, 1, 2);
      await w.close();
      const { note } = w.signed.at(-1)!;
      expect(keptCheckpointOf(note, log, 'trusted.note')).toMatchObject({ log, treeSize: 2 });
      expect(keptCheckpointOf(note, `${log}-other`, 'trusted.note')).toBeNull();
      const file = (await state.read(log))!.path;
      expect(keptCheckpointOf(readFileSync(file, 'utf8'), log, file)).toMatchObject({ treeSize: 2, note });
      expect(keptCheckpointOf('not a note', log, 'x')).toBeNull();
    });

    it('refuses to sign on a state file it cannot read', async () => {
      const log = `rb-${++logNo}`;
      const dir = mkdtempSync(join(tmpdir(), 'vouch-rollback-bad-'));
      try {
        const state = checkpointStateDir(dir);
        writeFileSync(join(dir, `${log}.json`), '{"format":"something else"}');
        const w = start(state);
        await w.append(log, 1, 2);
        await w.close();
        expect(w.signed).toEqual([]);
        expect(w.alarm.alarms()).toEqual([expect.objectContaining({ code: 'ROLLBACK_DETECTED', log })]);
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    });
  });

  describe('a checkpointer that has not signed since it started', () => {
    it('catches a truncate-and-fork made while it was down, from its checkpoint rows past the head', async () => {
      const log = `rb-${++logNo}`;
      const before = start(undefined);
      await before.append(log, 1, 3);
      await before.append(log, 4, 6);
      await before.close();
      // Cut back to 4, checkpoints left, and written on to 5: behind the signed 6, and another 5.
      await cutBack(database, log, 4, true);
      const after = start(undefined);
      await after.append(log, 5, 5, 'forked');
      await after.close();
      expect(after.signed).toEqual([]);
      expect(after.alarm.alarms()).toEqual([
        expect.objectContaining({ code: 'CHECKPOINT_MISMATCH', log, seq: 6, table: 'audit_events' }),
      ]);
      expect(await signedSizes(log)).toEqual([3, 6]);
    });

    it('catches it from the saved state when the checkpoint rows were deleted too', async () => {
      const log = `rb-${++logNo}`;
      const state = checkpointStateDir(join(stateDir, log));
      const before = start(state);
      await before.append(log, 1, 3);
      await before.append(log, 4, 6);
      await before.close();
      await cutBack(database, log, 4);
      const after = start(state);
      await after.append(log, 5, 9, 'forked');
      await after.close();
      expect(after.signed).toEqual([]);
      expect(after.alarm.alarms()).toEqual([
        expect.objectContaining({ code: 'ROLLBACK_DETECTED', log, seq: 6, table: 'merkle_nodes' }),
      ]);
    });
  });
});
