import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { batchTime, HEAD_AHEAD_TOLERANCE_MS, KEY_TIME_AHEAD_MS } from './append-time';
import type { Database } from './database';
import { createIntegrityAlarm } from './integrity-alarm';
import { createLedger } from './ledger';
import { appendRecordedAt, verifyBothWays } from './tamper-testing';
import { testBackends } from './testing';

describe('batchTime', () => {
  it("is the clock's time, but never earlier than the head's", () => {
    const head = '2026-01-01T00:00:02.000Z';
    expect(batchTime(new Date('2026-01-01T00:00:03.000Z'), head)).toBe('2026-01-01T00:00:03.000Z');
    expect(batchTime(new Date('2026-01-01T00:00:01.000Z'), head)).toBe(head);
    expect(batchTime(new Date('2026-01-01T00:00:01.000Z'), null)).toBe('2026-01-01T00:00:01.000Z');
  });

  it("is never earlier than the latest of its writers' key times, up to the tolerance ahead of the clock", () => {
    const clock = new Date('2026-01-01T00:00:00.000Z');
    const head = '2026-01-01T00:00:02.000Z';
    expect(batchTime(clock, head, ['2026-01-01T00:00:05.000Z', '2026-01-01T00:00:03.000Z'])).toBe(
      '2026-01-01T00:00:05.000Z',
    );
    // A key time behind the head (or the clock) changes nothing.
    expect(batchTime(clock, head, ['2026-01-01T00:00:01.000Z'])).toBe(head);
    const edge = new Date(clock.getTime() + KEY_TIME_AHEAD_MS).toISOString();
    expect(batchTime(clock, null, [edge])).toBe(edge);
    // Further ahead than honest clocks differ: not followed (the key rules then report the record).
    const beyond = new Date(clock.getTime() + KEY_TIME_AHEAD_MS + 1).toISOString();
    expect(batchTime(clock, null, [beyond, 'not a time'])).toBe(clock.toISOString());
  });
});

describe.each(testBackends())('an append whose clock is behind the head, on $name', ({ open }) => {
  let database: Database;
  beforeAll(async () => {
    database = await open();
  });
  afterAll(async () => {
    await database?.close();
  });

  it("gets the head's time, and the log verifies", async () => {
    const log = `clamp-${Date.now()}`;
    const ahead = createLedger(database, { now: () => new Date('2026-06-01T12:00:00.000Z') });
    const behind = createLedger(database, { now: () => new Date('2026-06-01T11:00:00.000Z') });
    try {
      const first = await ahead.append({ log, kind: 'note', entity: 'a', actor: 'user:alice', payload: {} });
      const second = await behind.append({
        log,
        kind: 'note',
        entity: 'b',
        actor: 'user:alice',
        payload: {},
      });
      const staged = await behind.transact(log, (tx) =>
        tx.append({ kind: 'note', entity: 'c', actor: 'user:alice', payload: {} }),
      );
      expect([first.at, second.at, staged.at]).toEqual(Array(3).fill('2026-06-01T12:00:00.000Z'));
      expect((await verifyBothWays(database, { log })).failures).toEqual([]);
    } finally {
      await ahead.close();
      await behind.close();
    }
  });
});

describe.each(testBackends())(
  'an append whose head is recorded far ahead of its clock, on $name',
  ({ open }) => {
    let database: Database;
    beforeAll(async () => {
      database = await open();
    });
    afterAll(async () => {
      await database?.close();
    });

    const clock = new Date('2026-06-01T12:00:00.000Z');
    const later = (ms: number) => new Date(clock.getTime() + ms).toISOString();

    it('still appends, at the head time, and raises TIME_AHEAD once for the log', async () => {
      const log = `ahead-${Date.now()}`;
      const alarm = createIntegrityAlarm();
      const ledger = createLedger(database, { now: () => clock, integrityAlarm: alarm });
      try {
        await ledger.append({ log, kind: 'note', entity: 'a', actor: 'user:alice', payload: {} });
        // The runtime role inserts the next event, recorded in 2099.
        const forged = await appendRecordedAt(database, {
          log,
          kind: 'note',
          entity: 'b',
          actor: 'user:mallory',
          payload: {},
          at: '2099-01-01T00:00:00.000Z',
        });
        const next = await ledger.append({
          log,
          kind: 'note',
          entity: 'c',
          actor: 'user:alice',
          payload: {},
        });
        await ledger.append({ log, kind: 'note', entity: 'd', actor: 'user:alice', payload: {} });
        expect(next.at).toBe(forged.at);
        expect(alarm.alarms()).toEqual([
          expect.objectContaining({ code: 'TIME_AHEAD', log, seq: forged.seq, table: 'audit_events' }),
        ]);
      } finally {
        await ledger.close();
      }
    });

    it('raises nothing for a head within the tolerance honest clocks differ by', async () => {
      const log = `near-${Date.now()}`;
      const alarm = createIntegrityAlarm();
      const ahead = createLedger(database, { now: () => new Date(later(HEAD_AHEAD_TOLERANCE_MS)) });
      const ledger = createLedger(database, { now: () => clock, integrityAlarm: alarm });
      try {
        await ahead.append({ log, kind: 'note', entity: 'a', actor: 'user:alice', payload: {} });
        const next = await ledger.append({
          log,
          kind: 'note',
          entity: 'b',
          actor: 'user:alice',
          payload: {},
        });
        expect(next.at).toBe(later(HEAD_AHEAD_TOLERANCE_MS));
        expect(alarm.raised).toBe(false);
      } finally {
        await ahead.close();
        await ledger.close();
      }
    });
  },
);
