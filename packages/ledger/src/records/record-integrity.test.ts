import { canonicalJson, payloadHashOf } from '@vouch/audit';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Database } from '../database';
import { isLedgerError, type LedgerError } from '../errors';
import { createIntegrityAlarm, type IntegrityAlarmReport } from '../integrity-alarm';
import { createLedger, type Ledger } from '../ledger';
import { ledgerRowCounts, tamper, testBackends } from '../testing';
import { refund, refundTool } from './__fixtures__/refund';
import { createRecords, type RecordContext, type Records } from './create-records';
import type { ToolInput } from './inputs';
import { checkedRecord, type IntegrityViolation } from './record-integrity';

async function refusal(promise: Promise<unknown>): Promise<LedgerError> {
  try {
    await promise;
  } catch (error) {
    if (isLedgerError(error)) return error;
    throw error;
  }
  throw new Error('expected a LedgerError, the operation succeeded');
}

describe('checkedRecord', () => {
  // A one-column table: the record is the row's id and its JSON column, parsed.
  const table = {
    name: 'notes',
    kind: 'note',
    toRecord: (row: { id: string; eventSeq: number; body: string }) => ({
      id: row.id,
      body: JSON.parse(row.body) as unknown,
    }),
  };
  const row = { id: 'n1', eventSeq: 7, body: '{"b":1,"a":[2]}' };
  const event = {
    eventKind: 'note',
    eventEntity: 'n1',
    eventPayloadHash: payloadHashOf(canonicalJson({ id: 'n1', body: { a: [2], b: 1 } })),
  };
  const reasonOf = (input: Record<string, unknown>) => {
    try {
      checkedRecord(table, 'log-a', input as never);
    } catch (error) {
      if (isLedgerError(error) && error.code === 'RECORD_INTEGRITY_VIOLATION')
        return (error.details as unknown as IntegrityViolation).reason;
      throw error;
    }
    return 'NONE';
  };

  describe('when the row rebuilds the payload its event hashed', () => {
    it('returns the record, whatever the key order stored', () => {
      expect(checkedRecord(table, 'log-a', { ...row, ...event })).toEqual({
        id: 'n1',
        body: { a: [2], b: 1 },
      });
    });
  });

  describe('when the row differs from its event', () => {
    it.each([
      ['an edited value', { body: '{"b":2,"a":[2]}' }, 'RECORD_MISMATCH'],
      ['text that is not JSON', { body: 'not json' }, 'RECORD_MISMATCH'],
      ['no event', { eventKind: null, eventEntity: null, eventPayloadHash: null }, 'RECORD_WITHOUT_EVENT'],
      ['an event of another kind', { eventKind: 'decision' }, 'RECORD_WITHOUT_EVENT'],
      ['an event about another record', { eventEntity: 'n2' }, 'RECORD_WITHOUT_EVENT'],
    ])('refuses %s with %s', (_, change, reason) => {
      expect(reasonOf({ ...row, ...event, ...change })).toBe(reason);
    });
  });
});

