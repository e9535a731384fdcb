import { randomBytes } from 'node:crypto';
import { eventHashOf, GENESIS_PREV_HASH, payloadHashOf, type StoredEvent } from '@vouch/audit';
import { sql } from 'drizzle-orm';
import postgres from 'postgres';
import { type Database, type Db, openDatabase } from './database';
import { migrate } from './migrate';

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

async function openTestPglite(): Promise<Database> {
  const database = await openDatabase();
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

/**
 * Run `work` as a table owner can: with the append-only triggers and the foreign keys off
 * (`session_replication_role = replica`), in one transaction. For tests of what the server
 * does when someone who holds the database changes it underneath.
 */
export async function asTableOwner(database: Database, work: (tx: Db) => Promise<void>): Promise<void> {
  await database.db.transaction(async (tx) => {
    await database.rows(sql`set local session_replication_role = replica`, tx as unknown as Db);
    await work(tx as unknown as Db);
  });
}

/**
 * Rewrite a log's history from `fromSeq` to its head as a table owner could, so that the
 * chain alone is valid again: a new payload at `fromSeq`, and every payload hash, hash and
 * link after it recomputed. `merkle_nodes` and `checkpoints` are left as they were.
 */
export async function rewriteHistory(database: Database, log: string, fromSeq: number): Promise<void> {
  const events = await database.rows<StoredEvent>(
    sql`select log_id as log, seq, kind, entity_id as entity, actor, recorded_at as at, payload, payload_hash,
        prev_hash, hash from audit_events where log_id = ${log} and seq >= ${fromSeq - 1} order by seq`,
  );
  let prev = fromSeq === 1 ? GENESIS_PREV_HASH : events.shift()!.hash;
  await asTableOwner(database, async (tx) => {
    for (const event of events) {
      const payload = event.seq === fromSeq ? '{"rewritten":true}' : event.payload;
      const payloadHash = payloadHashOf(payload);
      const hash = eventHashOf({
        ...event,
        seq: Number(event.seq),
        payload_hash: payloadHash,
        prev_hash: prev,
      });
      await database.rows(
        sql`update audit_events set payload = ${payload}, payload_hash = ${payloadHash}, prev_hash = ${prev},
            hash = ${hash} where log_id = ${log} and seq = ${event.seq}`,
        tx,
      );
      prev = hash;
    }
  });
}
