import { sql } from 'drizzle-orm';
import type { Database } from './database';

/**
 * Reads on a Postgres hot standby (`DATABASE_READ_URL`), kept consistent with what the
 * primary acknowledged.
 *
 * Why positions in the WAL: a standby replays the primary's WAL in commit order, so once it
 * has replayed past a position it sees every transaction that committed before that position
 * was read on the primary. A reader that takes the primary's position when its read begins,
 * and reads the standby only once the standby has replayed past it, sees every write that was
 * acknowledged before the read began: its own, and everyone else's.
 */

/** The primary's current WAL write position (`pg_current_wal_lsn()`), as text (`16/B374D848`). */
export async function primaryWalPosition(primary: Database): Promise<string> {
  const [row] = await primary.rows<{ lsn: string }>(sql`select pg_current_wal_lsn()::text as lsn`);
  return row!.lsn;
}

/**
 * True once the standby has replayed the WAL up to `lsn`. False while it lags, and false for
 * a server that is not in recovery (promoted, or not a standby at all): its replay position
 * says nothing about the primary's writes.
 */
export async function standbyReplayedTo(standby: Database, lsn: string): Promise<boolean> {
  const [row] = await standby.rows<{ caught_up: boolean | null }>(
    sql`select pg_last_wal_replay_lsn() >= ${lsn}::pg_lsn as caught_up`,
  );
  return row?.caught_up === true;
}

/** True when the server is a standby in recovery (`pg_is_in_recovery()`). */
export async function isHotStandby(database: Database): Promise<boolean> {
  const [row] = await database.rows<{ standby: boolean }>(sql`select pg_is_in_recovery() as standby`);
  return row?.standby === true;
}
