import { eq, sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Database, openDatabase } from './database';
import { migrate } from './migrate';
import { auditEvents } from './schema/core';
import { createTestDatabase } from './testing';

const url = process.env.DATABASE_URL;

// Postgres only: PGlite has no protocol-level prepared statements to check. CI sets DATABASE_URL.
describe.skipIf(!url)('drizzle on Postgres', () => {
  let database: Database;
  let drop: () => Promise<void>;

  beforeAll(async () => {
    const created = await createTestDatabase(url!);
    drop = created.drop;
    const migrating = await openDatabase({ url: created.url });
    await migrate(migrating);
    await migrating.close();
    // One connection, so the statement and the check of it share a session.
    database = await openDatabase({ url: created.url, maxConnections: 1 });
  });

  afterAll(async () => {
    await database?.close();
    await drop?.();
  });

  const preparedLike = async (fragment: string) =>
    database.rows<{ statement: string }>(
      sql`select statement from pg_prepared_statements where statement like ${`%${fragment}%`}`,
    );

  it('sends its statements as named prepared statements (see preparedStatements in database-postgres.ts)', async () => {
    await database.db
      .select({ seq: auditEvents.seq })
      .from(auditEvents)
      .where(eq(auditEvents.logId, 'prepared-check'));
    const statements = await preparedLike('"audit_events"."log_id" = $1');
    expect(statements).toHaveLength(1);
  });

  it('prepares them inside transactions and savepoints too', async () => {
    await database.db.transaction(async (tx) => {
      await tx.execute(sql`select ${1}::int + 41 as inside_transaction`);
      await tx.transaction(async (savepoint) => {
        await savepoint.execute(sql`select ${1}::int + 42 as inside_savepoint`);
      });
    });
    expect(await preparedLike('inside_transaction')).toHaveLength(1);
    expect(await preparedLike('inside_savepoint')).toHaveLength(1);
  });
});
