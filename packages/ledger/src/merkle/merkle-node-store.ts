import type { Subtree, SubtreeHash } from '@vouch/audit/merkle';
import { sql } from 'drizzle-orm';
import { insertRows } from '../batched-sql';
import type { Database, Db } from '../database';
import { merkleNodes } from '../schema/core';

// Rows of `merkle_nodes`: one per complete, aligned subtree (RFC 9162 §2.1.1), written once
// when its last leaf is appended and never changed (the table refuses UPDATE and DELETE).
// Hashes are stored as lowercase hex, like every other hash in the ledger.

/** Most rows in one INSERT: bounds the arrays a catch-up builds at once. */
const INSERT_CHUNK = 5_000;

/**
 * The stored hashes of `subtrees` in one query, in request order; `undefined` where a
 * subtree has no row (past the tree's size, or a log whose nodes were never written).
 */
export async function readSubtreeHashes(
  database: Database,
  log: string,
  subtrees: readonly Subtree[],
  executor?: Db,
): Promise<(Uint8Array | undefined)[]> {
  if (subtrees.length === 0) return [];
  // Row-value IN over the primary key (log_id, level, idx): one index probe per subtree,
  // and a proof asks for O(log n) of them. The pairs travel as two arrays, so the statement
  // text is the same for any number of them (one prepared statement, one cached plan).
  const levels = subtrees.map((s) => s.level);
  const indexes = subtrees.map((s) => String(s.index));
  const rows = await database.rows<{ level: number; idx: number | string; hash: string }>(
    sql`select level, idx, hash from merkle_nodes where log_id = ${log}
        and (level, idx) in (select * from unnest(${sql.param(levels)}::int[], ${sql.param(indexes)}::text[]::bigint[]))`,
    executor,
  );
  const found = new Map(rows.map((r) => [key(r.level, Number(r.idx)), r.hash]));
  return subtrees.map((s) => {
    const hex = found.get(key(s.level, s.index));
    return hex === undefined ? undefined : Uint8Array.from(Buffer.from(hex, 'hex'));
  });
}

/** Insert subtree rows for `log`, one statement per chunk (see `insertRows`). */
export async function insertSubtreeHashes(
  database: Database,
  executor: Db,
  log: string,
  nodes: readonly SubtreeHash[],
): Promise<void> {
  for (let start = 0; start < nodes.length; start += INSERT_CHUNK) {
    await insertRows(
      database,
      executor,
      merkleNodes,
      nodes.slice(start, start + INSERT_CHUNK).map((n) => ({
        logId: log,
        level: n.level,
        idx: n.index,
        hash: Buffer.from(n.hash).toString('hex'),
      })),
    );
  }
}

/** Number of leaves with a stored level-0 node: every subtree they complete is stored too. */
export async function storedLeafCount(database: Database, log: string, executor?: Db): Promise<number> {
  const [row] = await database.rows<{ last: number | string | null }>(
    sql`select max(idx) as last from merkle_nodes where log_id = ${log} and level = 0`,
    executor,
  );
  return row?.last == null ? 0 : Number(row.last) + 1;
}

function key(level: number, index: number): string {
  return `${level}:${index}`;
}
