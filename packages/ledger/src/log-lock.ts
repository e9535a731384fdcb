import { GENESIS_PREV_HASH } from '@vouch/audit';
import { sql } from 'drizzle-orm';
import type { AppendHead } from './append-time';
import type { Database, Db } from './database';

/**
 * Below this many events a log is young, and its batches run with custom plans.
 *
 * Why: each inserted row's link check (the foreign key to the row before) is a query whose
 * generic plan the server caches per connection. Built while the table is tiny and has no
 * statistics, that plan can pick the index on (log_id, entity_id), which then ties on cost
 * with the link index, and filter every row of the log: O(n) per append until the table
 * is next analyzed, which PGlite never does. Forcing custom plans while the log is young
 * means the generic plan is only built once the table is big enough for the planner to
 * tell the indexes apart. Custom plans cost ~30 us of server time per row, so only the
 * first batches of a log pay it.
 */
export const YOUNG_LOG_EVENTS = 1_000;

/**
 * Take the log's advisory lock in the batch transaction `tx` and read its head, with its
 * time (genesis for a new log). Two statements, sent together (postgres-js pipelines them on the transaction's
 * connection; the server runs them in order): one round trip. The head is read by the second,
 * whose READ COMMITTED snapshot is taken only after the first has the lock, so it sees every
 * batch that committed before ours, from any process.
 */
export async function lockLogAndReadHead(
  database: Database,
  tx: Db,
  log: string,
  young: boolean,
): Promise<AppendHead> {
  const [, found] = await Promise.all([
    database.rows(
      young
        ? sql`select pg_advisory_xact_lock(hashtextextended(${log}, 0)), set_config('plan_cache_mode', 'force_custom_plan', true)`
        : sql`select pg_advisory_xact_lock(hashtextextended(${log}, 0))`,
      tx,
    ),
    database.rows<AppendHead>(
      sql`select seq, hash, recorded_at as at from audit_events where log_id = ${log} order by seq desc limit 1`,
      tx,
    ),
  ]);
  return found[0] ?? { seq: 0, hash: GENESIS_PREV_HASH, at: null };
}

/**
 * `ANALYZE` when the ledger's tables have no statistics yet (a database younger than
 * autovacuum's first pass, or PGlite, which never analyzes on its own).
 *
 * Why: every row a batch inserts is checked by foreign keys (the chain link, each record's
 * event, a decision's proposal, ...), whose queries the server plans once per connection and
 * caches. A plan built without statistics can pick the wrong one of the indexes that start
 * with log_id and scan the whole log for each check: O(n) per row, measured as a 64-row
 * insert growing from 2 ms to 60 ms within a few thousand events. ANALYZE invalidates those
 * plans, and the next ones are built from real row counts. Costs one sampled pass, once.
 */
export async function refreshStatistics(database: Database): Promise<void> {
  try {
    const [row] = await database.rows<{ tuples: number }>(
      sql`select reltuples::float8 as tuples from pg_class where oid = 'audit_events'::regclass`,
    );
    if ((row?.tuples ?? -1) < YOUNG_LOG_EVENTS) await database.rows(sql`analyze`);
  } catch {
    // Only a hint to the planner: appends are correct without it.
  }
}
