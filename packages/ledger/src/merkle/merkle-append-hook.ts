import { eventLeafHash, type StoredEvent } from '@vouch/audit';
import { CompactRange, rootSubtrees, type SubtreeHash } from '@vouch/audit/merkle';
import { sql } from 'drizzle-orm';
import type { Database, Db } from '../database';
import { LedgerError } from '../errors';
import type { AppendHook } from '../ledger';
import type { MerkleFrontiers } from './merkle-frontiers';
import { insertSubtreeHashes, readSubtreeHashes, storedPairedLeaves } from './merkle-node-store';

const seenBatches = new WeakSet<readonly StoredEvent[]>();

/** Events read per page when a log's missing nodes are built from its events. */
const CATCH_UP_PAGE = 5_000;

/**
 * The append hook that keeps a log's Merkle tree (RFC 9162, leaf = `eventLeafHash(event.hash)`)
 * in `merkle_nodes`: every complete, aligned subtree above the leaves is stored, in the same
 * transaction and under the same advisory lock as the events that complete it (a leaf is
 * its event's hash, hashed once more: the event row is its storage). A proof or
 * a root is then O(log n) reads, and the tree can never disagree with committed events.
 *
 * Per batch it costs one read (the frontier: at most one hash per level) and one multi-row
 * insert of about one row per event (on average one interior node per leaf).
 *
 * A log with events but no (or not all) nodes, e.g. appended before this hook was installed,
 * is caught up from its stored events in the first batch that finds the gap.
 *
 * @example
 * const ledger = createLedger(database, { afterAppend: [merkleAppendHook] });
 */
export const merkleAppendHook: AppendHook = createMerkleAppendHook();

/**
 * {@link merkleAppendHook}, remembering each log's frontier in `frontiers` (see
 * `MerkleFrontiers`): a batch that builds on the head this process last appended skips the
 * frontier read. What the ledger installs by default.
 */
export function createMerkleAppendHook(frontiers?: MerkleFrontiers): AppendHook {
  return async (tx, log, events, database) => {
    // The ledger hands every hook the same batch array: a hook listed twice (a default plus
    // an explicit one) must not insert the batch's nodes twice.
    if (events.length === 0 || seenBatches.has(events)) return;
    seenBatches.add(events);
    const first = events[0]!;
    const size = first.seq - 1;
    const range =
      frontiers?.at(log, { seq: size, hash: first.prev_hash }) ??
      (await loadFrontier(database, tx, log, size));
    const rows = appendLeaves(log, range, events);
    await insertSubtreeHashes(database, tx, log, rows);
    const last = events[events.length - 1]!;
    frontiers?.remember(log, { seq: last.seq, hash: last.hash }, range);
  };
}

/**
 * Append the leaves of `events` (one contiguous run in seq order, starting right after the
 * range) to `range`; returns the subtrees they complete.
 */
export function appendLeaves(
  log: string,
  range: CompactRange,
  events: readonly StoredEvent[],
): SubtreeHash[] {
  const rows: SubtreeHash[] = [];
  for (const event of events) {
    if (event.seq !== range.size + 1) {
      // The ledger hands over one contiguous run in seq order; anything else is a bug upstream.
      throw new LedgerError('CHAIN_CONFLICT', `Merkle append for log ${log} expected seq ${range.size + 1}`, {
        details: { log, seq: event.seq },
      });
    }
    rows.push(...range.append(eventLeafHash(event.hash)));
  }
  return rows;
}

/** The compact range at `size` from stored nodes, building any missing ones from the events. */
async function loadFrontier(database: Database, tx: Db, log: string, size: number): Promise<CompactRange> {
  const hashes = await readSubtreeHashes(database, log, rootSubtrees(size), tx);
  if (hashes.every((h) => h !== undefined)) return CompactRange.fromFrontier(size, hashes as Uint8Array[]);

  // Slow path, once per log: nodes stop short of the chain. Every leaf the stored nodes
  // cover had all the subtrees it completed written with it, so resume from there.
  const paired = await storedPairedLeaves(database, log, tx);
  if (paired > size) {
    throw new LedgerError(
      'CHAIN_CONFLICT',
      `log ${log} has Merkle nodes for ${paired} leaves but only ${size} events: refusing to append to a tree that disagrees with the chain`,
      { details: { log, leaves: paired, events: size } },
    );
  }
  const covered = Math.min(size, paired + 1);
  const resumed = await readSubtreeHashes(database, log, rootSubtrees(covered), tx);
  if (!resumed.every((h) => h !== undefined)) {
    throw new LedgerError(
      'CHAIN_CONFLICT',
      `log ${log} has an incomplete Merkle frontier at ${covered} leaves`,
      {
        details: { log, leaves: covered },
      },
    );
  }
  const range = CompactRange.fromFrontier(covered, resumed as Uint8Array[]);
  while (range.size < size) {
    const page = await database.rows<{ seq: number | string; hash: string }>(
      sql`select seq, hash from audit_events where log_id = ${log} and seq > ${range.size} and seq <= ${size}
          order by seq limit ${CATCH_UP_PAGE}`,
      tx,
    );
    const rows: SubtreeHash[] = [];
    if (page.length === 0) throw gap(log, range.size + 1);
    for (const row of page) {
      if (Number(row.seq) !== range.size + 1) throw gap(log, range.size + 1);
      rows.push(...range.append(eventLeafHash(row.hash)));
    }
    await insertSubtreeHashes(database, tx, log, rows);
  }
  return range;
}

function gap(log: string, seq: number): LedgerError {
  return new LedgerError(
    'CHAIN_CONFLICT',
    `log ${log} has no event at seq ${seq} to build its Merkle tree from`,
    {
      details: { log, seq },
    },
  );
}
