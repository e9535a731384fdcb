import { eventLeafHash } from '@vouch/audit';
import type { Subtree, SubtreeHash } from '@vouch/audit/merkle';
import { sql } from 'drizzle-orm';
import { insertRows } from '../batched-sql';
import type { Database, Db } from '../database';
import { merkleNodes } from '../schema/core';

// Rows of `merkle_nodes`: one per complete, aligned subtree (RFC 9162 §2.1.1) above the
// leaves, written once when its last leaf is appended and never changed (the table refuses
// UPDATE and DELETE). Hashes are stored as lowercase hex, like every other hash in the ledger.
// A leaf (level 0) is not stored: it is `eventLeafHash` of its event's hash, read from
// `audit_events`.

/** Most rows in one INSERT: bounds the arrays a catch-up builds at once. */
const INSERT_CHUNK = 5_000;

/**
 * The hashes of `subtrees` in one query, in request order; `undefined` where a subtree has
 * no row (past the tree's size, or a log whose nodes were never written). Interior nodes
 * come from `merkle_nodes`, leaves from their events.
 */
export async function readSubtreeHashes(
  database: Database,
  log: string,
  subtrees: readonly Subtree[],
  executor?: Db,
): Promise<(Uint8Array | undefined)[]> {
  if (subtrees.length === 0) return [];
  // Row-value IN over the primary key (log_id, level, idx): one index probe per subtree,
  // and a proof asks for O(log n) of them; leaves are probes of audit_events by (log_id, seq).
  // Everything travels as arrays, so the statement text is the same for any number of them
  // (one prepared statement, one cached plan).
  const interior = subtrees.filter((s) => s.level > 0);
  const levels = interior.map((s) => s.level);
  const indexes = interior.map((s) => String(s.index));
  const leafSeqs = subtrees.filter((s) => s.level === 0).map((s) => String(s.index + 1));
  const rows = await database.rows<{ level: number; idx: number | string; hash: string }>(
    sql`select level, idx, hash from merkle_nodes where log_id = ${log}
        and (level, idx) in (select * from unnest(${sql.param(levels)}::int[], ${sql.param(indexes)}::text[]::bigint[]))
        union all
        select 0, seq - 1, hash from audit_events where log_id = ${log}
        and seq = any(${sql.param(leafSeqs)}::text[]::bigint[])`,
    executor,
  );
  const found = new Map(
    rows.map((r) => {
      const bytes = r.level === 0 ? eventLeafHash(r.hash) : Uint8Array.from(Buffer.from(r.hash, 'hex'));
      return [key(r.level, Number(r.idx)), bytes];
    }),
  );
  return subtrees.map((s) => found.get(key(s.level, s.index)));
}

/**
 * Insert the rows of the interior subtrees among `completed` for `log`, one statement per
 * chunk (see `insertRows`); leaves are skipped (they are not stored).
 */
export async function insertSubtreeHashes(
  database: Database,
  executor: Db,
  log: string,
  completed: readonly SubtreeHash[],
): Promise<void> {
  const rows = subtreeRows(log, completed);
  for (let start = 0; start < rows.length; start += INSERT_CHUNK)
    await insertRows(database, executor, merkleNodes, rows.slice(start, start + INSERT_CHUNK));
}

/** The interior subtrees among `completed` as rows of `merkle_nodes`; leaves are not stored. */
export function subtreeRows(
  log: string,
  completed: readonly SubtreeHash[],
): Array<typeof merkleNodes.$inferInsert> {
  const rows: Array<typeof merkleNodes.$inferInsert> = [];
  for (const n of completed)
    if (n.level > 0)
      rows.push({ logId: log, level: n.level, idx: n.index, hash: Buffer.from(n.hash).toString('hex') });
  return rows;
}

/**
 * How many leaves the stored level-1 nodes pair up: twice the count of their longest run
 * from idx 0 as the table's last idx says it (0 when there is none).
 */
export async function storedPairedLeaves(database: Database, log: string, executor?: Db): Promise<number> {
  const [row] = await database.rows<{ last: number | string | null }>(
    sql`select max(idx) as last from merkle_nodes where log_id = ${log} and level = 1`,
    executor,
  );
  return row?.last == null ? 0 : (Number(row.last) + 1) * 2;
}

/**
 * How many leaves the stored tree covers: every subtree they complete is stored. The nodes of
 * a batch are written with its events, so that is the event count, except for a log whose
 * nodes stop short (appended before the tree was kept): then it is the leaves its level-1
 * nodes pair up, plus the next leaf, which completes no node of its own.
 */
export async function storedLeafCount(database: Database, log: string, executor?: Db): Promise<number> {
  const [paired, [row]] = await Promise.all([
    storedPairedLeaves(database, log, executor),
    database.rows<{ events: number | string | null }>(
      sql`select max(seq) as events from audit_events where log_id = ${log}`,
      executor,
    ),
  ]);
  return Math.min(row?.events == null ? 0 : Number(row.events), paired + 1);
}

function key(level: number, index: number): string {
  return `${level}:${index}`;
}
