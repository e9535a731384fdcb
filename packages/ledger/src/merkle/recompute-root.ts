import { eventLeafHash } from '@vouch/audit';
import { CompactRange } from '@vouch/audit/merkle';
import { sql } from 'drizzle-orm';
import type { Database, Db } from '../database';
import { LedgerError } from '../errors';

/** Event hashes read per query. */
const PAGE = 10_000;

/**
 * The RFC 9162 root over the first `treeSize` events of `log`, recomputed from the events'
 * stored hashes: `merkle_nodes` is not read. Where `merkleRoot` answers from the stored
 * nodes in O(log n), this costs O(treeSize - from.size) and trusts nothing but the event
 * rows; pass `from` (a compact range over a prefix already recomputed, e.g. at the last
 * checkpoint checked) to resume instead of starting over. Returns the root and the compact
 * range at `treeSize`, to resume from next time.
 *
 * Throws `LedgerError` `NOT_FOUND` when the log holds fewer than `treeSize` events, and
 * `CHAIN_CONFLICT` when a seq is missing below it.
 *
 * @example
 * const { root } = await merkleRootFromEvents(database, { log, treeSize: head.seq });
 * if (!bytesEqual(root, await merkleRoot(database, { log, treeSize: head.seq }))) refuseToSign();
 */
export async function merkleRootFromEvents(
  database: Database,
  request: { log: string; treeSize: number; from?: CompactRange },
  executor?: Db,
): Promise<{ root: Uint8Array; range: CompactRange }> {
  const { log, treeSize } = request;
  const range = request.from
    ? CompactRange.fromFrontier(request.from.size, request.from.frontier())
    : new CompactRange();
  if (range.size > treeSize) {
    throw new LedgerError(
      'CHAIN_CONFLICT',
      `cannot recompute a tree of ${treeSize} from one of ${range.size}`,
      {
        details: { log, treeSize, from: range.size },
      },
    );
  }
  while (range.size < treeSize) {
    const rows = await database.rows<{ seq: number; hash: string }>(
      sql`select seq, hash from audit_events where log_id = ${log} and seq > ${range.size}
          and seq <= ${Math.min(treeSize, range.size + PAGE)} order by seq`,
      executor,
    );
    if (rows.length === 0) {
      throw new LedgerError('NOT_FOUND', `log ${log} has ${range.size} events, not ${treeSize}`, {
        details: { log, treeSize: range.size },
      });
    }
    for (const row of rows) {
      if (Number(row.seq) !== range.size + 1) {
        throw new LedgerError('CHAIN_CONFLICT', `log ${log} has no event at seq ${range.size + 1}`, {
          details: { log, seq: range.size + 1 },
        });
      }
      range.append(eventLeafHash(row.hash));
    }
  }
  return { root: range.root(), range };
}
