import { mkdtempSync } from 'node:fs';
import { join } from 'node:path';
import { type Database, openDatabase } from '@vouch/ledger';
import { createTestDatabase } from '@vouch/ledger/testing';

/** A database for `vouch` commands run in process: the environment that selects it, and a way to open it. */
export interface CliStorage {
  name: string;
  make(): Promise<{ env: NodeJS.ProcessEnv; open(): Promise<Database>; drop(): Promise<void> }>;
}

/**
 * PGlite in a fresh data directory under `root()`, and with DATABASE_URL a fresh Postgres
 * database: the backends every CLI test runs on.
 */
export function cliStorages(root: () => string): CliStorage[] {
  const storages: CliStorage[] = [
    {
      name: 'pglite',
      make: async () => {
        const dataDir = mkdtempSync(join(root(), 'data-'));
        return {
          env: { VOUCH_DATA_DIR: dataDir },
          open: () => openDatabase({ dataDir }),
          drop: async () => {},
        };
      },
    },
  ];
  const server = process.env.DATABASE_URL;
  if (server) {
    storages.push({
      name: 'postgres',
      make: async () => {
        const { url, drop } = await createTestDatabase(server);
        return { env: { DATABASE_URL: url }, open: () => openDatabase({ url }), drop };
      },
    });
  }
  return storages;
}
