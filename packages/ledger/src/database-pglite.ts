import { PGlite } from '@electric-sql/pglite';
import type { SQL } from 'drizzle-orm';
import { drizzle as drizzlePglite } from 'drizzle-orm/pglite';
import type { Database, Db } from './database';
import { LedgerError } from './errors';
import { rowsOf } from './rows-of';
import * as schema from './schema/index';

const INT8_OID = 20;

/**
 * Embedded PGlite in `dataDir`, or in memory. Runs with fsync off: not crash-durable.
 * `loadDataDir` (tests only) starts from a `dumpDataDir()` tarball instead of an empty cluster.
 */
export async function openPglite(
  dataDir: string | undefined,
  options: { loadDataDir?: Blob } = {},
): Promise<Database> {
  let client: PGlite;
  try {
    client = await PGlite.create(dataDir, {
      // int8 as a JS number: seq and tree sizes stay far below 2^53.
      parsers: { [INT8_OID]: (value: string) => Number(value) },
      ...(options.loadDataDir ? { loadDataDir: options.loadDataDir } : {}),
    });
  } catch (cause) {
    throw new LedgerError('DATABASE_UNAVAILABLE', `cannot open the PGlite data directory ${dataDir}`, {
      cause,
      details: { dataDir },
    });
  }
  const db = drizzlePglite({ client, schema }) as unknown as Db;
  return {
    kind: 'pglite',
    db,
    location: dataDir ?? 'memory',
    driver: { kind: 'pglite', client },
    rows: async <T>(query: SQL, executor: Db = db) => rowsOf<T>(await executor.execute(query)),
    pool: () => ({ max: 1 }),
    close: () => client.close(),
  };
}
