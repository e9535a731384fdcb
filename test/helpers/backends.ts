// End-to-end support: where a test server keeps its data, on each backend the suite runs.
import { join } from 'node:path';
import { type Database, openDatabase } from '@vouch/ledger';
import { createTestDatabase } from '@vouch/ledger/testing';
import type { StorageEnv } from './server';

/** One backend for a real `vouch serve`: its storage settings, a direct handle, and cleanup. */
export interface ServerBackend {
  name: 'pglite' | 'postgres';
  setup(dir: string): Promise<{ storage: StorageEnv; open(): Promise<Database>; drop(): Promise<void> }>;
}

/**
 * PGlite in a data directory under the test's own folder always; a fresh Postgres database
 * when `DATABASE_URL` is set (always in CI), dropped by `drop()`.
 */
export function serverBackends(): ServerBackend[] {
  const backends: ServerBackend[] = [
    {
      name: 'pglite',
      setup: async (dir) => {
        const dataDir = join(dir, 'data');
        return {
          storage: { VOUCH_DATA_DIR: dataDir },
          open: () => openDatabase({ dataDir }),
          drop: async () => {},
        };
      },
    },
  ];
  const serverUrl = process.env.DATABASE_URL;
  if (serverUrl) {
    backends.push({
      name: 'postgres',
      setup: async () => {
        const { url, drop } = await createTestDatabase(serverUrl);
        return { storage: { DATABASE_URL: url }, open: () => openDatabase({ url }), drop };
      },
    });
  }
  return backends;
}
