import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Database } from '../database';
import { isLedgerError } from '../errors';
import { createLedger, type Ledger } from '../ledger';
import { createRecords, type RecordContext, type Records } from '../records/create-records';
import { testBackends } from '../testing';
import { identitiesCollide, identitySkeleton } from './identity';

// U+0456 CYRILLIC SMALL LETTER BYELORUSSIAN-UKRAINIAN I, drawn like a Latin i.
const CYRILLIC_I = '\u0456';

describe('identitiesCollide', () => {
  it('refuses a look-alike from another script (same UTS #39 skeleton)', () => {
    expect(identitySkeleton(`agent:b${CYRILLIC_I}lling-bot`)).toBe(identitySkeleton('agent:billing-bot'));
    expect(identitiesCollide(`agent:b${CYRILLIC_I}lling-bot`, 'agent:billing-bot')).toBe(true);
  });
  it('refuses ASCII look-alikes whose prototypes differ only in case (zero for o)', () => {
    expect(identitiesCollide('agent:b0t', 'agent:bot')).toBe(true);
    expect(identitiesCollide('agent:bi11ing', 'agent:billing')).toBe(true);
  });
  it('refuses another spelling of the same canonical identity', () => {
    expect(identitiesCollide('agent:BILLING-BOT', 'agent:billing-bot')).toBe(true);
  });
  it('lets the same spelling (several keys of one identity) and distinct identities pass', () => {
    expect(identitiesCollide('agent:billing-bot', 'agent:billing-bot')).toBe(false);
    expect(identitiesCollide('user:alice', 'user:bob')).toBe(false);
  });
});

describe.each(testBackends())('identity comparisons in the records on $name', ({ open }) => {
  let database: Database;
  let ledger: Ledger;
  let records: Records;
  let logs = 0;

  beforeAll(async () => {
    database = await open();
    ledger = createLedger(database);
    records = createRecords(ledger);
  });
  afterAll(async () => {
    await ledger?.close();
    await database?.close();
  });

  const as = (log: string, identity: string): RecordContext => ({
    log,
    caller: { identity, scopes: ['payments:write'], environments: ['prod'] },
  });
  const codeOf = async (promise: Promise<unknown>) => {
    try {
      await promise;
      return 'NO_ERROR';
    } catch (error) {
      if (isLedgerError(error)) return error.code;
      throw error;
    }
  };
  const setup = async (approvalRequired: boolean) => {
    const log = `identity-${++logs}`;
    await records.registerTool(as(log, 'user:ops'), {
      server_id: 'payments',
      tool_name: 'refund',
      side_effect: 'compensatable',
      required_scopes: ['payments:write'],
      allowed_environments: ['prod'],
      approval_required: approvalRequired,
    });
    return log;
  };
  const refund = (key: string) => ({
    idempotency_key: key,
    action: 'refund',
    server_id: 'payments',
    tool_name: 'refund',
    target: { kind: 'payment', id: 'pay_1', env: 'prod' },
    arguments: { amount: 5 },
    side_effect: 'compensatable' as const,
  });

  describe('when the requester answers their own request under another spelling', () => {
    it.each([
      ['agent:billing-bot', 'agent:BILLING-BOT'],
      ['user:Jos\u00e9', 'user:Jose\u0301'],
    ])('refuses %j answering as %j with SELF_APPROVAL', async (requester, approver) => {
      const log = await setup(true);
      const { approval } = await records.propose(as(log, requester), refund('k1'));
      expect(await codeOf(records.approve(as(log, approver), { request_id: approval!.id }))).toBe(
        'SELF_APPROVAL',
      );
      expect(await codeOf(records.deny(as(log, approver), { request_id: approval!.id }))).toBe(
        'SELF_APPROVAL',
      );
    });
  });

  describe('when the executing identity is the authorized one spelled otherwise', () => {
    it('counts it as the same identity, and another identity still as IDENTITY_MISMATCH', async () => {
      const log = await setup(false);
      const { proposal } = await records.propose(as(log, 'agent:billing-bot'), refund('k1'));
      expect(
        await codeOf(
          records.observe(as(log, 'agent:other'), { proposal_id: proposal.id, outcome: 'succeeded' }),
        ),
      ).toBe('IDENTITY_MISMATCH');
      await records.authorize(as(log, 'AGENT:BILLING-BOT'), { proposal_id: proposal.id });
      expect(
        await codeOf(
          records.observe(as(log, 'AGENT:BILLING-BOT'), { proposal_id: proposal.id, outcome: 'succeeded' }),
        ),
      ).toBe('NO_ERROR');
    });
  });

  describe('when an idempotency key is replayed under another spelling of the requester', () => {
    it('replays the proposal instead of refusing it as another requester', async () => {
      const log = await setup(false);
      const first = await records.propose(as(log, 'agent:billing-bot'), refund('k1'));
      const again = await records.propose(as(log, 'agent:Billing-Bot'), refund('k1'));
      expect(again.proposal.id).toBe(first.proposal.id);
    });
  });
});
