import { and, asc, eq } from 'drizzle-orm';
import type { Database, Db } from '../database';
import { checkpointCosignatures } from '../schema/core';

/** One witness cosignature line kept beside a checkpoint. */
export interface StoredCosignature {
  log: string;
  treeSize: number;
  /** The witness key name and key ID (8 lowercase hex digits). */
  witness: string;
  keyId: string;
  /** `— <name> <base64>` with its newline: append it to the checkpoint note. */
  line: string;
  createdAt: string;
}

/**
 * Keep cosignature lines of the checkpoint of `log` at `treeSize`. The caller verified each
 * (nothing here can: the witness keys are configuration); one line per witness key and
 * checkpoint, the first one kept wins. Returns how many were new.
 */
export async function storeCosignatures(
  database: Database,
  rows: readonly StoredCosignature[],
  executor: Db = database.db,
): Promise<number> {
  if (rows.length === 0) return 0;
  const inserted = await executor
    .insert(checkpointCosignatures)
    .values(
      rows.map((row) => ({
        logId: row.log,
        treeSize: row.treeSize,
        witness: row.witness,
        keyId: row.keyId,
        line: row.line,
        createdAt: row.createdAt,
      })),
    )
    .onConflictDoNothing()
    .returning({ line: checkpointCosignatures.line });
  return inserted.length;
}

/** The cosignature lines kept for the checkpoint of `log` at `treeSize`, oldest first. */
export async function cosignaturesAt(
  database: Database,
  log: string,
  treeSize: number,
  executor: Db = database.db,
): Promise<string[]> {
  const rows = await executor
    .select({ line: checkpointCosignatures.line })
    .from(checkpointCosignatures)
    .where(and(eq(checkpointCosignatures.logId, log), eq(checkpointCosignatures.treeSize, treeSize)))
    .orderBy(asc(checkpointCosignatures.createdAt), asc(checkpointCosignatures.witness));
  return rows.map((row) => row.line);
}
