import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { PgliteDatabase } from 'drizzle-orm/pglite';
import { migrate as migratePglite } from 'drizzle-orm/pglite/migrator';
import type { PostgresJsDatabase } from 'drizzle-orm/postgres-js';
import { migrate as migratePostgres } from 'drizzle-orm/postgres-js/migrator';
import { type Database, openDatabase } from '../database';
import { migrationsFolder } from '../migrate';
import type * as schema from '../schema/index';
import { createTestDatabase } from '../testing';

/** The backends a migration test runs on: PGlite always, Postgres with DATABASE_URL. */
export function migrationBackends(): Array<{
  name: string;
  open(): Promise<Database>;
  drop(): Promise<void>;
}> {
  const backends: Array<{ name: string; open(): Promise<Database>; drop(): Promise<void> }> = [
    { name: 'pglite', open: () => openDatabase(), drop: async () => {} },
  ];
  if (process.env.DATABASE_URL) {
    let drop = async () => {};
    backends.push({
      name: 'postgres',
      open: async () => {
        const created = await createTestDatabase(process.env.DATABASE_URL!);
        drop = created.drop;
        return openDatabase({ url: created.url });
      },
      drop: () => drop(),
    });
  }
  return backends;
}

/**
 * Apply the committed migrations whose tag sorts before `tag` (e.g. `'0007'`): a database as
 * the code before that migration left it.
 */
export async function migrateBefore(database: Database, tag: string): Promise<void> {
  const folder = mkdtempSync(join(tmpdir(), 'vouch-migrations-'));
  try {
    cpSync(migrationsFolder, folder, { recursive: true });
    const journalPath = join(folder, 'meta', '_journal.json');
    const journal = JSON.parse(readFileSync(journalPath, 'utf8')) as { entries: Array<{ tag: string }> };
    journal.entries = journal.entries.filter((entry) => entry.tag < tag);
    writeFileSync(journalPath, JSON.stringify(journal));
    if (database.kind === 'pglite')
      await migratePglite(database.db as PgliteDatabase<typeof schema>, { migrationsFolder: folder });
    else
      await migratePostgres(database.db as PostgresJsDatabase<typeof schema>, { migrationsFolder: folder });
  } finally {
    rmSync(folder, { recursive: true, force: true });
  }
}
