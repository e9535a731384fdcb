// Test support (not exported): change record tables as the database owner can, behind the
// ledger's back. How it was made: `session_replication_role = replica` switches off the
// append-only triggers and the foreign keys for one transaction, which PGlite's user and a
// Postgres owner or superuser may both do; the runtime role may not.
import { type SQL, sql } from 'drizzle-orm';
import type { Database } from '../../database';

/** Run `statements` in one transaction with the append-only triggers and link checks off. */
export async function tamper(database: Database, ...statements: SQL[]): Promise<void> {
  await database.db.transaction(async (tx) => {
    await database.rows(sql`set local session_replication_role = replica`, tx);
    for (const statement of statements) await database.rows(statement, tx);
  });
}

/** Row counts of the chain and of every record table of `log`: what an operation could have written. */
export async function ledgerRowCounts(database: Database, log: string): Promise<Record<string, number>> {
  const counts: Record<string, number> = {};
  for (const table of LEDGER_TABLES) {
    const [row] = await database.rows<{ n: number }>(
      sql`select count(*)::int as n from ${sql.identifier(table)} where log_id = ${log}`,
    );
    counts[table] = row!.n;
  }
  return counts;
}

const LEDGER_TABLES = [
  'audit_events',
  'merkle_nodes',
  'tools',
  'proposals',
  'decisions',
  'approval_requests',
  'approval_resolutions',
  'approval_uses',
  'observations',
  'refused_executions',
  'verifications',
] as const;
