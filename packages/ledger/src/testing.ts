import { randomBytes } from 'node:crypto';
import postgres from 'postgres';
import { type Database, openDatabase } from './database';
import { migrate } from './migrate';
import { readPgliteTemplate } from './pglite-template';

/** A database backend the contract tests run against. */
export interface TestBackend {
  name: 'pglite' | 'postgres';
  /** A fresh, migrated database; for Postgres a new database that `close()` drops. */
  open(): Promise<Database>;
}

/**
 * The backends to run contract tests on: PGlite always, Postgres when `DATABASE_URL` is
 * set (CI always sets it). Use with `describe.each(testBackends())('… on $name', …)`.
 */
export function testBackends(): TestBackend[] {
  const backends: TestBackend[] = [{ name: 'pglite', open: openTestPglite }];
  const url = process.env.DATABASE_URL;
  if (url) backends.push({ name: 'postgres', open: () => openTestPostgres(url) });
  return backends;
}

/**
 * A fresh in-memory PGlite, loaded from the migrated template the test run made
 * (test/global-setup.ts) when there is one for the current migrations, else created empty.
 * Migrating afterwards is a no-op on the template and the whole job without it.
 */
async function openTestPglite(): Promise<Database> {
  const template = readPgliteTemplate();
  const database = template
    ? await (await import('./database-pglite')).openPglite(undefined, { loadDataDir: template })
    : await openDatabase();
  await migrate(database);
  return database;
}

/** Create a uniquely named database on the server of `url`, migrate it, drop it on close. */
export async function openTestPostgres(url: string): Promise<Database> {
  const { url: testUrl, drop } = await createTestDatabase(url);
  const database = await openDatabase({ url: testUrl });
  await migrate(database);
  return {
    ...database,
    close: async () => {
      await database.close();
      await drop();
    },
  };
}

/** A new empty database on the server of `url`; `drop()` removes it. */
export async function createTestDatabase(
  url: string,
): Promise<{ url: string; name: string; drop(): Promise<void> }> {
  const name = `vouch_test_${randomBytes(6).toString('hex')}`;
  const admin = postgres(url, { max: 1, onnotice: () => {} });
  try {
    await admin.unsafe(`create database ${name}`);
  } finally {
    await admin.end({ timeout: 5 });
  }
  const testUrl = new URL(url);
  testUrl.pathname = `/${name}`;
  return {
    url: testUrl.toString(),
    name,
    drop: async () => {
      const cleaner = postgres(url, { max: 1, onnotice: () => {} });
      try {
        await cleaner.unsafe(`drop database if exists ${name} with (force)`);
      } finally {
        await cleaner.end({ timeout: 5 });
      }
    },
  };
}

export { pgliteTemplateKey, pgliteTemplatePath, writePgliteTemplate } from './pglite-template';
export {
  SIGNED_APPROVAL_LOGS,
  writeSignedApprovalLogs,
} from './signatures/__fixtures__/signed-approval-logs';
export {
  appendRecordedAt,
  asTableOwner,
  type EventContent,
  editCheckpoint,
  editMerkleNode,
  forgeRecords,
  ledgerRowCounts,
  rewriteEvent,
  rewriteLog,
  tableRowCounts,
  tamper,
  verifyBothWays,
} from './tamper-testing';