describe.each(testBackends())('record reads checked against their events on $name', ({ open }) => {
  let database: Database;
  let ledger: Ledger;
  let records: Records;
  const reported: IntegrityAlarmReport[] = [];
  let logs = 0;

  beforeAll(async () => {
    database = await open();
    ledger = createLedger(database, {
      integrityAlarm: createIntegrityAlarm({
        onRaise: ({ raisedAt: _, ...report }) => reported.push(report),
      }),
    });
    records = createRecords(ledger);
  });
  afterAll(async () => {
    await ledger?.close();
    await database?.close();
  });

  /** A fresh log with the refund tool registered, and the people in it. */
  const setup = async (tool: Partial<ToolInput> = {}) => {
    const log = `integrity-${++logs}`;
    const ops: RecordContext = { log, caller: { identity: 'user:ops' } };
    const agent: RecordContext = {
      log,
      caller: { identity: 'agent:billing', scopes: ['payments:write'], environments: ['prod'] },
    };
    const alice: RecordContext = { log, caller: { identity: 'user:alice' } };
    const { tool: registered } = await records.registerTool(ops, refundTool(tool));
    return { log, agent, alice, tool: registered };
  };

  const seqOf = async (log: string, entity: string) =>
    (await ledger.events(log, { limit: 10_000 })).find((e) => e.entity === entity)!.seq;

  /**
   * `operation` is refused with RECORD_INTEGRITY_VIOLATION naming the edited row, writes
   * nothing (no record, no event, no refusal evidence), and the integrity alarm hears of it.
   */
  const expectRefused = async (
    log: string,
    operation: () => Promise<unknown>,
    row: Omit<IntegrityViolation, 'log'>,
  ) => {
    const before = await ledgerRowCounts(database, log);
    const heard = reported.length;
    const error = await refusal(operation());
    const violation = { log, ...row };
    expect(error.code).toBe('RECORD_INTEGRITY_VIOLATION');
    expect(error.details).toEqual(violation);
    expect(await ledgerRowCounts(database, log)).toEqual(before);
    // Raised once and kept: a second refusal over the same row does not raise it again.
    const finding = {
      code: 'RECORD_MISMATCH',
      log,
      seq: row.seq,
      table: row.table,
      message: `${row.table} row ${row.id} disagrees with event ${row.seq} (${row.reason})`,
    };
    expect(reported.filter((r) => r.log === log && r.seq === row.seq && r.table === row.table)).toEqual([
      finding,
    ]);
    expect(reported.slice(heard).length).toBeLessThanOrEqual(1);
  };

  describe('when an approval resolution is edited from denied to approved', () => {
    it('refuses the execution it would allow, and writes nothing', async () => {
      const { log, agent, alice } = await setup({ side_effect: 'irreversible' });
      const { proposal, approval } = await records.propose(agent, refund('k1'));
      const denied = await records.deny(alice, { request_id: approval!.id });
      await tamper(
        database,
        sql`update approval_resolutions set resolution = 'approved', validity = 'once' where log_id = ${log} and id = ${denied.resolution!.id}`,
      );
      const row = {
        table: 'approval_resolutions',
        id: denied.resolution!.id,
        seq: await seqOf(log, denied.resolution!.id),
        reason: 'RECORD_MISMATCH' as const,
      };
      await expectRefused(log, () => records.authorize(agent, { proposal_id: proposal.id }), row);
      await expectRefused(
        log,
        () => records.observe(agent, { proposal_id: proposal.id, outcome: 'succeeded' }),
        row,
      );
    });
  });

  describe('when a decision is edited from deny to allow', () => {
    it('refuses the execution it would allow, and writes nothing', async () => {
      const { log, agent } = await setup();
      // Staging is not an environment the tool allows: the built-in policy denies.
      const { proposal, decision } = await records.propose(
        agent,
        refund('k1', { target: { kind: 'payment', id: 'pay_1', env: 'staging' } }),
      );
      expect(decision!.verdict).toBe('deny');
      await tamper(
        database,
        sql`update decisions set verdict = 'allow', authorized_identity = 'agent:billing' where log_id = ${log} and id = ${decision!.id}`,
      );
      await expectRefused(
        log,
        () => records.observe(agent, { proposal_id: proposal.id, outcome: 'succeeded' }),
        {
          table: 'decisions',
          id: decision!.id,
          seq: await seqOf(log, decision!.id),
          reason: 'RECORD_MISMATCH',
        },
      );
    });
  });

  describe("when a tool registry entry's side effect is edited", () => {
    it('refuses the proposal its policy would read it for, and writes nothing', async () => {
      const { log, agent, tool } = await setup({ side_effect: 'irreversible' });
      await tamper(
        database,
        sql`update tools set side_effect = 'read_only' where log_id = ${log} and id = ${tool.id}`,
      );
      await expectRefused(log, () => records.propose(agent, refund('k1', { side_effect: 'read_only' })), {
        table: 'tools',
        id: tool.id,
        seq: await seqOf(log, tool.id),
        reason: 'RECORD_MISMATCH',
      });
    });
  });

  describe('when an approval use is moved to another proposal', () => {
    it('refuses the second execution of a single-use approval, and writes nothing', async () => {
      const { log, agent, alice } = await setup({ side_effect: 'irreversible' });
      // The same payload proposed twice waits on one request; approved once, it runs once.
      const first = await records.propose(agent, refund('k1'));
      const second = await records.propose(agent, refund('k2'));
      expect(second.approval!.id).toBe(first.approval!.id);
      await records.approve(alice, { request_id: first.approval!.id, validity: 'once' });
      const { approval_use: use } = await records.authorize(agent, { proposal_id: first.proposal.id });
      // The use now claims the second proposal: the approval looks like it was given for it.
      await tamper(
        database,
        sql`update approval_uses set proposal_id = ${second.proposal.id} where log_id = ${log} and id = ${use!.id}`,
      );
      await expectRefused(
        log,
        () => records.observe(agent, { proposal_id: second.proposal.id, outcome: 'succeeded' }),
        { table: 'approval_uses', id: use!.id, seq: await seqOf(log, use!.id), reason: 'RECORD_MISMATCH' },
      );
    });
  });

  describe('when a row no event accounts for is inserted', () => {
    it('refuses with RECORD_WITHOUT_EVENT, and writes nothing', async () => {
      const { log, agent } = await setup({ side_effect: 'irreversible' });
      const { proposal, approval } = await records.propose(agent, refund('k1'));
      const head = (await ledger.head(log))!.seq;
      // A forged approval pointing at an event that does not exist, then one at another record's event.
      await tamper(
        database,
        sql`insert into approval_resolutions (log_id, id, event_seq, request_id, resolution, resolver, validity, resolved_at)
            values (${log}, 'res_forged', ${head + 10}, ${approval!.id}, 'approved', 'user:alice', 'once', '2026-01-01T00:00:00.000Z')`,
      );
      const row = {
        table: 'approval_resolutions',
        id: 'res_forged',
        reason: 'RECORD_WITHOUT_EVENT' as const,
      };
      await expectRefused(log, () => records.authorize(agent, { proposal_id: proposal.id }), {
        ...row,
        seq: head + 10,
      });
      await tamper(
        database,
        sql`update approval_resolutions set event_seq = ${head} where log_id = ${log} and id = 'res_forged'`,
      );
      await expectRefused(log, () => records.authorize(agent, { proposal_id: proposal.id }), {
        ...row,
        seq: head,
      });
    });
  });

  describe('when a JSON column is edited into text that is not JSON', () => {
    it('refuses with RECORD_MISMATCH', async () => {
      const { log, agent } = await setup();
      const { proposal, decision } = await records.propose(agent, refund('k1'));
      await tamper(
        database,
        sql`update decisions set reasons = 'not json' where log_id = ${log} and id = ${decision!.id}`,
      );
      await expectRefused(
        log,
        () => records.observe(agent, { proposal_id: proposal.id, outcome: 'succeeded' }),
        {
          table: 'decisions',
          id: decision!.id,
          seq: await seqOf(log, decision!.id),
          reason: 'RECORD_MISMATCH',
        },
      );
    });
  });

  describe('when an edited row is read beside untouched ones in one batch', () => {
    it('refuses only the operation that read it', async () => {
      const { log, agent } = await setup();
      const edited = await records.propose(agent, refund('k1'));
      const intact = await records.propose(
        agent,
        refund('k2', { arguments: { amount: 6, currency: 'EUR' } }),
      );
      await tamper(
        database,
        sql`update decisions set authorized_identity = 'agent:other' where log_id = ${log} and id = ${edited.decision!.id}`,
      );
      await records.authorize(agent, { proposal_id: intact.proposal.id });
      const [refused, observed, proposed] = await Promise.allSettled([
        records.observe(agent, { proposal_id: edited.proposal.id, outcome: 'succeeded' }),
        records.observe(agent, { proposal_id: intact.proposal.id, outcome: 'succeeded' }),
        records.propose(agent, refund('k3', { arguments: { amount: 7, currency: 'EUR' } })),
      ]);
      expect(refused.status === 'rejected' && isLedgerError(refused.reason) && refused.reason.code).toBe(
        'RECORD_INTEGRITY_VIOLATION',
      );
      expect(observed.status).toBe('fulfilled');
      expect(proposed.status).toBe('fulfilled');
    });
  });

  describe('when the alarm listener throws', () => {
    it('still answers the refusal, and the ledger keeps working', async () => {
      const throwing = createLedger(database, {
        integrityAlarm: createIntegrityAlarm({
          onRaise: () => {
            throw new Error('alarm down');
          },
        }),
      });
      try {
        const service = createRecords(throwing);
        const { log, agent } = await setup();
        const { proposal, decision } = await service.propose(agent, refund('k1'));
        await tamper(
          database,
          sql`update decisions set authorized_identity = 'agent:other' where log_id = ${log} and id = ${decision!.id}`,
        );
        const error = await refusal(
          service.observe(agent, { proposal_id: proposal.id, outcome: 'succeeded' }),
        );
        expect(error.code).toBe('RECORD_INTEGRITY_VIOLATION');
        expect(
          (await service.propose(agent, refund('k2', { arguments: { amount: 6 } }))).decision!.verdict,
        ).toBe('allow');
      } finally {
        await throwing.close();
      }
    });
  });

  describe('when a row behind a list or a search is edited or inserted', () => {
    it('refuses to reuse a denied request whose answer was edited to an open window', async () => {
      const { log, agent, alice } = await setup({ side_effect: 'irreversible' });
      const { approval } = await records.propose(agent, refund('k1'));
      const { resolution } = await records.deny(alice, { request_id: approval!.id });
      const window = approval!.max_window_seconds;
      const validUntil = new Date(Date.parse(resolution!.resolved_at) + window * 1000).toISOString();
      // Within every bound an honest answer obeys: only its event says it was a denial.
      await tamper(
        database,
        sql`update approval_resolutions set resolution = 'approved', validity = 'window',
            window_seconds = ${window}, valid_until = ${validUntil}
            where log_id = ${log} and id = ${resolution!.id}`,
      );
      await expectRefused(log, () => records.propose(agent, refund('k2')), {
        table: 'approval_resolutions',
        id: resolution!.id,
        seq: await seqOf(log, resolution!.id),
        reason: 'RECORD_MISMATCH',
      });
    });

    it('refuses to list a tool registration no event accounts for', async () => {
      const { log, tool } = await setup({ side_effect: 'irreversible' });
      const head = (await ledger.head(log))!.seq;
      // A newer version, read-only, inserted as the runtime role can.
      await tamper(
        database,
        sql`insert into tools (log_id, id, event_seq, server_id, tool_name, version, side_effect,
              required_scopes, allowed_environments, approval_required, requires_target_id, source,
              registered_by, registered_at)
            select log_id, 'tool_forged', ${head + 10}, server_id, tool_name, version + 1, 'read_only',
              required_scopes, allowed_environments, false, requires_target_id, source,
              registered_by, registered_at
            from tools where log_id = ${log} and id = ${tool.id}`,
      );
      await expectRefused(log, () => records.listTools(log), {
        table: 'tools',
        id: 'tool_forged',
        seq: head + 10,
        reason: 'RECORD_WITHOUT_EVENT',
      });
    });

    it('refuses to list an approval request no event accounts for', async () => {
      const { log, agent } = await setup({ side_effect: 'irreversible' });
      const { approval } = await records.propose(agent, refund('k1'));
      const head = (await ledger.head(log))!.seq;
      await tamper(
        database,
        sql`insert into approval_requests (log_id, id, event_seq, proposal_id, payload_hash, requester,
              server_id, tool_name, environment, expires_at, max_window_seconds, requested_at)
            select log_id, 'apr_forged', ${head + 10}, proposal_id, payload_hash, 'agent:other',
              server_id, tool_name, environment, expires_at, max_window_seconds, requested_at
            from approval_requests where log_id = ${log} and id = ${approval!.id}`,
      );
      const row = {
        table: 'approval_requests',
        id: 'apr_forged',
        seq: head + 10,
        reason: 'RECORD_WITHOUT_EVENT' as const,
      };
      await expectRefused(log, () => records.listApprovals(log), row);
      await expectRefused(log, () => records.listApprovals(log, { status: 'pending' }), row);
    });
  });

  describe('when nothing was edited', () => {
    it('acts as before and reports nothing', async () => {
      const { agent, alice } = await setup({ side_effect: 'irreversible' });
      const heard = reported.length;
      const { proposal, approval } = await records.propose(agent, refund('k1'));
      await records.approve(alice, { request_id: approval!.id });
      await records.authorize(agent, { proposal_id: proposal.id });
      const { observation } = await records.observe(agent, {
        proposal_id: proposal.id,
        outcome: 'succeeded',
      });
      expect(observation.approval_use_id).not.toBeNull();
      expect((await records.story(agent.log, proposal.id)).observation?.id).toBe(observation.id);
      // The lists and the search for a request to reuse read the same rows, checked.
      expect((await records.listTools(agent.log)).map((t) => t.side_effect)).toEqual(['irreversible']);
      expect((await records.listApprovals(agent.log)).approvals.map((a) => a.status)).toEqual(['used']);
      const again = await records.propose(agent, refund('k2'));
      expect(again.approval!.id).not.toBe(approval!.id);
      expect(reported.length).toBe(heard);
    });
  });
});
