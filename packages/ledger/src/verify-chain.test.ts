import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { eventHashOf, payloadHashOf } from '@vouch/audit';
import { type SQL, sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Database } from './database';
import { createLedger, type Ledger } from './ledger';
import { createTestDatabase, testBackends } from './testing';

/** Change the database as its owner would, with the append-only triggers and link checks off. */
async function tamper(database: Database, statement: SQL): Promise<void> {
  await database.db.transaction(async (tx) => {
    await database.rows(sql`set local session_replication_role = replica`, tx);
    await database.rows(statement, tx);
  });
}

describe.each(testBackends())('verifyChain on $name', ({ open }) => {
  let database: Database;
  let ledger: Ledger;
  let logNo = 0;

  beforeAll(async () => {
    database = await open();
    ledger = createLedger(database);
  });
  afterAll(async () => {
    await ledger?.close();
    await database?.close();
  });

  /** A fresh log of `n` events. */
  async function freshLog(n = 8): Promise<string> {
    const log = `tamper-${++logNo}`;
    for (let i = 1; i <= n; i++) {
      await ledger.append({ log, kind: 'note', entity: `e${i}`, actor: 'user:alice', payload: { i } });
    }
    return log;
  }

  describe('when the chain is intact', () => {
    it('reports ok with the head and every event checked', async () => {
      const log = await freshLog();
      const head = await ledger.head(log);
      const progress: number[] = [];
      const report = await ledger.verifyChain({
        log,
        expectHead: head!,
        onProgress: (n) => progress.push(n),
      });
      expect(report).toEqual({ ok: true, log, checked: 8, head, failures: [] });
      expect(progress.at(-1)).toBe(8);
    });
  });

  describe('when history was edited in the database', () => {
    it('finds an edited payload at its seq', async () => {
      const log = await freshLog();
      await tamper(
        database,
        sql`update audit_events set payload = '{"i":999}' where log_id = ${log} and seq = 3`,
      );
      const report = await ledger.verifyChain({ log });
      expect(report.ok).toBe(false);
      expect(report.failures.map((f) => [f.seq, f.code])).toEqual([[3, 'PAYLOAD_HASH_MISMATCH']]);
    });

    it('finds edited metadata at its seq', async () => {
      const log = await freshLog();
      await tamper(
        database,
        sql`update audit_events set actor = 'user:mallory' where log_id = ${log} and seq = 5`,
      );
      const report = await ledger.verifyChain({ log });
      expect(report.failures.map((f) => [f.seq, f.code])).toEqual([[5, 'HASH_MISMATCH']]);
    });

    it('finds a deleted row as a gap', async () => {
      const log = await freshLog();
      await tamper(database, sql`delete from audit_events where log_id = ${log} and seq = 4`);
      const report = await ledger.verifyChain({ log });
      expect(report.failures.map((f) => [f.seq, f.code])).toEqual([
        [5, 'SEQ_GAP'],
        [5, 'PREV_HASH_MISMATCH'],
      ]);
    });

    it('finds reordered rows', async () => {
      const log = await freshLog();
      // Swap rows 3 and 4 (through a free seq: the primary key checks every statement).
      await tamper(database, sql`update audit_events set seq = 1000 where log_id = ${log} and seq = 3`);
      await tamper(database, sql`update audit_events set seq = 3 where log_id = ${log} and seq = 4`);
      await tamper(database, sql`update audit_events set seq = 4 where log_id = ${log} and seq = 1000`);
      const report = await ledger.verifyChain({ log });
      expect(report.failures.map((f) => [f.seq, f.code])).toEqual([
        [3, 'HASH_MISMATCH'],
        [3, 'PREV_HASH_MISMATCH'],
        [4, 'HASH_MISMATCH'],
        [4, 'PREV_HASH_MISMATCH'],
        [5, 'PREV_HASH_MISMATCH'],
      ]);
    });

    it('finds a replaced row whose own hashes were recomputed by the link after it', async () => {
      const log = await freshLog();
      const [original] = await ledger.events(log, { after: 5, limit: 1 });
      const payload = '{"i":"forged"}';
      const forged = { ...original!, payload, payload_hash: payloadHashOf(payload) };
      const hash = eventHashOf(forged);
      await tamper(
        database,
        sql`update audit_events set payload = ${payload}, payload_hash = ${forged.payload_hash}, hash = ${hash} where log_id = ${log} and seq = 6`,
      );
      const report = await ledger.verifyChain({ log });
      expect(report.failures.map((f) => [f.seq, f.code])).toEqual([[7, 'PREV_HASH_MISMATCH']]);
    });

    it('finds a truncated head against the head the auditor trusts', async () => {
      const log = await freshLog();
      const trusted = (await ledger.head(log))!;
      await tamper(database, sql`delete from audit_events where log_id = ${log} and seq > 6`);
      const report = await ledger.verifyChain({ log, expectHead: trusted });
      expect(report.failures.map((f) => [f.seq, f.code])).toEqual([[8, 'TRUNCATED']]);
      expect(report.head?.seq).toBe(6);
    });

    it('keeps going after a break and reports every one', async () => {
      const log = await freshLog();
      await tamper(
        database,
        sql`update audit_events set payload = '{}' where log_id = ${log} and seq in (2, 7)`,
      );
      const report = await ledger.verifyChain({ log });
      expect(report.checked).toBe(8);
      expect(report.failures.map((f) => f.seq)).toEqual([2, 7]);
    });
  });
});

const postgresUrl = process.env.DATABASE_URL;
// Several processes need a shared server: PGlite is embedded in one process by design.
describe.runIf(postgresUrl)('appends from two processes on one Postgres', () => {
  const worker = fileURLToPath(new URL('./__fixtures__/append-worker.ts', import.meta.url));
  const run = promisify(execFile);
  let testDb: Awaited<ReturnType<typeof createTestDatabase>>;
  let database: Database;

  beforeAll(async () => {
    testDb = await createTestDatabase(postgresUrl!);
    const { openDatabase } = await import('./database');
    const { migrate } = await import('./migrate');
    database = await openDatabase({ url: testDb.url });
    await migrate(database);
  });
  afterAll(async () => {
    await database?.close();
    await testDb?.drop();
  });

  it('keeps one gapless chain when 2 processes x 16 appenders write at once', async () => {
    const spawnWorker = (id: string) =>
      run(process.execPath, ['--import', 'tsx', '--conditions=@vouch/source', worker], {
        env: {
          ...process.env,
          DATABASE_URL: testDb.url,
          LOG: 'multi',
          COUNT: '150',
          CONCURRENCY: '16',
          WORKER: id,
        },
      });
    const results = await Promise.all([spawnWorker('a'), spawnWorker('b')]);
    const acknowledged = results.map((r) => JSON.parse(r.stdout).acknowledged as number);
    expect(acknowledged).toEqual([150, 150]);
    const ledger = createLedger(database);
    const report = await ledger.verifyChain({ log: 'multi' });
    expect(report).toMatchObject({ ok: true, checked: 300, head: { seq: 300 } });
    const [row] = await database.rows<{ n: number; max: number }>(
      sql`select count(*)::int as n, max(seq)::int as max from audit_events where log_id = 'multi'`,
    );
    expect(row).toEqual({ n: 300, max: 300 });
  }, 60_000);
});
