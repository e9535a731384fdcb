import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { sql } from 'drizzle-orm';
import type { PgliteDatabase } from 'drizzle-orm/pglite';
import { migrate as migratePglite } from 'drizzle-orm/pglite/migrator';
import type { PostgresJsDatabase } from 'drizzle-orm/postgres-js';
import { migrate as migratePostgres } from 'drizzle-orm/postgres-js/migrator';
import type { Database } from './database';
import { LedgerError } from './errors';
import type * as schema from './schema';

/** The committed drizzle-kit migrations (works from src/ and dist/ alike). */
export const migrationsFolder = fileURLToPath(new URL('../migrations', import.meta.url));

// One arbitrary constant: every Vouch process that migrates takes this advisory lock, so
// two instances starting at once against one Postgres do not race on the same DDL.
const MIGRATION_LOCK = 0x766f7563;

/** Apply every pending migration. Safe to call from several processes at once. */
export async function migrate(database: Database): Promise<void> {
  try {
    if (database.kind === 'pglite') {
      // The database was opened on the PGlite driver, so its drizzle database is PGlite's.
      await migratePglite(database.db as PgliteDatabase<typeof schema>, { migrationsFolder });
      return;
    }
    if (database.driver.kind !== 'postgres') throw new Error('unreachable: driver kind');
    const connection = await database.driver.client.reserve();
    try {
      await connection`select pg_advisory_lock(${MIGRATION_LOCK})`;
      // The lock only has to be held while the pool migrates: a second process waits here,
      // then finds every migration applied.
      await migratePostgres(database.db as PostgresJsDatabase<typeof schema>, { migrationsFolder });
    } finally {
      await connection`select pg_advisory_unlock(${MIGRATION_LOCK})`.catch(() => {});
      connection.release();
    }
  } catch (cause) {
    throw new LedgerError('DATABASE_UNAVAILABLE', `applying migrations to ${database.location} failed`, {
      cause,
    });
  }
}

/** How many migrations the code ships and how many the database has applied. */
export async function migrationStatus(database: Database): Promise<{ expected: number; applied: number }> {
  const journal = JSON.parse(readFileSync(`${migrationsFolder}/meta/_journal.json`, 'utf8')) as {
    entries: unknown[];
  };
  const [exists] = await database.rows<{ present: boolean }>(
    sql`select to_regclass('drizzle.__drizzle_migrations') is not null as present`,
  );
  if (!exists?.present) return { expected: journal.entries.length, applied: 0 };
  const [row] = await database.rows<{ n: number }>(
    sql`select count(*)::int as n from drizzle.__drizzle_migrations`,
  );
  return { expected: journal.entries.length, applied: row?.n ?? 0 };
}
