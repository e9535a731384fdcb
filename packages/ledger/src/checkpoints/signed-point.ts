import {
  bytesEqual,
  eventHashOf,
  eventLeafHash,
  openCheckpoint,
  payloadHashOf,
  verifyInclusion,
} from '@vouch/audit';
import { CompactRange, rootSubtrees } from '@vouch/audit/merkle';
import { desc, eq } from 'drizzle-orm';
import type { Database } from '../database';
import { readEvents } from '../event-store';
import { readSubtreeHashes } from '../merkle/merkle-node-store';
import { merkleInclusionProof } from '../merkle/merkle-proofs';
import { checkpoints } from '../schema/core';
import type { SavedCheckpoint } from './checkpoint-state';
import type { TreeCheck, TreeFinding } from './verified-tree';

/** A size and root this server signed: from a checkpoint row, or from the state kept outside the database. */
export interface SignedPoint {
  treeSize: number;
  rootHash: Uint8Array;
  /** Where it was read: `database` (the checkpoints table) or the state file's path. */
  from: 'database' | { file: string };
}

/**
 * The checkpoint row of `log` with the largest size whose note opens under this server's own
 * keys, at ANY size: a signed checkpoint past the log's head proves the log was cut back
 * (unlike `latestCheckpoint`, which serves, and so skips rows past the head). Rows that do
 * not open (inserted behind the ledger's back; `verifyChain` reports them) are passed over.
 */
export async function highestSignedPoint(
  database: Database,
  log: string,
  trust: { verifiers: readonly string[]; origin: string },
): Promise<SignedPoint | null> {
  const page = 16;
  for (let offset = 0; ; offset += page) {
    const rows = await database.db
      .select({ note: checkpoints.note })
      .from(checkpoints)
      .where(eq(checkpoints.logId, log))
      .orderBy(desc(checkpoints.treeSize))
      .limit(page)
      .offset(offset);
    for (const row of rows) {
      const opened = openCheckpoint(row.note, trust);
      if (opened.ok && opened.checkpoint.treeSize > 0) {
        const { treeSize, rootHash } = opened.checkpoint;
        return { treeSize, rootHash, from: 'database' };
      }
    }
    if (rows.length < page) return null;
  }
}

/** The saved checkpoint as a signed point. */
export function savedPoint(saved: SavedCheckpoint): SignedPoint {
  return {
    treeSize: saved.treeSize,
    rootHash: new Uint8Array(Buffer.from(saved.rootHash, 'hex')),
    from: { file: saved.path },
  };
}

/** What to do, said wherever a restore is found. */
export const RESTORE_ADVICE =
  'signing is stopped. If you restored a backup on purpose, follow "Restoring a backup" in docs/operations.md (re-revoke keys, tell your witnesses), then run `vouch restore accept`; otherwise treat this as tampering';

/**
 * Check a signed point against the database whose head is `headSize`: the log must reach it,
 * the stored frontier must fold to its root, and the stored event at its size must be the
 * leaf it signed. O(log n) rows. A point from the state file that fails is
 * `ROLLBACK_DETECTED`; one from the checkpoints table, `CHECKPOINT_MISMATCH`.
 */
export async function verifySignedPoint(
  database: Database,
  log: string,
  point: SignedPoint,
  headSize: number,
): Promise<TreeCheck> {
  const { treeSize, rootHash } = point;
  const fail = (table: string, message: string, seq = treeSize): TreeCheck => ({
    ok: false,
    finding: findingAt(log, point, { seq, table, message }),
  });
  if (headSize < treeSize) {
    return fail(
      'audit_events',
      `the log has ${headSize} events, fewer than the ${treeSize} a checkpoint this server signed covers`,
      headSize + 1,
    );
  }
  const frontier = await readSubtreeHashes(database, log, rootSubtrees(treeSize));
  if (frontier.some((hash) => hash === undefined)) {
    return fail(
      'merkle_nodes',
      `the stored Merkle tree no longer reaches the signed checkpoint at ${treeSize}`,
    );
  }
  const range = CompactRange.fromFrontier(treeSize, frontier as Uint8Array[]);
  if (!bytesEqual(range.root(), rootHash)) {
    return fail(
      'merkle_nodes',
      `the stored Merkle nodes at size ${treeSize} do not give the root this server signed`,
    );
  }
  // The head: the stored event at the signed size must recompute, and be the leaf that was signed.
  const [event] = await readEvents(database, log, treeSize - 1, 1);
  if (event === undefined || event.seq !== treeSize) {
    return fail(
      'audit_events',
      `the event at seq ${treeSize}, covered by a checkpoint this server signed, is gone`,
    );
  }
  // A missing proof node is damage too: the frontier above was complete.
  const proof = await merkleInclusionProof(database, { log, seq: treeSize, treeSize }).catch(() => null);
  if (
    proof === null ||
    payloadHashOf(event.payload) !== event.payload_hash ||
    eventHashOf(event) !== event.hash ||
    !verifyInclusion(eventLeafHash(event.hash), treeSize - 1, treeSize, proof, rootHash)
  ) {
    return fail(
      'audit_events',
      `the event at seq ${treeSize} is not the one the checkpoint this server signed covers: history was rewritten`,
    );
  }
  return { ok: true, tree: { range, head: { seq: event.seq, hash: event.hash } } };
}

function findingAt(
  log: string,
  point: SignedPoint,
  at: { seq: number; table: string; message: string },
): TreeFinding {
  if (point.from === 'database') return { code: 'CHECKPOINT_MISMATCH', log, ...at };
  return {
    code: 'ROLLBACK_DETECTED',
    log,
    seq: at.seq,
    table: at.table,
    message: `${at.message} (the last checkpoint it signed, kept in ${point.from.file}): the database was restored from an older backup, or the log was cut back and written again; ${RESTORE_ADVICE}`,
  };
}
