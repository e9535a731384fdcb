import { sql } from 'drizzle-orm';
import type { Database, Db } from './database';
import { LedgerError } from './errors';

/**
 * True when anything is stored under `log`. A log comes into being with its first event
 * (there is no table of logs: appending to a new log id creates it), so a log id without
 * events is unknown. Merkle nodes and checkpoints count too: a log whose events were all
 * deleted still exists, and its verification must say so rather than call it unknown.
 * Three primary-key probes.
 */
export async function logExists(database: Database, log: string, executor?: Db): Promise<boolean> {
  const [row] = await database.rows<{ found: boolean }>(
    sql`select exists(select 1 from audit_events where log_id = ${log})
        or exists(select 1 from merkle_nodes where log_id = ${log})
        or exists(select 1 from checkpoints where log_id = ${log}) as found`,
    executor,
  );
  return row?.found === true;
}

/** Throws `LedgerError` `LOG_NOT_FOUND` unless {@link logExists}: a typo must not read as an empty log. */
export async function requireLog(database: Database, log: string, executor?: Db): Promise<void> {
  if (await logExists(database, log, executor)) return;
  throw new LedgerError('LOG_NOT_FOUND', `log ${log} does not exist: nothing was ever appended to it`, {
    details: { log },
  });
}

/** Every log id in the database, in order, without scanning every event (a loose index scan). */
export async function listLogs(database: Database, executor?: Db): Promise<string[]> {
  const rows = await database.rows<{ log_id: string }>(
    sql`
    with recursive logs(log_id) as (
      (select log_id from audit_events order by log_id limit 1)
      union all
      select (select e.log_id from audit_events e where e.log_id > logs.log_id order by e.log_id limit 1)
      from logs where logs.log_id is not null
    )
    select log_id from logs where log_id is not null`,
    executor,
  );
  return rows.map((r) => r.log_id);
}
