import { readCheckpointUnverified } from '@vouch/audit';
import { and, desc, eq, lte, sql } from 'drizzle-orm';
import type { Database, Db } from '../database';
import { LedgerError } from '../errors';
import { auditEvents, checkpoints } from '../schema/core';

/** A signed checkpoint as the ledger keeps it. */
export interface StoredCheckpoint {
  log: string;
  treeSize: number;
  /** Lowercase hex of the RFC 9162 root over the first `treeSize` events. */
  rootHash: string;
  /** The c2sp.org/tlog-checkpoint signed note, exactly as signed: what an auditor keeps. */
  note: string;
  /** ISO 8601 time the checkpoint was stored (not signed: nothing vouches for it). */
  createdAt: string;
}

const columns = {
  log: checkpoints.logId,
  treeSize: checkpoints.treeSize,
  rootHash: checkpoints.rootHash,
  note: checkpoints.note,
  createdAt: checkpoints.createdAt,
};

/**
 * The checkpoint of `log` with the largest tree size no larger than the log, or null when
 * none was signed yet. A row past the last event cannot be a checkpoint of this log (only
 * an INSERT behind the ledger's back makes one; `verifyChain` reports it as
 * `CHECKPOINT_MISMATCH`): served as the latest, a copy of an old signed note with a huge
 * `tree_size` would freeze every witness at that note while the server went on signing.
 */
export async function latestCheckpoint(
  database: Database,
  log: string,
  executor: Db = database.db,
): Promise<StoredCheckpoint | null> {
  const head = sql`(select coalesce(max(${auditEvents.seq}), 0) from ${auditEvents} where ${auditEvents.logId} = ${log})`;
  const [row] = await executor
    .select(columns)
    .from(checkpoints)
    .where(and(eq(checkpoints.logId, log), lte(checkpoints.treeSize, head)))
    .orderBy(desc(checkpoints.treeSize))
    .limit(1);
  return row ?? null;
}

/** The checkpoint of `log` at exactly `treeSize`, or null. */
export async function checkpointAt(
  database: Database,
  log: string,
  treeSize: number,
  executor: Db = database.db,
): Promise<StoredCheckpoint | null> {
  const [row] = await executor
    .select(columns)
    .from(checkpoints)
    .where(and(eq(checkpoints.logId, log), eq(checkpoints.treeSize, treeSize)))
    .limit(1);
  return row ?? null;
}

/**
 * Keep a checkpoint. Another instance may have signed the same size first: the row that
 * is already there wins (checkpoints are append-only) and is returned instead, once it is
 * shown to state the same size and root (honest signers of one size always agree on both).
 *
 * @throws LedgerError `INTEGRITY_ALARM` when the row already there is not a checkpoint of
 * that tree: it was inserted behind the ledger's back, and taking it would drop this
 * signature and serve the forged note in its place.
 */
export async function storeCheckpoint(
  database: Database,
  checkpoint: StoredCheckpoint,
  executor: Db = database.db,
): Promise<StoredCheckpoint> {
  const inserted = await executor
    .insert(checkpoints)
    .values({
      logId: checkpoint.log,
      treeSize: checkpoint.treeSize,
      rootHash: checkpoint.rootHash,
      note: checkpoint.note,
      createdAt: checkpoint.createdAt,
    })
    .onConflictDoNothing()
    .returning(columns);
  if (inserted[0]) return inserted[0];
  const existing = (await checkpointAt(database, checkpoint.log, checkpoint.treeSize, executor))!;
  const stated = readCheckpointUnverified(existing.note);
  const same =
    existing.rootHash === checkpoint.rootHash &&
    stated?.treeSize === checkpoint.treeSize &&
    Buffer.from(stated.rootHash).toString('hex') === checkpoint.rootHash;
  if (!same) {
    throw new LedgerError(
      'INTEGRITY_ALARM',
      `not keeping the checkpoint of log ${checkpoint.log} at ${checkpoint.treeSize}: a stored row at that size is not a checkpoint of this tree`,
      {
        details: {
          code: 'CHECKPOINT_MISMATCH',
          log: checkpoint.log,
          seq: checkpoint.treeSize,
          table: 'checkpoints',
        },
      },
    );
  }
  return existing;
}

/**
 * Every log whose head is past its latest stored checkpoint (or that has none): the logs a
 * signer that was off (no key, another process, a crash before its timer fired) left
 * unsigned. One loose index scan over the log ids, then two primary-key probes per log,
 * so it costs O(logs), not O(events).
 */
export async function logsAheadOfCheckpoint(
  database: Database,
  executor: Db = database.db,
): Promise<Array<{ log: string; head: number; signed: number }>> {
  const rows = await database.rows<{ log: string; head: number | string; signed: number | string }>(
    sql`with recursive logs(log_id) as (
          (select log_id from audit_events order by log_id limit 1)
          union all
          select (select e.log_id from audit_events e where e.log_id > logs.log_id order by e.log_id limit 1)
          from logs where logs.log_id is not null
        )
        select log_id as log,
               (select e.seq from audit_events e where e.log_id = logs.log_id order by e.seq desc limit 1) as head,
               coalesce((select c.tree_size from checkpoints c where c.log_id = logs.log_id
                         order by c.tree_size desc limit 1), 0) as signed
        from logs where log_id is not null`,
    executor,
  );
  return rows
    .map((row) => ({ log: row.log, head: Number(row.head), signed: Number(row.signed) }))
    .filter((row) => row.head > row.signed);
}
