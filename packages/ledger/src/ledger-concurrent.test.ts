import { and, eq, sql } from 'drizzle-orm';
import { bigint, pgTable, primaryKey, text } from 'drizzle-orm/pg-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Database } from './database';
import { isLedgerError } from './errors';
import { createLedger, type Ledger, type StagingTransaction } from './ledger';
import { testBackends } from './testing';

// A record table of the test's own: one row per (log, name), pointing at its event.
const probes = pgTable(
  'concurrent_probes',
  {
    logId: text('log_id').notNull(),
    name: text('name').notNull(),
    eventSeq: bigint('event_seq', { mode: 'number' }).notNull(),
    note: text('note'),
  },
  (t) => [primaryKey({ columns: [t.logId, t.name] })],
);

const stageProbe = (tx: StagingTransaction, name: string, note: string | null = null) =>
  tx.stage(
    { kind: 'probe', entity: name, actor: 'user:alice', payload: { name, note } },
    { table: probes, values: (link) => ({ ...link, name, note }) },
  );

const readProbe = async (tx: StagingTransaction, name: string) => {
  const [row] = await tx.db
    .select()
    .from(probes)
    .where(and(eq(probes.logId, tx.log), eq(probes.name, name)));
  return row ?? null;
};

describe.each(testBackends())('ledger.transactConcurrently on $name', ({ open }) => {
  let database: Database;
  let ledger: Ledger;
  let logs = 0;
  const newLog = () => `concurrent-${++logs}`;

  beforeAll(async () => {
    database = await open();
    await database.rows(
      sql`create table concurrent_probes (log_id text not null, name text not null, event_seq bigint not null,
          note text, primary key (log_id, name), foreign key (log_id, event_seq) references audit_events (log_id, seq))`,
    );
    ledger = createLedger(database);
  });
  afterAll(async () => {
    await ledger?.close();
    await database?.close();
  });

  const rowsOf = (log: string) =>
    database.db.select().from(probes).where(eq(probes.logId, log)).orderBy(probes.eventSeq);

  describe('when work with different keys arrives together', () => {
    it('runs side by side, then writes each row with the seq of its own event', async () => {
      const log = newLog();
      const trace: string[] = [];
      const work = (name: string) =>
        ledger.transactConcurrently(log, { writes: [name] }, async (tx) => {
          trace.push(`${name} start`);
          await readProbe(tx, name);
          trace.push(`${name} end`);
          stageProbe(tx, name);
          return name;
        });
      expect(await Promise.all([work('a'), work('b'), work('c')])).toEqual(['a', 'b', 'c']);
      // Run one after another, each would end before the next starts.
      expect(trace.slice(0, 3)).toEqual(['a start', 'b start', 'c start']);
      const events = await ledger.events(log);
      expect(events.map((e) => [e.seq, e.entity])).toEqual([
        [1, 'a'],
        [2, 'b'],
        [3, 'c'],
      ]);
      expect((await rowsOf(log)).map((r) => [r.name, r.eventSeq])).toEqual([
        ['a', 1],
        ['b', 2],
        ['c', 3],
      ]);
      expect((await ledger.verifyChain({ log })).ok).toBe(true);
    });
  });

  describe('when two pieces of work write the same key', () => {
    it('runs them one after another, and the second reads what the first wrote', async () => {
      const log = newLog();
      const first = ledger.transactConcurrently(log, { writes: ['x'] }, async (tx) => {
        stageProbe(tx, 'x', 'first');
        return readProbe(tx, 'x');
      });
      const second = ledger.transactConcurrently(log, { writes: ['x'] }, async (tx) => {
        const seen = await readProbe(tx, 'x');
        if (!seen) stageProbe(tx, 'x', 'second');
        return seen;
      });
      // The first cannot read its own staged row; the second sees it written.
      expect(await first).toBeNull();
      expect(await second).toMatchObject({ name: 'x', note: 'first', eventSeq: 1 });
      expect(await rowsOf(log)).toHaveLength(1);
    });
  });

  describe('when a writer and readers of a key arrive together', () => {
    it('lets the readers share a wave and keeps the writer out of it', async () => {
      const log = newLog();
      const trace: string[] = [];
      const reader = (name: string) =>
        ledger.transactConcurrently(log, { reads: ['registry'], writes: [name] }, async (tx) => {
          trace.push(`${name} start`);
          await readProbe(tx, 'registry-entry');
          trace.push(`${name} end`);
          stageProbe(tx, name);
        });
      const writer = () =>
        ledger.transactConcurrently(log, { writes: ['registry'] }, async (tx) => {
          trace.push('writer start');
          stageProbe(tx, 'registry-entry');
          trace.push('writer end');
        });
      await Promise.all([reader('r1'), reader('r2'), writer()]);
      expect(trace).toEqual(['r1 start', 'r2 start', 'r1 end', 'r2 end', 'writer start', 'writer end']);
    });
  });

  describe('when one piece of work throws', () => {
    it('writes nothing it staged, and the rest of its wave commits gapless', async () => {
      const log = newLog();
      const failure = new Error('injected');
      const results = await Promise.allSettled([
        ledger.transactConcurrently(log, { writes: ['a'] }, async (tx) => stageProbe(tx, 'a')),
        ledger.transactConcurrently(log, { writes: ['b'] }, async (tx) => {
          stageProbe(tx, 'b');
          throw failure;
        }),
        ledger.transactConcurrently(log, { writes: ['c'] }, async (tx) => stageProbe(tx, 'c')),
      ]);
      expect(results.map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
      expect((results[1] as PromiseRejectedResult).reason).toBe(failure);
      expect((await ledger.events(log)).map((e) => [e.seq, e.entity])).toEqual([
        [1, 'a'],
        [2, 'c'],
      ]);
      expect((await rowsOf(log)).map((r) => r.name)).toEqual(['a', 'c']);
      expect((await ledger.verifyChain({ log })).ok).toBe(true);
    });
  });

  describe('when two pieces of work claim one key at run time', () => {
    it('runs the second again after the first, so it sees the first one’s writes', async () => {
      const log = newLog();
      let runs = 0;
      const claimant = (name: string) =>
        ledger.transactConcurrently(log, { writes: [name] }, async (tx) => {
          runs++;
          tx.claim('scope');
          const existing = await readProbe(tx, 'scope-owner');
          if (existing) return `${name} joined ${existing.note}`;
          stageProbe(tx, 'scope-owner', name);
          return `${name} opened`;
        });
      expect(await Promise.all([claimant('a'), claimant('b')])).toEqual(['a opened', 'b joined a']);
      expect(runs).toBe(3);
      expect((await ledger.events(log)).map((e) => e.entity)).toEqual(['scope-owner']);
    });
  });

  describe('when two pieces of work claim two keys in opposite orders', () => {
    it('lets one through and runs the other after it, instead of holding each other off', async () => {
      const log = newLog();
      const tick = () => new Promise((resolve) => setImmediate(resolve));
      const claimant = (name: string, keys: [string, string]) =>
        ledger.transactConcurrently(log, { writes: [name] }, async (tx) => {
          tx.claim(keys[0]);
          await tick();
          tx.claim(keys[1]);
          stageProbe(tx, name);
          return name;
        });
      const results = await Promise.all([claimant('ab', ['k-a', 'k-b']), claimant('ba', ['k-b', 'k-a'])]);
      expect(results.sort()).toEqual(['ab', 'ba']);
      expect((await rowsOf(log)).map((r) => r.name).sort()).toEqual(['ab', 'ba']);
    });
  });

  describe('when one piece of work has a read the server refuses', () => {
    it('fails that work alone; the rest of its batch commits', async () => {
      const log = newLog();
      const results = await Promise.allSettled([
        ledger.transactConcurrently(log, { writes: ['a'] }, async (tx) => stageProbe(tx, 'a')),
        ledger.transactConcurrently(log, { writes: ['bad'] }, async (tx) => {
          // Division by zero: the server refuses the statement and aborts the transaction.
          await tx.db.execute(sql`select 1 / (select count(*) from concurrent_probes where name = 'none')`);
          stageProbe(tx, 'bad');
        }),
        ledger.transactConcurrently(log, { writes: ['c'] }, async (tx) => stageProbe(tx, 'c')),
      ]);
      expect(results.map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
      const reason = (results[1] as PromiseRejectedResult).reason;
      expect(isLedgerError(reason) && reason.code).toBe('DATABASE_UNAVAILABLE');
      expect((await rowsOf(log)).map((r) => r.name)).toEqual(['a', 'c']);
      expect((await ledger.verifyChain({ log })).ok).toBe(true);
    });
  });

  describe('when the database refuses a wave the keys did not foresee', () => {
    it('retries one piece of work at a time: one commits, the other gets CHAIN_CONFLICT', async () => {
      const log = newLog();
      // Both write the same primary key without declaring it: only the database sees it.
      const results = await Promise.allSettled([
        ledger.transactConcurrently(log, {}, async (tx) => stageProbe(tx, 'dup', 'one')),
        ledger.transactConcurrently(log, {}, async (tx) => stageProbe(tx, 'dup', 'two')),
        ledger.append({ log, kind: 'note', entity: 'neighbour', actor: 'user:alice', payload: {} }),
      ]);
      expect(results.map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
      const reason = (results[1] as PromiseRejectedResult).reason;
      expect(isLedgerError(reason) && reason.code).toBe('CHAIN_CONFLICT');
      expect((await rowsOf(log)).map((r) => r.note)).toEqual(['one']);
      const events = await ledger.events(log);
      expect(events.map((e) => [e.seq, e.entity])).toEqual([
        [1, 'dup'],
        [2, 'neighbour'],
      ]);
      expect((await ledger.verifyChain({ log })).ok).toBe(true);
    });
  });

  describe('when work without keys arrives among keyed work', () => {
    it('runs alone in its own savepoint, between the waves around it', async () => {
      const log = newLog();
      const trace: string[] = [];
      const keyed = (name: string) =>
        ledger.transactConcurrently(log, { writes: [name] }, async (tx) => {
          trace.push(name);
          stageProbe(tx, name);
        });
      const alone = () =>
        ledger.transact(log, async (tx) => {
          trace.push('alone');
          const event = await tx.append({ kind: 'note', entity: 'alone', actor: 'user:alice', payload: {} });
          return event.seq;
        });
      const [, , seq] = await Promise.all([keyed('a'), keyed('b'), alone(), keyed('c')]);
      expect(trace).toEqual(['a', 'b', 'alone', 'c']);
      expect(seq).toBe(3);
      expect((await ledger.events(log)).map((e) => e.entity)).toEqual(['a', 'b', 'alone', 'c']);
    });
  });

  describe('when appends arrive while a batch waits for its transaction', () => {
    it('takes them into that batch once it holds the lock', async () => {
      const log = newLog();
      let tick = Date.parse('2026-01-01T00:00:00.000Z');
      // Every batch reads the clock once: a new time per batch tells the batches apart.
      const clocked = createLedger(database, {
        now: () => {
          tick += 1000;
          return new Date(tick);
        },
      });
      let release!: () => void;
      const gate = new Promise<void>((resolve) => {
        release = resolve;
      });
      let held!: () => void;
      const holding = new Promise<void>((resolve) => {
        held = resolve;
      });
      // Someone else holds the log: PGlite's one session, or the log's lock on Postgres.
      const holder =
        database.driver.kind === 'pglite'
          ? database.driver.client.transaction(async () => {
              held();
              await gate;
            })
          : database.driver.client.begin(async (sql) => {
              await sql`select pg_advisory_xact_lock(hashtextextended(${log}, 0))`;
              held();
              await gate;
            });
      try {
        await holding;
        const note = (n: number) =>
          clocked.append({ log, kind: 'note', entity: `n${n}`, actor: 'user:alice', payload: { n } });
        const first = note(1);
        // Later arrivals, each in an event-loop turn of its own, while the first batch waits.
        const later: Array<ReturnType<typeof note>> = [];
        for (let n = 2; n <= 4; n++) {
          await new Promise((resolve) => setTimeout(resolve, 5));
          later.push(note(n));
        }
        release();
        await holder;
        const events = await Promise.all([first, ...later]);
        expect(events.map((e) => e.seq)).toEqual([1, 2, 3, 4]);
        expect(new Set(events.map((e) => e.at)).size).toBe(1);
      } finally {
        release();
        await clocked.close();
      }
    });
  });

  describe('when staged input cannot be stored', () => {
    it('rejects that work with the input error and writes nothing of it', async () => {
      const log = newLog();
      const results = await Promise.allSettled([
        ledger.transactConcurrently(log, { writes: ['bad'] }, async (tx) => {
          tx.stage({ kind: 'probe', entity: 'bad', actor: 'user:alice', payload: { n: Number.NaN } });
        }),
        ledger.transactConcurrently(log, { writes: ['ok'] }, async (tx) => stageProbe(tx, 'ok')),
      ]);
      const reason = (results[0] as PromiseRejectedResult).reason;
      expect(isLedgerError(reason) && reason.code).toBe('PAYLOAD_NOT_JSON');
      expect((await ledger.events(log)).map((e) => e.entity)).toEqual(['ok']);
    });
  });
});
