import { eventHashOf, GENESIS_PREV_HASH, payloadHashOf } from '@vouch/audit';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Database, sqlStateOf } from './database';
import { createLedger, type Ledger } from './ledger';
import { tamper, testBackends } from './testing';

const event = (log: string, n: number) => ({
  log,
  kind: 'note',
  entity: `entity-${n}`,
  actor: 'user:alice',
  payload: { n, text: 'ünïcødé \u0000 ok', nested: { b: [1, 2.5, -0], a: null } },
});

describe.each(testBackends())('ledger on $name', ({ open }) => {
  let database: Database;
  let ledger: Ledger;

  beforeAll(async () => {
    database = await open();
    ledger = createLedger(database);
  });
  afterAll(async () => {
    await ledger?.close();
    await database?.close();
  });

  const count = async (log: string) =>
    (
      await database.rows<{ n: number }>(
        sql`select count(*)::int as n from audit_events where log_id = ${log}`,
      )
    )[0]!.n;

  describe('when events are appended one after another', () => {
    it('chains them from the genesis hash with seq 1..N', async () => {
      const first = await ledger.append(event('seq-log', 1));
      const second = await ledger.append(event('seq-log', 2));
      expect(first.seq).toBe(1);
      expect(first.prev_hash).toBe(GENESIS_PREV_HASH);
      expect(second.seq).toBe(2);
      expect(second.prev_hash).toBe(first.hash);
      expect(second.payload_hash).toBe(payloadHashOf(second.payload));
      expect(second.hash).toBe(eventHashOf(second));
    });

    it('stores exactly the bytes that were hashed, time string included', async () => {
      const appended = await ledger.append(event('bytes-log', 1));
      const [stored] = await ledger.events('bytes-log');
      expect(stored).toEqual(appended);
      expect(stored!.payload).toBe('{"n":1,"nested":{"a":null,"b":[1,2.5,0]},"text":"ünïcødé \\u0000 ok"}');
      expect(stored!.at).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    });
  });

  describe('when 8 appenders write concurrently', () => {
    it('keeps seq gapless and the chain verifiable', async () => {
      const writers = Array.from({ length: 8 }, (_, w) =>
        (async () => {
          for (let i = 0; i < 25; i++) await ledger.append(event('concurrent', w * 100 + i));
        })(),
      );
      await Promise.all(writers);
      const events = await ledger.events('concurrent', { limit: 1000 });
      expect(events.map((e) => e.seq)).toEqual(Array.from({ length: 200 }, (_, i) => i + 1));
      const report = await ledger.verifyChain({ log: 'concurrent' });
      expect(report).toMatchObject({ ok: true, checked: 200, failures: [], head: { seq: 200 } });
    });

    it('sequences independent logs independently', async () => {
      await Promise.all([ledger.append(event('log-a', 1)), ledger.append(event('log-b', 1))]);
      expect((await ledger.head('log-a'))?.seq).toBe(1);
      expect((await ledger.head('log-b'))?.seq).toBe(1);
    });
  });

  describe('when the input cannot be stored', () => {
    it.each([
      ['undefined inside the payload', { a: undefined }, 'PAYLOAD_NOT_JSON'],
      ['NaN', { a: Number.NaN }, 'PAYLOAD_NOT_JSON'],
      ['a BigInt', { a: 1n }, 'PAYLOAD_NOT_JSON'],
      ['a Date', { a: new Date(0) }, 'PAYLOAD_NOT_JSON'],
      ['a lone surrogate', { a: '\ud800' }, 'PAYLOAD_NOT_JSON'],
      ['an oversized payload', { a: 'x'.repeat(1024 * 1024) }, 'PAYLOAD_TOO_LARGE'],
    ])('refuses %s with a typed error and writes nothing', async (_name, payload, code) => {
      const before = await count('bad-input');
      await expect(ledger.append({ ...event('bad-input', 1), payload })).rejects.toMatchObject({ code });
      expect(await count('bad-input')).toBe(before);
    });

    it.each([
      ['log', { log: '' }],
      ['log', { log: 'has space' }],
      ['kind', { kind: 'Upper' }],
      ['entity', { entity: '' }],
      ['actor', { actor: 'nul\u0000' }],
    ])('refuses a bad %s with INVALID_EVENT', async (_field, patch) => {
      await expect(ledger.append({ ...event('bad-input', 1), ...patch })).rejects.toMatchObject({
        code: 'INVALID_EVENT',
      });
      expect(await count('bad-input')).toBe(0);
    });
  });

  describe('when work is given a log id the ledger cannot store', () => {
    it('refuses with INVALID_EVENT and never runs the work', async () => {
      let ran = false;
      await expect(
        ledger.transact('has space', async () => {
          ran = true;
        }),
      ).rejects.toMatchObject({ code: 'INVALID_EVENT' });
      expect(ran).toBe(false);
    });
  });

  describe('when a log leaves its young phase on a database without statistics', () => {
    it('analyzes the tables once, so the plans built next have row counts to go by', async () => {
      const tuples = async () =>
        (
          await database.rows<{ n: number }>(
            sql`select reltuples::float8 as n from pg_class where oid = 'audit_events'::regclass`,
          )
        )[0]!.n;
      const young = createLedger(database, { merkle: false, maxBatch: 512 });
      try {
        const before = await tuples();
        expect(before).toBeLessThan(1000);
        for (let i = 0; i < 3; i++) {
          await Promise.all(Array.from({ length: 400 }, (_, k) => young.append(event('grown', i * 400 + k))));
        }
      } finally {
        // The ANALYZE runs beside the appends, after the batch that crossed the line: close waits for it.
        await young.close();
      }
      expect(await tuples()).toBeGreaterThanOrEqual(1000);
    });
  });

  describe('when work runs in a transaction', () => {
    it('commits the record write and its event together', async () => {
      await database.rows(sql`create table if not exists tx_probe (id text primary key)`);
      const appended = await ledger.transact('tx-log', async (tx) => {
        await database.rows(sql`insert into tx_probe values ('ok')`, tx.db);
        return tx.append({ kind: 'probe', entity: 'ok', actor: 'user:alice', payload: { id: 'ok' } });
      });
      expect(appended.seq).toBe(1);
      expect(await database.rows(sql`select id from tx_probe where id = 'ok'`)).toHaveLength(1);
    });

    it('leaves neither the record nor its event when the work fails before commit', async () => {
      const failure = new Error('injected after the record insert');
      const neighbour = ledger.append(event('tx-log', 2));
      await expect(
        ledger.transact('tx-log', async (tx) => {
          await database.rows(sql`insert into tx_probe values ('lost')`, tx.db);
          await tx.append({ kind: 'probe', entity: 'lost', actor: 'user:alice', payload: { id: 'lost' } });
          throw failure;
        }),
      ).rejects.toBe(failure);
      // The batch's other append still commits, and takes the seq the failed work gave back.
      expect((await neighbour).seq).toBe(2);
      expect(await database.rows(sql`select id from tx_probe where id = 'lost'`)).toHaveLength(0);
      expect((await ledger.events('tx-log')).map((e) => e.entity)).toEqual(['ok', 'entity-2']);
      expect((await ledger.verifyChain({ log: 'tx-log' })).ok).toBe(true);
    });
  });

  describe('when someone tries to change history through SQL', () => {
    it.each([
      ['UPDATE', sql`update audit_events set actor = 'mallory' where log_id = 'seq-log'`],
      ['DELETE', sql`delete from audit_events where log_id = 'seq-log'`],
      // CASCADE reaches the record tables, whose own triggers refuse too: even it cannot empty the chain.
      ['TRUNCATE', sql`truncate audit_events cascade`],
    ])('refuses %s in the database itself', async (_op, statement) => {
      expect(sqlStateOf(await database.rows(statement).catch((e) => e))).toBe('VC001');
      expect(await count('seq-log')).toBe(2);
    });

    it('refuses a row that does not link to the hash before it', async () => {
      const head = (await ledger.head('seq-log'))!;
      const forged = {
        log: 'seq-log',
        seq: head.seq + 1,
        kind: 'note',
        entity: 'x',
        actor: 'm',
        at: '2026-01-01T00:00:00.000Z',
        payload: '{}',
        payload_hash: payloadHashOf('{}'),
        prev_hash: 'f'.repeat(64),
      };
      const hash = eventHashOf(forged);
      const error = await database
        .rows(
          sql`insert into audit_events (log_id, seq, kind, entity_id, actor, recorded_at, payload, payload_hash, prev_hash, hash)
              values (${forged.log}, ${forged.seq}, 'note', 'x', 'm', ${forged.at}, '{}', ${forged.payload_hash}, ${forged.prev_hash}, ${hash})`,
        )
        .catch((e) => e);
      expect(sqlStateOf(error)).toBe('23503');
    });

    it('refuses a gap', async () => {
      const head = (await ledger.head('seq-log'))!;
      const error = await database
        .rows(
          sql`insert into audit_events (log_id, seq, kind, entity_id, actor, recorded_at, payload, payload_hash, prev_hash, hash)
              values ('seq-log', ${head.seq + 2}, 'note', 'x', 'm', 'now', '{}', ${payloadHashOf('{}')}, ${head.hash}, ${'a'.repeat(64)})`,
        )
        .catch((e) => e);
      expect(sqlStateOf(error)).toBe('23503');
    });
  });

  describe('when the stored chain conflicts with itself', () => {
    it('refuses appends with CHAIN_CONFLICT and raises the integrity alarm', async () => {
      const local = createLedger(database);
      for (let n = 1; n <= 4; n++) await local.append(event('conflict-log', n));
      // As a table owner: the head event goes, the Merkle nodes it completed, (1, 1) and
      // (2, 0), stay; the next append completes them again.
      await tamper(database, sql`delete from audit_events where log_id = 'conflict-log' and seq = 4`);
      expect(local.integrityAlarm.raised).toBe(false);
      await expect(local.append(event('conflict-log', 5))).rejects.toMatchObject({ code: 'CHAIN_CONFLICT' });
      await local.close();
      expect(local.integrityAlarm.alarms()).toEqual([
        expect.objectContaining({ code: 'CHAIN_CONFLICT', log: 'conflict-log' }),
      ]);
    });

    it('raises nothing when a record table refuses a row', async () => {
      const local = createLedger(database);
      await database.rows(sql`create table if not exists conflict_probe (id text primary key)`);
      await database.rows(sql`insert into conflict_probe values ('taken')`);
      const refused = local.transact('probe-log', async (tx) => {
        await tx.append({ kind: 'note', entity: 'p', actor: 'user:alice', payload: {} });
        await tx.db.execute(sql`insert into conflict_probe values ('taken')`);
      });
      await expect(refused).rejects.toMatchObject({ code: 'CHAIN_CONFLICT' });
      await local.close();
      expect(local.integrityAlarm.raised).toBe(false);
    });
  });

  describe('when the ledger is closed', () => {
    it('finishes pending appends and refuses new ones', async () => {
      const local = createLedger(database);
      const pending = local.append(event('closing', 1));
      const closing = local.close();
      await expect(pending).resolves.toMatchObject({ seq: 1 });
      await closing;
      await expect(local.append(event('closing', 2))).rejects.toMatchObject({ code: 'LEDGER_CLOSED' });
    });
  });
});
