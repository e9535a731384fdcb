import { mkdirSync } from 'node:fs';
import { type Database, openDatabase } from '@vouch/ledger';
import type { DatabaseTarget } from './config';
import { lockDataDir } from './data-dir-lock';

/**
 * Open the database a command should use. For PGlite, take the data directory's lock first
 * (and create the directory); `close()` closes the database and releases the lock.
 */
export async function openTarget(target: DatabaseTarget): Promise<Database> {
  if (target.kind === 'postgres') {
    const { kind: _kind, ...postgres } = target;
    return openDatabase(postgres);
  }
  mkdirSync(target.dataDir, { recursive: true });
  const lock = lockDataDir(target.dataDir);
  let database: Database;
  try {
    database = await openDatabase({ dataDir: target.dataDir });
  } catch (error) {
    lock.release();
    throw error;
  }
  return {
    ...database,
    close: async () => {
      try {
        await database.close();
      } finally {
        lock.release();
      }
    },
  };
}
