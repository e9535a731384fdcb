import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Database } from '../database';
import { createLedger, type Ledger } from '../ledger';
import { testBackends } from '../testing';
import { createWebhookStore, type NewWebhookDelivery, type WebhookStore } from './webhook-store';

const T0 = '2030-01-01T00:00:00.000Z';
const T1 = '2030-01-01T00:01:00.000Z';
const T2 = '2030-01-01T00:02:00.000Z';
/** No bound on leases and retry times: these tests are about claiming, not about forged rows. */
const UNCAPPED = { longestLease: '9999-12-31T00:00:00.000Z', latestRetry: '9999-12-31T00:00:00.000Z' };

const delivery = (id: string, over: Partial<NewWebhookDelivery> = {}): NewWebhookDelivery => ({
  id,
  target: 'ops',
  event: 'approval.requested',
  log: 'default',
  seq: 1,
  subject: 'apr_1',
  body: '{}',
  dueAt: T0,
  ...over,
});

const note = (log: string, i: number) => ({
  log,
  kind: 'note',
  entity: `n${i}`,
  actor: 'user:a',
  payload: { i },
});

describe.each(testBackends())('the webhook store on $name', (backend) => {
  let database: Database;
  let ledger: Ledger;
  let store: WebhookStore;
  beforeAll(async () => {
    database = await backend.open();
    ledger = createLedger(database);
    store = createWebhookStore(database);
  });
  afterAll(async () => {
    await ledger?.close();
    await database?.close();
  });

  describe('when it starts on a database with history, and a log appears later', () => {
    it('reads the old log from its head at start and the new log from its first event', async () => {
      await ledger.append(note('old', 1));
      await ledger.append(note('old', 2));
      await store.start(T0);
      await ledger.append(note('old', 3));
      await ledger.append(note('new', 1));
      // A second start (a restart) changes nothing.
      await store.start(T1);
      const batches = await store.readAfterCursors({ kinds: ['note'], limit: 10 });
      expect(batches.map((b) => b.map((e) => `${e.log}:${e.seq}`))).toEqual([['new:1'], ['old:3']]);
      expect(batches[0]![0]!.payload).toBe('{"i":1}');
      expect((await store.readAfterCursors({ kinds: [], limit: 10 }))[0]![0]!.payload).toBeNull();
      await store.advance({ log: 'old', throughSeq: 3, deliveries: [], now: T1 });
      await store.advance({ log: 'new', throughSeq: 1, deliveries: [], now: T1 });
      expect(await store.readAfterCursors({ kinds: ['note'], limit: 10 })).toEqual([]);
    });
  });

  describe('when two processes derive the same delivery', () => {
    it('is written once', async () => {
      await store.insert([delivery('whd_same')], T0);
      await createWebhookStore(database).insert([delivery('whd_same', { body: '{"other":1}' })], T0);
      const { deliveries } = await store.listDeliveries({ logs: null, limit: 50 });
      expect(deliveries.filter((d) => d.id === 'whd_same')).toHaveLength(1);
    });
  });

  describe('when two processes claim due deliveries at once', () => {
    it('gives each attempt to exactly one of them', async () => {
      const ids = ['whd_c1', 'whd_c2', 'whd_c3', 'whd_c4'];
      await store.insert(
        ids.map((id) => delivery(id)),
        T0,
      );
      const other = createWebhookStore(database);
      const [a, b] = await Promise.all([
        store.claimDue({ now: T0, leaseUntil: T1, ...UNCAPPED, limit: 50 }),
        other.claimDue({ now: T0, leaseUntil: T1, ...UNCAPPED, limit: 50 }),
      ]);
      const claimed = [...a, ...b].map((d) => d.id).filter((id) => ids.includes(id));
      expect(claimed.sort()).toEqual(ids);
      // Claimed and leased: nobody else gets them before the lease ends.
      expect(
        (await other.claimDue({ now: T0, leaseUntil: T1, ...UNCAPPED, limit: 50 })).map((d) => d.id),
      ).toEqual([]);
    });
  });

  describe('when a claim is never finished (its process died mid-send)', () => {
    it('is claimed again as the next attempt once the lease is over', async () => {
      await store.insert([delivery('whd_lease', { dueAt: T1 })], T0);
      const first = await store.claimDue({ now: T1, leaseUntil: T2, ...UNCAPPED, limit: 50 });
      expect(first.find((d) => d.id === 'whd_lease')?.attempt).toBe(1);
      expect(
        (await store.claimDue({ now: T1, leaseUntil: T2, ...UNCAPPED, limit: 50 })).map((d) => d.id),
      ).not.toContain('whd_lease');
      const again = await store.claimDue({
        now: T2,
        leaseUntil: '2030-01-01T00:03:00.000Z',
        ...UNCAPPED,
        limit: 50,
      });
      expect(again.find((d) => d.id === 'whd_lease')?.attempt).toBe(2);
    });
  });

  describe('when an attempt asks for a retry', () => {
    it('is due again at next_attempt_at, not before, and the log shows every attempt', async () => {
      await store.insert([delivery('whd_retry', { dueAt: '2031-01-01T00:00:00.000Z' })], T0);
      const now = '2031-01-01T00:00:00.000Z';
      const [claim] = (await store.claimDue({ now, leaseUntil: now, ...UNCAPPED, limit: 50 })).filter(
        (d) => d.id === 'whd_retry',
      );
      await store.finish('whd_retry', claim!.attempt, {
        outcome: 'retry',
        statusCode: 500,
        errorCode: 'HTTP_STATUS',
        durationMs: 3,
        finishedAt: now,
        nextAttemptAt: '2031-01-01T00:00:10.000Z',
      });
      // (Older tests' leases are over by now: look at this delivery only.)
      const early = await store.claimDue({
        now: '2031-01-01T00:00:09.000Z',
        leaseUntil: now,
        ...UNCAPPED,
        limit: 50,
      });
      expect(early.map((d) => d.id)).not.toContain('whd_retry');
      const second = (
        await store.claimDue({ now: '2031-01-01T00:00:10.000Z', leaseUntil: now, ...UNCAPPED, limit: 50 })
      ).find((d) => d.id === 'whd_retry');
      expect(second).toMatchObject({ id: 'whd_retry', attempt: 2 });
      await store.finish('whd_retry', 2, {
        outcome: 'delivered',
        statusCode: 204,
        errorCode: null,
        durationMs: 2,
        finishedAt: now,
        nextAttemptAt: null,
      });
      const { deliveries } = await store.listDeliveries({ logs: null, status: 'delivered', limit: 50 });
      expect(
        deliveries.map((d) => [d.id, d.attempts.map((a) => [a.outcome, a.status_code, a.error_code])]),
      ).toEqual([
        [
          'whd_retry',
          [
            ['retry', 500, 'HTTP_STATUS'],
            ['delivered', 204, null],
          ],
        ],
      ]);
    });
  });

  // The runtime role can INSERT into every webhook table: rows no dispatcher would write
  // must not silence a log or stick a delivery.
  describe("when a cursor beyond the log's head is inserted", () => {
    it('reads after the highest cursor not beyond the head, and reports the one beyond', async () => {
      await ledger.append(note('far', 1));
      await store.advance({ log: 'far', throughSeq: 1, deliveries: [], now: T1 });
      await database.rows(
        sql`insert into webhook_cursors (log_id, seq, read_at) values ('far', ${2 ** 53}, ${T1})`,
      );
      await ledger.append(note('far', 2));
      const batches = await store.readAfterCursors({ kinds: [], limit: 10 });
      expect(batches.flat().map((e) => `${e.log}:${e.seq}`)).toContain('far:2');
      expect(await store.cursorsBeyondHead()).toEqual([{ log: 'far', seq: 2 ** 53, head: 2 }]);
    });
  });

  describe('when the source event of a delivery is read', () => {
    it('gives the event with its payload for the kinds asked for, and null for none', async () => {
      const event = await ledger.append(note('src', 1));
      expect(await store.sourceEvent({ log: 'src', seq: event.seq, kinds: ['note'] })).toMatchObject({
        log: 'src',
        seq: event.seq,
        kind: 'note',
        entity: 'n1',
        payload: '{"i":1}',
      });
      expect((await store.sourceEvent({ log: 'src', seq: event.seq, kinds: [] }))?.payload).toBeNull();
      expect(await store.sourceEvent({ log: 'src', seq: event.seq + 1, kinds: ['note'] })).toBeNull();
    });
  });

  describe('when a claim or retry waits longer than any the dispatcher writes', () => {
    it('is taken over at once as the next attempt, and says so', async () => {
      const now = '2032-01-01T00:00:00.000Z';
      const bound = { longestLease: '2032-01-01T00:01:00.000Z', latestRetry: '2032-01-01T00:01:00.000Z' };
      const mine = (claimed: Awaited<ReturnType<WebhookStore['claimDue']>>) =>
        claimed.filter((d) => d.id.startsWith('whd_far_')).map((d) => [d.id, d.attempt, d.overlong]);
      await store.insert(
        ['whd_far_lease', 'whd_far_retry', 'whd_far_ok'].map((id) => delivery(id, { dueAt: now })),
        T0,
      );
      await database.rows(sql`insert into webhook_attempts (delivery_id, attempt, claimed_at, lease_until) values
        ('whd_far_lease', 1, ${now}, '9999-12-31T00:00:00.000Z'),
        ('whd_far_retry', 1, ${now}, ${now}),
        ('whd_far_ok', 1, ${now}, ${bound.longestLease})`);
      await database.rows(sql`insert into webhook_attempt_results
        (delivery_id, attempt, finished_at, outcome, status_code, error_code, duration_ms, next_attempt_at)
        values ('whd_far_retry', 1, ${now}, 'retry', 500, 'HTTP_STATUS', 1, '9999-12-31T00:00:00.000Z')`);
      expect(mine(await store.claimDue({ now, leaseUntil: now, ...bound, limit: 50 })).sort()).toEqual([
        ['whd_far_lease', 2, 'lease'],
        ['whd_far_retry', 2, 'retry'],
      ]);
    });
  });

  describe('when an attempt numbered at the integer limit is inserted', () => {
    it('leaves that delivery alone and still claims the others', async () => {
      const now = '2033-01-01T00:00:00.000Z';
      await store.insert(
        [delivery('whd_max_a', { dueAt: '2032-06-01T00:00:00.000Z' }), delivery('whd_max_b', { dueAt: now })],
        T0,
      );
      // Its next attempt would overflow the column: claiming it must not fail the whole pass.
      await database.rows(sql`insert into webhook_attempts (delivery_id, attempt, claimed_at, lease_until)
        values ('whd_max_a', 2147483647, ${T0}, ${T0})`);
      const claimed = await store.claimDue({ now, leaseUntil: now, ...UNCAPPED, limit: 50 });
      expect(claimed.map((d) => d.id).filter((id) => id.startsWith('whd_max_'))).toEqual(['whd_max_b']);
    });
  });

  describe('when the delivery log is paged', () => {
    it('gives every delivery once, oldest first, and filters by log', async () => {
      const seen: string[] = [];
      let after: string | undefined;
      do {
        const page = await store.listDeliveries({ logs: null, limit: 2, ...(after ? { after } : {}) });
        seen.push(...page.deliveries.map((d) => d.id));
        after = page.next ?? undefined;
      } while (after);
      expect(new Set(seen).size).toBe(seen.length);
      expect(seen.length).toBe((await store.listDeliveries({ logs: null, limit: 100 })).deliveries.length);
      expect((await store.listDeliveries({ logs: ['elsewhere'], limit: 100 })).deliveries).toEqual([]);
    });
  });
});
