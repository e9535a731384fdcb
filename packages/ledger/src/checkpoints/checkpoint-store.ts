import { and, desc, eq, lte, sql } from 'drizzle-orm';
import type { Database, Db } from '../database';
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
 * is already there wins (checkpoints are append-only) and is returned instead.
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
  return inserted[0] ?? (await checkpointAt(database, checkpoint.log, checkpoint.treeSize, executor))!;
}
