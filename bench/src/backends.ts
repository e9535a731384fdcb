import { randomBytes } from 'node:crypto';
import { type Database, migrate, openDatabase } from '@vouch/ledger';
import postgres from 'postgres';

/** A migrated database for one benchmark backend; `close()` drops a Postgres one. */
export interface BenchDatabase {
  database: Database;
  /** Postgres only: the URL of the benchmark's own database (child processes connect to it). */
  url: string | undefined;
  close(): Promise<void>;
}

export async function openBenchDatabase(
  backend: 'pglite' | 'postgres',
  serverUrl: string | undefined,
  maxConnections = 10,
): Promise<BenchDatabase> {
  if (backend === 'pglite') {
    const database = await openDatabase();
    await migrate(database);
    return { database, url: undefined, close: () => database.close() };
  }
  if (!serverUrl) throw new Error('postgres needs DATABASE_URL');
  const name = `vouch_bench_${randomBytes(5).toString('hex')}`;
  await admin(serverUrl, `create database ${name}`);
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  const database = await openDatabase({ url: url.toString(), maxConnections });
  await migrate(database);
  return {
    database,
    url: url.toString(),
    close: async () => {
      await database.close();
      await admin(serverUrl, `drop database if exists ${name} with (force)`);
    },
  };
}

async function admin(url: string, statement: string): Promise<void> {
  const client = postgres(url, { max: 1, onnotice: () => {} });
  try {
    await client.unsafe(statement);
  } finally {
    await client.end({ timeout: 5 });
  }
}

/** Run one parameterized statement, in its own transaction, on either driver. */
export async function execute(database: Database, text: string, params: unknown[] = []): Promise<void> {
  if (database.driver.kind === 'pglite') {
    await database.driver.client.query(text, params);
    return;
  }
  await database.driver.client.unsafe(text, params as postgres.ParameterOrJSON<never>[]);
}

/** Rows of one query (text protocol, no ORM in between), on either driver. */
export async function query<T>(database: Database, text: string, params: unknown[] = []): Promise<T[]> {
  if (database.driver.kind === 'pglite') {
    return (await database.driver.client.query<T>(text, params)).rows;
  }
  return (await database.driver.client.unsafe(text, params as postgres.ParameterOrJSON<never>[])) as T[];
}

/** Server facts for the report. */
export async function serverFacts(database: Database): Promise<Record<string, string>> {
  const names = [
    'server_version',
    'synchronous_commit',
    'fsync',
    'wal_sync_method',
    'commit_delay',
    'shared_buffers',
    'max_wal_size',
    'full_page_writes',
  ];
  const facts: Record<string, string> = {};
  for (const name of names) {
    const [row] = await query<{ setting: string }>(database, `select current_setting($1) as setting`, [name]);
    facts[name] = row?.setting ?? '?';
  }
  return facts;
}
