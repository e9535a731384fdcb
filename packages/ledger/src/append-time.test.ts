import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { batchTime } from './append-time';
import type { Database } from './database';
import { createLedger } from './ledger';
import { verifyBothWays } from './tamper-testing';
import { testBackends } from './testing';

describe('batchTime', () => {
  it("is the clock's time, but never earlier than the head's", () => {
    const head = '2026-01-01T00:00:02.000Z';
    expect(batchTime(new Date('2026-01-01T00:00:03.000Z'), head)).toBe('2026-01-01T00:00:03.000Z');
    expect(batchTime(new Date('2026-01-01T00:00:01.000Z'), head)).toBe(head);
    expect(batchTime(new Date('2026-01-01T00:00:01.000Z'), null)).toBe('2026-01-01T00:00:01.000Z');
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
