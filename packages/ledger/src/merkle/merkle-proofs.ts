import {
  consistencyProof,
  inclusionProof,
  type Subtree,
  type SubtreeSource,
  treeRoot,
} from '@vouch/audit/merkle';
import type { Database, Db } from '../database';
import { LedgerError } from '../errors';
import { readSubtreeHashes, storedLeafCount } from './merkle-node-store';

/**
 * A `SubtreeSource` over a log's stored Merkle nodes: each batch of subtrees a root or a
 * proof needs is one `SELECT … WHERE log_id = $1 AND (level, idx) IN (…)` of O(log n) rows.
 * A subtree without a row means the tree is not that large (yet): `LedgerError` `NOT_FOUND`.
 */
export function storedSubtrees(database: Database, log: string, executor?: Db): SubtreeSource {
  return {
    async subtreeHashes(subtrees: readonly Subtree[]) {
      const hashes = await readSubtreeHashes(database, log, subtrees, executor);
      if (hashes.every((h) => h !== undefined)) return hashes as Uint8Array[];
      // Only on a miss: say how large the tree is, so the caller can ask again correctly.
      const leaves = await storedLeafCount(database, log, executor);
      throw new LedgerError(
        'NOT_FOUND',
        `log ${log} has a Merkle tree of ${leaves} leaves; that is too small`,
        {
          details: { log, treeSize: leaves },
        },
      );
    },
  };
}

/** How many leaves (events, seq 1..n) the stored Merkle tree of `log` holds. */
export function merkleTreeSize(database: Database, log: string, executor?: Db): Promise<number> {
  return storedLeafCount(database, log, executor);
}

/**
 * The RFC 9162 root hash over the first `treeSize` events of `log`, from at most one
 * stored hash per level. `NOT_FOUND` when the log has fewer events.
 */
export function merkleRoot(
  database: Database,
  request: { log: string; treeSize: number },
  executor?: Db,
): Promise<Uint8Array> {
  return treeRoot(storedSubtrees(database, request.log, executor), request.treeSize);
}

/**
 * The inclusion proof of event `seq` (leaf index `seq - 1`) in the tree of the first
 * `treeSize` events of `log`, lowest node first. One query of O(log n) rows.
 * `AuditError` `MALFORMED_PROOF` unless `1 <= seq <= treeSize`; `NOT_FOUND` when the log is shorter.
 *
 * @example
 * const proof = await merkleInclusionProof(database, { log, seq: event.seq, treeSize: checkpoint.treeSize });
 * verifyInclusion(eventLeafHash(event.hash), event.seq - 1, checkpoint.treeSize, proof, checkpoint.rootHash);
 */
export function merkleInclusionProof(
  database: Database,
  request: { log: string; seq: number; treeSize: number },
  executor?: Db,
): Promise<Uint8Array[]> {
  return inclusionProof(storedSubtrees(database, request.log, executor), {
    index: request.seq - 1,
    treeSize: request.treeSize,
  });
}

/**
 * The consistency proof from the tree of the first `size1` events of `log` to the tree of
 * the first `size2`. One query of O(log n) rows. `AuditError` `MALFORMED_PROOF` unless
 * `1 <= size1 <= size2`; `NOT_FOUND` when the log is shorter than `size2`.
 */
export function merkleConsistencyProof(
  database: Database,
  request: { log: string; size1: number; size2: number },
  executor?: Db,
): Promise<Uint8Array[]> {
  return consistencyProof(storedSubtrees(database, request.log, executor), {
    size1: request.size1,
    size2: request.size2,
  });
}
