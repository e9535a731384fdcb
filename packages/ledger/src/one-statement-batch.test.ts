import type { StoredEvent } from '@vouch/audit';
import { PgDialect } from 'drizzle-orm/pg-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { notifyingHook } from './append-hooks';
import type { Database } from './database';
import { createLedger, type Ledger, type LedgerOptions } from './ledger';
import { YOUNG_LOG_EVENTS } from './log-lock';
import { merkleAppendHook } from './merkle/merkle-append-hook';
import { lostRace } from './one-statement-batch';
import { testBackends } from './testing';

const dialect = new PgDialect();

/**
 * `database`, counting the statements run through `rows`: every statement of an append batch
 * but BEGIN and COMMIT. The statistics refresh a log's first thousand events start runs
 * beside the appends, not as part of a batch: it is not counted.
 */
function counting(database: Database): { database: Database; statements: () => number } {
  let count = 0;
  return {
    database: {
      ...database,
      rows: (query, executor) => {
        if (!/reltuples|^analyze/.test(dialect.sqlToQuery(query).sql)) count++;
        return database.rows(query, executor);
      },
    },
    statements: () => count,
  };
}

const note = (log: string, i: number) => ({
  log,
  kind: 'note',
  entity: `n${i}`,
  actor: 'user:alice',
  payload: { i },
});

/** Append `count` events to `log`, all queued at once (so they go in a few large batches). */
const appendMany = (ledger: Ledger, log: string, count: number, from = 0): Promise<StoredEvent[]> =>
  Promise.all(Array.from({ length: count }, (_, i) => ledger.append(note(log, from + i))));

describe('lostRace', () => {
  // Two processes' statements on one log: one fails on a row the other wrote (class 23), or
  // each waits on the other's rows and Postgres breaks the deadlock (40P01, seen in CI).
  it('takes a refused row, a deadlock and a serialization failure for a lost race', () => {
    expect(['23505', '23503', '40P01', '40001'].map(lostRace)).toEqual([true, true, true, true]);
  });
  it('takes an outage or a bug for what it is', () => {
    expect(['08006', '57P01', '42P01', undefined].map(lostRace)).toEqual([false, false, false, false]);
  });
});

describe.each(testBackends())('plain appends to a log past its young phase, on $name', ({ open }) => {
  let database: Database;
  let logs = 0;
  const newLog = () => `one-statement-${++logs}`;
  const ledgers: Ledger[] = [];
  const ledgerOn = (db: Database, options: LedgerOptions = {}) => {
    const ledger = createLedger(db, options);
    ledgers.push(ledger);
    return ledger;
  };

  beforeAll(async () => {
    database = await open();
  });
  afterAll(async () => {
    for (const ledger of ledgers) await ledger.close();
    await database?.close();
  });

  describe('when this process committed the head', () => {
    it('commits a batch as one statement, with its Merkle nodes, and the log verifies', async () => {
      const log = newLog();
      const { database: counted, statements } = counting(database);
      const ledger = ledgerOn(counted);
      await appendMany(ledger, log, YOUNG_LOG_EVENTS);

      const before = statements();
      const batch = await appendMany(ledger, log, 10, YOUNG_LOG_EVENTS);
      expect(statements() - before).toBe(1);
      expect(batch.map((e) => e.seq)).toEqual(Array.from({ length: 10 }, (_, i) => YOUNG_LOG_EVENTS + 1 + i));

      const report = await ledger.verifyChain({ log });
      expect(report).toMatchObject({ ok: true, checked: YOUNG_LOG_EVENTS + 10, failures: [] });
      // The nodes the one-statement batch completed were written and match the events.
      expect(report.merkle.nodes).toBeGreaterThanOrEqual(YOUNG_LOG_EVENTS + 10 - 12);
    });

    it('calls a notifying hook after the batch, and a hook that needs the transaction keeps every batch in one', async () => {
      const noted: number[] = [];
      const notified = ledgerOn(database, {
        afterAppend: [
          merkleAppendHook,
          notifyingHook((_log, events) => noted.push(...events.map((e) => e.seq))),
        ],
      });
      const log = newLog();
      await appendMany(notified, log, YOUNG_LOG_EVENTS + 5);
      expect(noted).toHaveLength(YOUNG_LOG_EVENTS + 5);

      const inTransaction: number[] = [];
      const { database: counted, statements } = counting(database);
      const hooked = ledgerOn(counted, {
        afterAppend: [
          async (tx, _log, events) => {
            inTransaction.push(...events.map((e) => e.seq));
            expect(tx).not.toBe(counted.db);
          },
        ],
      });
      const other = newLog();
      await appendMany(hooked, other, YOUNG_LOG_EVENTS);
      const before = statements();
      await appendMany(hooked, other, 10, YOUNG_LOG_EVENTS);
      expect(statements() - before).toBeGreaterThan(1);
      expect(inTransaction).toHaveLength(YOUNG_LOG_EVENTS + 10);
    });
  });

  describe('when another process appended since', () => {
    it('writes nothing on the stale head, runs the batch under the lock, and the chain stays linear', async () => {
      const log = newLog();
      const first = ledgerOn(database);
      const second = ledgerOn(database);
      await appendMany(first, log, YOUNG_LOG_EVENTS);
      // `second` moves the head on behind `first`'s back.
      await appendMany(second, log, 3, YOUNG_LOG_EVENTS);

      const batch = await appendMany(first, log, 10, YOUNG_LOG_EVENTS + 3);
      expect(batch.map((e) => e.seq)).toEqual(Array.from({ length: 10 }, (_, i) => YOUNG_LOG_EVENTS + 4 + i));
      expect(batch[0]!.prev_hash).not.toBe('0'.repeat(64));
      expect(await first.verifyChain({ log })).toMatchObject({ ok: true, checked: YOUNG_LOG_EVENTS + 13 });
    });

    it('keeps one linear chain and tree while two ledgers append to one log at once', async () => {
      const log = newLog();
      const first = ledgerOn(database);
      const second = ledgerOn(database);
      await Promise.all([appendMany(first, log, YOUNG_LOG_EVENTS), appendMany(second, log, 20, 10_000)]);
      const rounds = [];
      for (let round = 0; round < 5; round++)
        rounds.push(
          appendMany(first, log, 40, 20_000 + round * 100),
          appendMany(second, log, 40, 30_000 + round * 100),
        );
      const appended = (await Promise.all(rounds)).flat();

      const seqs = appended.map((e) => e.seq).sort((a, b) => a - b);
      expect(new Set(seqs).size).toBe(seqs.length);
      const report = await first.verifyChain({ log });
      expect(report).toMatchObject({ ok: true, checked: YOUNG_LOG_EVENTS + 20 + 400, failures: [] });
    });
  });
});
