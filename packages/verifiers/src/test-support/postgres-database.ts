import { randomBytes } from 'node:crypto';
import postgres from 'postgres';

/** A throwaway database on the server in DATABASE_URL. Test support only. */
export interface TestDatabase {
  url: string;
  /** An owner connection for setting up tables and rows. */
  sql: postgres.Sql;
  drop(): Promise<void>;
}

/** True when a real Postgres is configured for tests. */
export const hasPostgres = typeof process.env.DATABASE_URL === 'string' && process.env.DATABASE_URL !== '';

/** Create a database with a random name; `drop()` ends every connection and removes it. */
export async function createTestDatabase(): Promise<TestDatabase> {
  const adminUrl = process.env.DATABASE_URL!;
  const name = `vouch_verifiers_${randomBytes(6).toString('hex')}`;
  const admin = postgres(adminUrl, { max: 1, onnotice: () => {} });
  await admin.unsafe(`create database ${name}`);
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  const sql = postgres(url.href, { max: 2, onnotice: () => {} });
  return {
    url: url.href,
    sql,
    async drop() {
      await sql.end({ timeout: 5 });
      await admin.unsafe(`drop database if exists ${name} with (force)`);
      await admin.end({ timeout: 5 });
    },
  };
}
