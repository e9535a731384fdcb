import type { Database, Ledger, Records } from '@vouch/ledger';
import { describe, expect, it } from 'vitest';
import { createMemoryLogger } from './logger';
import { standbyReads } from './read-routing';

/** A database whose every query answers `answer()` (one row), counting the queries. */
function fakeDatabase(answer: () => Record<string, unknown>) {
  const database = {
    queries: 0,
    rows: async () => {
      database.queries++;
      return [answer()];
    },
  };
  return database;
}

const sideOver = (database: object) => ({
  ledger: { database: database as unknown as Database } as Ledger,
  records: {} as Records,
});

function router(
  standbyAnswers: () => Record<string, unknown>,
  options: { maxWaitMs?: number; clock?: { now: number } } = {},
) {
  const primary = fakeDatabase(() => ({ lsn: '0/3000060' }));
  const standby = fakeDatabase(standbyAnswers);
  const logger = createMemoryLogger();
  const reads = standbyReads({
    primary: sideOver(primary),
    standby: sideOver(standby),
    maxWaitMs: options.maxWaitMs ?? 200,
    retryStandbyAfterMs: 5_000,
    logger,
    ...(options.clock ? { now: () => options.clock!.now } : {}),
  });
  return { reads, primary, standby, logger };
}

describe('standbyReads', () => {
  describe('when the standby has replayed the primary’s position', () => {
    it('reads the standby, after one look at each', async () => {
      const { reads, primary, standby } = router(() => ({ caught_up: true }));
      expect((await reads.choose()).source).toBe('standby');
      expect([primary.queries, standby.queries]).toEqual([1, 1]);
    });
  });

  describe('when the standby catches up within the wait', () => {
    it('waits for it and reads the standby', async () => {
      let asked = 0;
      const { reads, standby } = router(() => ({ caught_up: ++asked >= 3 }));
      expect((await reads.choose()).source).toBe('standby');
      expect(standby.queries).toBe(3);
    });
  });

  describe('when the standby lags past the wait', () => {
    it('reads the primary', async () => {
      const { reads, standby } = router(() => ({ caught_up: false }), { maxWaitMs: 30 });
      expect((await reads.choose()).source).toBe('primary');
      expect(standby.queries).toBeGreaterThan(0);
    });
  });

  describe('when the server is not in recovery (promoted, or not a standby)', () => {
    it('reads the primary: its replay position says nothing', async () => {
      const { reads } = router(() => ({ caught_up: null }), { maxWaitMs: 20 });
      expect((await reads.choose()).source).toBe('primary');
    });
  });

  describe('when the standby does not answer', () => {
    it('reads the primary, skips the standby for a while, then tries it again', async () => {
      const clock = { now: 0 };
      let down = true;
      const { reads, standby, logger } = router(
        () => {
          if (down) throw Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' });
          return { caught_up: true };
        },
        { clock },
      );
      expect((await reads.choose()).source).toBe('primary');
      expect(logger.lines.map((l) => l.msg)).toEqual(['standby unavailable: reading the primary']);
      down = false;
      clock.now = 4_999;
      expect((await reads.choose()).source).toBe('primary');
      expect(standby.queries).toBe(1);
      clock.now = 5_000;
      expect((await reads.choose()).source).toBe('standby');
    });
  });

  describe('when the primary does not answer', () => {
    it('fails the read (503 DATABASE_UNAVAILABLE upstream), never guessing from the standby', async () => {
      const standby = fakeDatabase(() => ({ caught_up: true }));
      const reads = standbyReads({
        primary: sideOver({
          rows: async () => {
            throw Object.assign(new Error('connection closed'), { code: 'CONNECTION_CLOSED' });
          },
        }),
        standby: sideOver(standby),
        maxWaitMs: 100,
        logger: createMemoryLogger(),
      });
      await expect(reads.choose()).rejects.toMatchObject({ code: 'CONNECTION_CLOSED' });
      expect(standby.queries).toBe(0);
    });
  });
});
