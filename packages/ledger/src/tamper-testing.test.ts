import { verifyEvents } from '@vouch/audit';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Database } from './database';
import { readEvents } from './event-store';
import { createLedger, type Ledger } from './ledger';
import { refund, refundTool } from './records/__fixtures__/refund';
import { createRecords } from './records/create-records';
import { verifyBothWays } from './tamper-testing';
import { ledgerRowCounts, rewriteLog, tamper, testBackends } from './testing';

// The tamper helpers are what every tamper test stands on: a helper that quietly did less
// than it says (left a hash stale, ran one statement of two) would make those tests prove less.
describe.each(testBackends())('the tamper helpers on $name', ({ open }) => {
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

  async function freshLog(n: number): Promise<string> {
    const log = `helpers-${++logNo}`;
    for (let i = 1; i <= n; i++) {
      await ledger.append({ log, kind: 'note', entity: `e${i}`, actor: 'user:alice', payload: { i } });
    }
    return log;
  }
  const eventsOf = (log: string) => readEvents(database, log, 0, 1_000);

  describe('rewriteLog', () => {
    describe('when two events are swapped', () => {
      it('returns the events from the first one that changed, renumbered and rehashed into a valid chain', async () => {
        const log = await freshLog(6);
        const before = await eventsOf(log);
        const rewritten = await rewriteLog(database, log, (events) =>
          events.map((e, i) => (i === 2 ? events[4]! : i === 4 ? events[2]! : e)),
        );
        expect(rewritten.map((e) => [e.seq, e.entity])).toEqual([
          [3, 'e5'],
          [4, 'e4'],
          [5, 'e3'],
          [6, 'e6'],
        ]);
        const after = await eventsOf(log);
        expect(after).toEqual([...before.slice(0, 2), ...rewritten]);
        expect(after[3]!.hash).not.toBe(before[3]!.hash);
        // Every hash and link holds; only the swapped times can go back (ISO times sort as text).
        const regressions = after
          .slice(1)
          .filter((e, i) => e.at < after[i]!.at)
          .map((e) => [e.seq, 'TIME_REGRESSION']);
        expect((await verifyEvents(after, { log })).failures.map((f) => [f.seq, f.code])).toEqual(
          regressions,
        );
        // Besides them, only the tree stored beside it remembers the old history.
        const report = await verifyBothWays(database, { log });
        expect(new Set(report.failures.map((f) => f.code))).toEqual(
          new Set([...(regressions.length > 0 ? ['TIME_REGRESSION'] : []), 'MERKLE_MISMATCH']),
        );
      });
    });

    describe('when the log holds events that commit to their fields', () => {
      it('rewrites from the edited event on, leaving the committed events before it as stored', async () => {
        const log = `helpers-${++logNo}`;
        const records = createRecords(ledger);
        await records.registerTool({ log, caller: { identity: 'user:ops' } }, refundTool());
        const agent = {
          log,
          caller: { identity: 'agent:billing', scopes: ['payments:write'], environments: ['prod'] },
        };
        await records.propose(agent, refund('k1'));
        await ledger.append({ log, kind: 'note', entity: 'last', actor: 'user:alice', payload: {} });
        const before = await eventsOf(log);
        expect(before.some((e) => e.commitment)).toBe(true);
        const last = before.at(-1)!;
        const rewritten = await rewriteLog(database, log, (events) =>
          events.map((e) => (e.seq === last.seq ? { ...e, payload: '{"rewritten":true}' } : e)),
        );
        expect(rewritten.map((e) => e.seq)).toEqual([last.seq]);
        expect((await eventsOf(log)).slice(0, -1)).toEqual(before.slice(0, -1));
      });
    });

    describe('when an event is deleted', () => {
      it('closes the gap: the later events move down one seq', async () => {
        const log = await freshLog(4);
        await rewriteLog(database, log, (events) => events.filter((e) => e.seq !== 2));
        const after = await eventsOf(log);
        expect(after.map((e) => [e.seq, e.entity])).toEqual([
          [1, 'e1'],
          [2, 'e3'],
          [3, 'e4'],
        ]);
        expect((await verifyEvents(after, { log })).ok).toBe(true);
      });
    });
  });

  describe('tamper', () => {
    describe('when given several statements', () => {
      it('runs them all, in order, in one transaction', async () => {
        const log = await freshLog(3);
        await tamper(
          database,
          sql`update audit_events set actor = 'user:mallory' where log_id = ${log} and seq = 1`,
          sql`update audit_events set actor = actor || '!' where log_id = ${log} and seq = 1`,
          sql`delete from audit_events where log_id = ${log} and seq = 3`,
        );
        expect((await eventsOf(log)).map((e) => e.actor)).toEqual(['user:mallory!', 'user:alice']);
      });

      it('keeps none of them when one fails', async () => {
        const log = await freshLog(2);
        await expect(
          tamper(
            database,
            sql`delete from audit_events where log_id = ${log} and seq = 2`,
            sql`select * from no_such_table`,
          ),
        ).rejects.toThrow();
        expect(await eventsOf(log)).toHaveLength(2);
      });
    });
  });

  describe('ledgerRowCounts', () => {
    it('counts the events, Merkle nodes and record rows of one log only', async () => {
      const log = await freshLog(4);
      await freshLog(2);
      const counts = await ledgerRowCounts(database, log);
      // 4 leaves, 2 nodes over pairs, 1 root: 7 complete subtrees.
      expect(counts).toMatchObject({
        audit_events: 4,
        merkle_nodes: 3,
        proposals: 0,
        execution_claims: 0,
        verifications: 0,
      });
      expect(Object.keys(counts)).toHaveLength(12);
    });
  });
});
