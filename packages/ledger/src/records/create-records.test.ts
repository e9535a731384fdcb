import { fieldHashOf } from '@vouch/audit';
import { CLAIM_SWEEPER_IDENTITY } from '@vouch/records';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Database } from '../database';
import { isLedgerError } from '../errors';
import { createLedger, type Ledger } from '../ledger';
import { listLogs } from '../log-exists';
import { tamper, testBackends } from '../testing';
import { refund as fixtureProposal, refundTool as fixtureTool } from './__fixtures__/refund';
import { checkRecordTables, type RecordFailure } from './check-record-tables';
import { createRecords, type RecordContext, type Records } from './create-records';
import type { CheckInput, ProposalInput, ToolInput } from './inputs';

const T0 = Date.parse('2026-01-01T00:00:00.000Z');

const RECORD_TABLE_NAMES = [
  'tools',
  'proposals',
  'decisions',
  'approval_requests',
  'approval_resolutions',
  'approval_uses',
  'execution_claims',
  'observations',
  'refused_executions',
  'verifications',
] as const;

// The shared refund fixture, also on staging, with a declared postcondition.
const refundTool = (over: Partial<ToolInput> = {}): ToolInput =>
  fixtureTool({ allowed_environments: ['prod', 'staging'], ...over });
const refund = (key: string, over: Partial<ProposalInput> = {}): ProposalInput =>
  fixtureProposal(key, {
    postconditions: [{ name: 'refund.recorded', params: { payment: 'pay_1' } }],
    ...over,
  });

async function codeOf(promise: Promise<unknown>): Promise<string> {
  try {
    await promise;
  } catch (error) {
    if (isLedgerError(error)) return error.code;
    throw error;
  }
  return 'NO_ERROR';
}

describe.each(testBackends())('records on $name', ({ open }) => {
  let database: Database;
  let ledger: Ledger;
  let records: Records;
  let clock = T0;
  let logs = 0;

  beforeAll(async () => {
    database = await open();
    ledger = createLedger(database);
    records = createRecords(ledger, {
      now: () => new Date(clock),
      maxInputBytes: 4096,
      approvalRequestTtlSeconds: 3600,
      maxApprovalWindowSeconds: 1800,
    });
  });
  afterAll(async () => {
    await ledger?.close();
    await database?.close();
  });

  /** A fresh log with the refund tool registered, and the contexts of the people in it. */
  const setup = async (tool: Partial<ToolInput> = {}) => {
    const log = `records-${++logs}`;
    const ops: RecordContext = { log, caller: { identity: 'user:ops' } };
    const agent: RecordContext = {
      log,
      caller: { identity: 'agent:billing', scopes: ['payments:write'], environments: ['prod', 'staging'] },
    };
    const alice: RecordContext = { log, caller: { identity: 'user:alice' } };
    await records.registerTool(ops, refundTool(tool));
    return { log, ops, agent, alice };
  };

  /** What a gateway does to execute: `authorize` (the claim) under what the observation names, then `observe`. */
  const execute = async (ctx: RecordContext, body: { proposal_id: string } & Record<string, unknown>) => {
    const { proposal_id, payload_hash, approval_request_id } = body;
    await records.authorize(ctx, {
      proposal_id,
      ...(payload_hash === undefined ? {} : { payload_hash }),
      ...(approval_request_id === undefined ? {} : { approval_request_id }),
    });
    return records.observe(ctx, body);
  };

  const count = async (table: string, log: string) =>
    (
      await database.rows<{ n: number }>(
        sql`select count(*)::int as n from ${sql.identifier(table)} where log_id = ${log}`,
      )
    )[0]!.n;
  const counts = async (log: string) => {
    const result: Record<string, number> = { audit_events: await count('audit_events', log) };
    for (const table of RECORD_TABLE_NAMES) result[table] = await count(table, log);
    return result;
  };
  const failuresOf = async (log: string) => {
    const failures: RecordFailure[] = [];
    for await (const failure of checkRecordTables(database, log, { pageSize: 2 })) failures.push(failure);
    return failures;
  };

  describe('registerTool', () => {
    describe('when a tool is registered again', () => {
      it('replays an identical registration and refuses a silent change with TOOL_EXISTS', async () => {
        const { ops, log } = await setup();
        const again = await records.registerTool(ops, refundTool());
        expect(again.replayed).toBe(true);
        expect(await codeOf(records.registerTool(ops, refundTool({ side_effect: 'read_only' })))).toBe(
          'TOOL_EXISTS',
        );
        const changed = await records.registerTool(ops, {
          ...refundTool({ side_effect: 'irreversible' }),
          replaces_version: 1,
        });
        expect(changed).toMatchObject({ replayed: false, tool: { version: 2, side_effect: 'irreversible' } });
        expect((await records.listTools(log)).map((t) => [t.tool_name, t.version])).toEqual([['refund', 2]]);
        expect(await count('tools', log)).toBe(2);
      });
    });

    describe('when a tool comes from discovery', () => {
      it('is irreversible unless declared otherwise, and never overrides an operator', async () => {
        const { ops, log } = await setup();
        const discovered = await records.registerTool(ops, {
          server_id: 'payments',
          tool_name: 'charge',
          source: 'discovery',
        });
        expect(discovered.tool).toMatchObject({
          side_effect: 'irreversible',
          source: 'discovery',
          version: 1,
        });
        const rediscovered = await records.registerTool(ops, {
          ...refundTool({ side_effect: 'read_only' }),
          source: 'discovery',
        });
        expect(rediscovered).toMatchObject({
          replayed: true,
          tool: { side_effect: 'compensatable', source: 'manual' },
        });
        const declared = await records.registerTool(ops, {
          server_id: 'payments',
          tool_name: 'charge',
          side_effect: 'idempotent',
        });
        expect(declared.tool).toMatchObject({ side_effect: 'idempotent', source: 'manual', version: 2 });
        expect((await records.listTools(log)).map((t) => t.tool_name)).toEqual(['charge', 'refund']);
      });
    });
  });

  describe('propose', () => {
    describe('when the built-in policy allows', () => {
      it('records the proposal and its decision, requester from the key', async () => {
        const { agent, log } = await setup();
        const result = await records.propose(agent, refund('k1'));
        expect(result.replayed).toBe(false);
        expect(result.proposal).toMatchObject({
          requester: 'agent:billing',
          requester_scopes: ['payments:write'],
        });
        expect(result.proposal.payload_hash).toMatch(/^[0-9a-f]{64}$/);
        expect(result.decision).toMatchObject({
          verdict: 'allow',
          source: 'built_in',
          authorized_identity: 'agent:billing',
        });
        const events = await ledger.events(log);
        expect(events.map((e) => [e.kind, e.entity])).toEqual([
          ['tool', expect.any(String)],
          ['proposal', result.proposal.id],
          ['decision', result.decision!.id],
        ]);
        // The arguments are committed key by key: the event holds each key's salted hash and
        // the content travels beside it, as `fields`.
        const event = events[1]!;
        expect(event.commitment).toBe('member-fields/1:arguments');
        expect(event.fields).toEqual({
          amount: { salt: expect.stringMatching(/^[0-9a-f]{64}$/), value: 5 },
          currency: { salt: expect.stringMatching(/^[0-9a-f]{64}$/), value: 'EUR' },
        });
        expect(JSON.parse(event.payload)).toEqual({
          ...result.proposal,
          arguments: {
            amount: fieldHashOf('amount', event.fields!.amount!),
            currency: fieldHashOf('currency', event.fields!.currency!),
          },
        });
        expect(await failuresOf(log)).toEqual([]);
      });
    });

    describe('when the tool is not registered', () => {
      it('denies with TOOL_NOT_REGISTERED', async () => {
        const { agent } = await setup();
        const { decision } = await records.propose(agent, refund('k1', { tool_name: 'wipe' }));
        expect(decision?.verdict).toBe('deny');
        expect(decision?.reasons.map((r) => r.code)).toContain('TOOL_NOT_REGISTERED');
      });
    });

    describe('when the same idempotency key comes back', () => {
      it('replays the stored proposal and decision for the same payload, writing nothing', async () => {
        const { agent, log } = await setup();
        const first = await records.propose(agent, refund('k1'));
        const before = await counts(log);
        const again = await records.propose(agent, {
          ...refund('k1'),
          arguments: { currency: 'EUR', amount: 5 },
        });
        expect(again).toEqual({ ...first, replayed: true });
        expect(await counts(log)).toEqual(before);
      });

      it('refuses another payload with IDEMPOTENCY_CONFLICT, writing nothing', async () => {
        const { agent, log } = await setup();
        await records.propose(agent, refund('k1'));
        const before = await counts(log);
        expect(await codeOf(records.propose(agent, refund('k1', { arguments: { amount: 500 } })))).toBe(
          'IDEMPOTENCY_CONFLICT',
        );
        expect(await counts(log)).toEqual(before);
      });

      it('gives another requester its own proposal under the same key (keys are per requester)', async () => {
        const { agent, alice } = await setup();
        const first = await records.propose(agent, refund('k1'));
        const other = await records.propose(alice, refund('k1', { arguments: { amount: 500 } }));
        expect(other.replayed).toBe(false);
        expect(other.proposal.id).not.toBe(first.proposal.id);
        expect(await records.propose(agent, refund('k1'))).toEqual({ ...first, replayed: true });
      });

      it('keeps one proposal when 20 arrive at once', async () => {
        const { agent, log } = await setup();
        const results = await Promise.all(
          Array.from({ length: 20 }, () => records.propose(agent, refund('same'))),
        );
        expect(new Set(results.map((r) => r.proposal.id)).size).toBe(1);
        expect(results.filter((r) => !r.replayed)).toHaveLength(1);
        expect(await count('proposals', log)).toBe(1);
        expect(await count('decisions', log)).toBe(1);
      });
    });

    describe('when the input is bad', () => {
      it.each([
        ['an unknown side-effect class', { ...refund('b1'), side_effect: 'harmless' }, 'VALIDATION_FAILED'],
        ['a missing target', { ...refund('b2'), target: undefined }, 'VALIDATION_FAILED'],
        [
          'arguments JSON cannot carry',
          { ...refund('b3'), arguments: { amount: Number.NaN } },
          'PAYLOAD_NOT_JSON',
        ],
        [
          'undefined in the arguments',
          { ...refund('b4'), arguments: { amount: undefined } },
          'PAYLOAD_NOT_JSON',
        ],
        [
          'an oversized payload',
          { ...refund('b5'), arguments: { blob: 'x'.repeat(5000) } },
          'PAYLOAD_TOO_LARGE',
        ],
      ])('refuses %s with a typed error and writes nothing', async (_, body, code) => {
        const { agent, log } = await setup();
        const value: Record<string, unknown> = { ...body };
        if (value.target === undefined) delete value.target;
        const before = await counts(log);
        expect(await codeOf(records.propose(agent, value))).toBe(code);
        expect(await counts(log)).toEqual(before);
      });
    });

    describe('when a failure strikes after the record insert and before commit', () => {
      it('leaves neither the record nor its event', async () => {
        const { agent, log } = await setup();
        const before = await counts(log);
        const headBefore = await ledger.head(log);
        const injected = new Error('injected after the inserts');
        let armed = true;
        // A hook runs after the batch's rows and events are inserted, in the same transaction.
        const failing = createLedger(database, {
          afterAppend: [
            async () => {
              if (!armed) return;
              armed = false;
              throw injected;
            },
          ],
        });
        try {
          const rejected = await createRecords(failing)
            .propose(agent, refund('k1'))
            .catch((e: unknown) => e);
          expect(armed).toBe(false);
          expect(isLedgerError(rejected) ? rejected.cause : rejected).toBe(injected);
          expect(await counts(log)).toEqual(before);
          expect(await ledger.head(log)).toEqual(headBefore);
          // The log goes on from where it was: the lost seqs were never taken.
          const next = await createRecords(failing).propose(agent, refund('k1'));
          expect(next.replayed).toBe(false);
          expect((await ledger.verifyChain({ log })).ok).toBe(true);
        } finally {
          await failing.close();
        }
      });
    });
  });

  describe('decide', () => {
    describe('when an external engine decides', () => {
      it('records its decision with its source, once (DECISION_EXISTS)', async () => {
        const { agent, ops, log } = await setup();
        const external = createRecords(ledger, { policy: 'external', now: () => new Date(clock) });
        const { proposal, decision } = await external.propose(agent, refund('k1'));
        expect(decision).toBeNull();
        const engine: RecordContext = { log, caller: { identity: 'service:opa' } };
        const decided = await external.decide(engine, {
          proposal_id: proposal.id,
          verdict: 'allow',
          source: 'opa:payments-v3',
          reasons: [{ code: 'OPA_ALLOW', effect: 'allow', message: 'rule payments.allow matched' }],
        });
        expect(decided.decision).toMatchObject({
          source: 'opa:payments-v3',
          decided_by: 'service:opa',
          authorized_identity: 'agent:billing',
        });
        const again = {
          proposal_id: proposal.id,
          verdict: 'deny',
          source: 'opa:payments-v3',
          reasons: [{ code: 'X', effect: 'deny', message: 'x' }],
        };
        expect(await codeOf(external.decide(engine, again))).toBe('DECISION_EXISTS');
        const builtIn = await records.propose(agent, refund('k2'));
        expect(await codeOf(external.decide(ops, { ...again, proposal_id: builtIn.proposal.id }))).toBe(
          'DECISION_EXISTS',
        );
      });

      it('cannot allow an unregistered tool', async () => {
        const { agent, log } = await setup();
        const external = createRecords(ledger, { policy: 'external' });
        const { proposal } = await external.propose(agent, refund('k1', { tool_name: 'wipe' }));
        const engine: RecordContext = { log, caller: { identity: 'service:opa' } };
        const allow = {
          proposal_id: proposal.id,
          verdict: 'allow',
          source: 'opa',
          reasons: [{ code: 'OK', effect: 'allow', message: 'ok' }],
        };
        expect(await codeOf(external.decide(engine, allow))).toBe('TOOL_NOT_REGISTERED');
        expect(await codeOf(external.decide(engine, { ...allow, source: 'built_in' }))).toBe(
          'VALIDATION_FAILED',
        );
      });
    });
  });

  describe('observe', () => {
    describe('when the proposal may not run', () => {
      it('refuses a denied proposal with EXECUTION_NOT_AUTHORIZED and keeps the attempt as evidence', async () => {
        const { agent, log } = await setup();
        const { proposal } = await records.propose(
          agent,
          refund('k1', { target: { kind: 'payment', id: 'p', env: 'dev' } }),
        );
        const attempt = { proposal_id: proposal.id, outcome: 'succeeded', transport_status: 200 };
        expect(await codeOf(records.observe(agent, attempt))).toBe('EXECUTION_NOT_AUTHORIZED');
        expect(await count('observations', log)).toBe(0);
        const story = await records.story(log, proposal.id);
        expect(story.refusals).toMatchObject([
          { code: 'EXECUTION_NOT_AUTHORIZED', attempted_by: 'agent:billing', attempted: attempt },
        ]);
        expect(story.events.map((e) => e.kind)).toEqual(['proposal', 'decision', 'execution_refused']);
        expect(story.stage).toBe('execution_refused');
        expect(story.outcome).toBe('not_executed');
      });

      it('refuses an undecided proposal with EXECUTION_NOT_AUTHORIZED', async () => {
        const { agent, log } = await setup();
        const external = createRecords(ledger, { policy: 'external' });
        const { proposal } = await external.propose(agent, refund('k1'));
        expect(await codeOf(records.observe(agent, { proposal_id: proposal.id, outcome: 'succeeded' }))).toBe(
          'EXECUTION_NOT_AUTHORIZED',
        );
        expect(await count('observations', log)).toBe(0);
        expect(await count('refused_executions', log)).toBe(1);
      });

      it('refuses another executing identity with IDENTITY_MISMATCH', async () => {
        const { agent, alice, log } = await setup();
        const { proposal } = await records.propose(agent, refund('k1'));
        expect(await codeOf(records.observe(alice, { proposal_id: proposal.id, outcome: 'succeeded' }))).toBe(
          'IDENTITY_MISMATCH',
        );
        expect(await count('observations', log)).toBe(0);
      });

      it('refuses an executed payload other than the proposal', async () => {
        const { agent } = await setup();
        const { proposal } = await records.propose(agent, refund('k1'));
        const other = { proposal_id: proposal.id, outcome: 'succeeded', payload_hash: 'f'.repeat(64) };
        expect(await codeOf(records.observe(agent, other))).toBe('EXECUTION_NOT_AUTHORIZED');
      });
    });

    describe('when an allowed proposal is observed', () => {
      it('keeps outcome, result, transport status and tool error apart', async () => {
        const { agent } = await setup();
        const { proposal } = await records.propose(agent, refund('k1'));
        const { observation, replayed } = await execute(agent, {
          proposal_id: proposal.id,
          outcome: 'failed',
          result: { isError: true, content: [{ type: 'text', text: 'insufficient funds' }] },
          transport_status: 200,
          tool_error: true,
          started_at: '2026-01-01T00:00:00.000Z',
          finished_at: '2026-01-01T00:00:01.250Z',
        });
        expect(replayed).toBe(false);
        expect(observation).toMatchObject({
          outcome: 'failed',
          transport_status: 200,
          tool_error: true,
          executed_by: 'agent:billing',
          server_id: 'payments',
          approval_use_id: null,
        });
      });

      it('replays the same observation from the same identity and writes nothing', async () => {
        const { agent, log } = await setup();
        const { proposal } = await records.propose(agent, refund('k1'));
        const first = await execute(agent, { proposal_id: proposal.id, outcome: 'unknown' });
        const before = await counts(log);
        const again = await records.observe(agent, {
          outcome: 'unknown',
          result: null,
          proposal_id: proposal.id,
        });
        expect(again).toEqual({ observation: first.observation, replayed: true });
        expect(await counts(log)).toEqual(before);
        // An unknown outcome is never retried automatically: authorization is closed.
        expect(await codeOf(records.authorize(agent, { proposal_id: proposal.id }))).toBe(
          'OBSERVATION_EXISTS',
        );
      });

      it('refuses another account of the execution with OBSERVATION_CONFLICT and keeps the attempt', async () => {
        const { agent, log } = await setup();
        const { proposal } = await records.propose(agent, refund('k1'));
        const first = await execute(agent, { proposal_id: proposal.id, outcome: 'unknown' });
        const attempt = { proposal_id: proposal.id, outcome: 'succeeded' };
        const refused = await records.observe(agent, attempt).catch((error: unknown) => error);
        expect(refused).toMatchObject({
          code: 'OBSERVATION_CONFLICT',
          details: { proposal_id: proposal.id, observation_id: first.observation.id },
        });
        expect(await count('observations', log)).toBe(1);
        const story = await records.story(log, proposal.id);
        expect(story.observation).toEqual(first.observation);
        expect(story.refusals).toMatchObject([
          { code: 'OBSERVATION_CONFLICT', attempted_by: 'agent:billing', attempted: attempt },
        ]);
        expect(story.refusals[0]!.message).toContain(first.observation.id);
      });

      it('refuses a claim the observation was not recorded under', async () => {
        const { agent } = await setup();
        const { proposal } = await records.propose(agent, refund('k1'));
        await execute(agent, { proposal_id: proposal.id, outcome: 'succeeded' });
        const same = { proposal_id: proposal.id, outcome: 'succeeded' };
        expect(
          (await records.observe(agent, { ...same, payload_hash: proposal.payload_hash })).replayed,
        ).toBe(true);
        expect(await codeOf(records.observe(agent, { ...same, payload_hash: 'f'.repeat(64) }))).toBe(
          'OBSERVATION_CONFLICT',
        );
      });
    });
  });

  describe('approvals', () => {
    const setupIrreversible = (over: Partial<ToolInput> = {}) =>
      setup({ side_effect: 'irreversible', ...over });

    describe('when a proposal needs approval', () => {
      it('opens one request and reuses it for an identical proposal while it is pending', async () => {
        const { agent, log } = await setupIrreversible();
        const first = await records.propose(agent, refund('k1'));
        expect(first.decision?.verdict).toBe('require_approval');
        expect(first.approval).toMatchObject({
          proposal_id: first.proposal.id,
          payload_hash: first.proposal.payload_hash,
        });
        const second = await records.propose(agent, refund('k2'));
        expect(second.approval?.id).toBe(first.approval?.id);
        expect(await count('approval_requests', log)).toBe(1);
        const other = await records.propose(agent, refund('k3', { arguments: { amount: 6 } }));
        expect(other.approval?.id).not.toBe(first.approval?.id);
        const listed = await records.listApprovals(log, { status: 'pending' });
        expect(listed.approvals.map((a) => a.request.id)).toEqual([first.approval!.id, other.approval!.id]);
        expect(listed.approvals[0]!.proposal.arguments).toEqual({ amount: 5, currency: 'EUR' });
      });

      it('lets an approved, unused single-use approval cover the next identical proposal, once', async () => {
        // The gateway that asked restarted: its next identical call is a new proposal.
        const { agent, alice, log } = await setupIrreversible();
        const first = await records.propose(agent, refund('k1'));
        await records.approve(alice, { request_id: first.approval!.id, validity: 'once' });
        const again = await records.propose(agent, refund('k2'));
        expect(again.approval?.id).toBe(first.approval!.id);
        expect(again.decision).toMatchObject({
          verdict: 'require_approval',
          approval_request_id: first.approval!.id,
        });
        const { approval_use } = await records.authorize(agent, { proposal_id: again.proposal.id });
        expect(approval_use).toMatchObject({
          proposal_id: again.proposal.id,
          request_id: first.approval!.id,
        });
        // Used: the orphaned proposal may not run under it, and a third identical call asks anew.
        expect(await codeOf(records.authorize(agent, { proposal_id: first.proposal.id }))).toBe(
          'APPROVAL_CONSUMED',
        );
        const third = await records.propose(agent, refund('k3'));
        expect(third.approval?.id).not.toBe(first.approval!.id);
        expect(await count('approval_requests', log)).toBe(2);
        // Another payload never takes it.
        const other = await records.propose(agent, refund('k4', { arguments: { amount: 6 } }));
        expect(other.approval?.id).not.toBe(first.approval!.id);
      });

      it('opens one request when identical proposals arrive together', async () => {
        const { agent, log } = await setupIrreversible();
        const results = await Promise.all(
          ['k1', 'k2', 'k3', 'k4'].map((key) => records.propose(agent, refund(key))),
        );
        expect(new Set(results.map((r) => r.proposal.id)).size).toBe(4);
        expect(new Set(results.map((r) => r.approval?.id)).size).toBe(1);
        expect(await count('approval_requests', log)).toBe(1);
        expect((await ledger.verifyChain({ log })).ok).toBe(true);
      });

      it('refuses execution until approved', async () => {
        const { agent } = await setupIrreversible();
        const { proposal } = await records.propose(agent, refund('k1'));
        expect(await codeOf(records.observe(agent, { proposal_id: proposal.id, outcome: 'succeeded' }))).toBe(
          'EXECUTION_NOT_AUTHORIZED',
        );
      });
    });

    describe('when someone answers a request', () => {
      it('refuses the requester answering their own request with SELF_APPROVAL', async () => {
        const { agent } = await setupIrreversible();
        const { approval } = await records.propose(agent, refund('k1'));
        expect(await codeOf(records.approve(agent, { request_id: approval!.id }))).toBe('SELF_APPROVAL');
        expect(await codeOf(records.deny(agent, { request_id: approval!.id }))).toBe('SELF_APPROVAL');
      });

      it('answers once (APPROVAL_RESOLVED) and lets the approved proposal run', async () => {
        const { agent, alice, log } = await setupIrreversible();
        const { proposal, approval } = await records.propose(agent, refund('k1'));
        const view = await records.approve(alice, { request_id: approval!.id, comment: 'ok, refund is due' });
        expect(view).toMatchObject({
          status: 'approved',
          resolution: { resolver: 'user:alice', validity: 'once' },
        });
        expect(await codeOf(records.deny(alice, { request_id: approval!.id }))).toBe('APPROVAL_RESOLVED');
        const { observation } = await execute(agent, {
          proposal_id: proposal.id,
          outcome: 'succeeded',
        });
        expect(observation.approval_use_id).toMatch(/^use_/);
        expect((await records.getApproval(log, approval!.id)).status).toBe('used');
      });

      it('replays an approved execution only under the approval it was recorded under', async () => {
        const { agent, alice } = await setupIrreversible();
        const { proposal, approval } = await records.propose(agent, refund('k1'));
        await records.approve(alice, { request_id: approval!.id });
        const other = await records.propose(agent, refund('k2', { arguments: { amount: 6 } }));
        const post = { proposal_id: proposal.id, outcome: 'succeeded', approval_request_id: approval!.id };
        const first = await execute(agent, post);
        expect(await records.observe(agent, post)).toEqual({
          observation: first.observation,
          replayed: true,
        });
        expect(
          await codeOf(records.observe(agent, { ...post, approval_request_id: other.approval!.id })),
        ).toBe('OBSERVATION_CONFLICT');
      });

      it('lets a denial answer only that request', async () => {
        const { agent, alice, log } = await setupIrreversible();
        const first = await records.propose(agent, refund('k1'));
        await records.deny(alice, { request_id: first.approval!.id, comment: 'no' });
        expect(
          await codeOf(records.observe(agent, { proposal_id: first.proposal.id, outcome: 'succeeded' })),
        ).toBe('EXECUTION_NOT_AUTHORIZED');
        const retry = await records.propose(agent, refund('k2'));
        expect(retry.approval?.id).not.toBe(first.approval?.id);
        expect((await records.getApproval(log, retry.approval!.id)).status).toBe('pending');
        expect((await records.listApprovals(log, { status: 'denied' })).approvals).toHaveLength(1);
      });

      it('refuses an answer after the request expired with APPROVAL_EXPIRED', async () => {
        const { agent, alice, log } = await setupIrreversible();
        const { approval } = await records.propose(agent, refund('k1'));
        clock += 3600_000;
        try {
          expect(await codeOf(records.approve(alice, { request_id: approval!.id }))).toBe('APPROVAL_EXPIRED');
          expect((await records.listApprovals(log, { status: 'expired' })).approvals).toHaveLength(1);
        } finally {
          clock = T0;
        }
      });
    });

    describe('when approvers page through requests', () => {
      it('pages in request order with a cursor', async () => {
        const { agent, log } = await setupIrreversible();
        const a = await records.propose(agent, refund('k1'));
        const b = await records.propose(agent, refund('k2', { arguments: { amount: 2 } }));
        const first = await records.listApprovals(log, { limit: 1 });
        expect(first.approvals.map((v) => v.request.id)).toEqual([a.approval!.id]);
        const second = await records.listApprovals(log, { limit: 1, after: first.next! });
        expect(second.approvals.map((v) => v.request.id)).toEqual([b.approval!.id]);
        expect((await records.listApprovals(log, { limit: 1, after: second.next! })).next).toBeNull();
      });
    });

    describe('when several rules set a window', () => {
      it('applies the shortest', async () => {
        const { agent, alice } = await setupIrreversible({ max_approval_window_seconds: 120 });
        const a = await records.propose(agent, refund('k1'));
        const long = await records.approve(alice, {
          request_id: a.approval!.id,
          validity: 'window',
          window_seconds: 3600,
        });
        expect(long.resolution).toMatchObject({ window_seconds: 120, window_source: 'policy' });
        const b = await records.propose(agent, refund('k2', { arguments: { amount: 1 } }));
        const short = await records.approve(alice, {
          request_id: b.approval!.id,
          validity: 'window',
          window_seconds: 60,
        });
        expect(short.resolution).toMatchObject({
          window_seconds: 60,
          window_source: 'approver',
          valid_until: '2026-01-01T00:01:00.000Z',
        });
      });
    });

    describe('when the approval expires before execution', () => {
      it('refuses with APPROVAL_EXPIRED', async () => {
        const { agent, alice } = await setupIrreversible({ max_approval_window_seconds: 60 });
        const { proposal, approval } = await records.propose(agent, refund('k1'));
        await records.approve(alice, { request_id: approval!.id });
        clock += 60_000;
        try {
          expect(
            await codeOf(records.observe(agent, { proposal_id: proposal.id, outcome: 'succeeded' })),
          ).toBe('APPROVAL_EXPIRED');
        } finally {
          clock = T0;
        }
      });
    });

    describe('when two executions race for one single-use approval', () => {
      it('records exactly one observation and refuses the other with APPROVAL_CONSUMED', async () => {
        const { agent, alice, log } = await setupIrreversible();
        const a = await records.propose(agent, refund('k1'));
        const b = await records.propose(agent, refund('k2'));
        expect(b.approval?.id).toBe(a.approval?.id);
        await records.approve(alice, { request_id: a.approval!.id, validity: 'once' });
        const results = await Promise.allSettled([
          execute(agent, { proposal_id: a.proposal.id, outcome: 'succeeded' }),
          execute(agent, { proposal_id: b.proposal.id, outcome: 'succeeded' }),
        ]);
        expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
        const rejected = results.filter((r) => r.status === 'rejected');
        expect(rejected.map((r) => (isLedgerError(r.reason) ? r.reason.code : r.reason))).toEqual([
          'APPROVAL_CONSUMED',
        ]);
        expect(await count('observations', log)).toBe(1);
        expect(await count('approval_uses', log)).toBe(1);
      });

      it('lets a claim made by authorize stand, and refuses the second claimant up front', async () => {
        const { agent, alice, log } = await setupIrreversible();
        const a = await records.propose(agent, refund('k1'));
        const b = await records.propose(agent, refund('k2'));
        await records.approve(alice, { request_id: a.approval!.id });
        const claimed = await records.authorize(agent, { proposal_id: a.proposal.id });
        expect(claimed.approval_use).toMatchObject({ proposal_id: a.proposal.id, validity: 'once' });
        expect(await codeOf(records.authorize(agent, { proposal_id: b.proposal.id }))).toBe(
          'APPROVAL_CONSUMED',
        );
        const { observation } = await execute(agent, {
          proposal_id: a.proposal.id,
          outcome: 'succeeded',
        });
        expect(observation.approval_use_id).toBe(claimed.approval_use!.id);
        expect(await count('approval_uses', log)).toBe(1);
      });
    });

    describe('when an approval is for a window', () => {
      it('covers repeated executions of the same payload by the same requester', async () => {
        const { agent, alice } = await setupIrreversible();
        const a = await records.propose(agent, refund('k1'));
        await records.approve(alice, { request_id: a.approval!.id, validity: 'window', window_seconds: 600 });
        const b = await records.propose(agent, refund('k2'));
        expect(b.approval?.id).toBe(a.approval?.id);
        await execute(agent, { proposal_id: a.proposal.id, outcome: 'succeeded' });
        await execute(agent, { proposal_id: b.proposal.id, outcome: 'succeeded' });
      });
    });

    describe('when an execution names an approval it is not bound to', () => {
      it('refuses another payload with APPROVAL_PAYLOAD_MISMATCH', async () => {
        const { agent, alice } = await setupIrreversible();
        const { proposal, approval } = await records.propose(agent, refund('k1'));
        await records.approve(alice, { request_id: approval!.id });
        const other = { proposal_id: proposal.id, outcome: 'succeeded', payload_hash: 'e'.repeat(64) };
        expect(await codeOf(records.observe(agent, other))).toBe('APPROVAL_PAYLOAD_MISMATCH');
      });

      it('refuses another requester with APPROVAL_SCOPE_MISMATCH', async () => {
        const { agent, alice, log } = await setupIrreversible();
        const mine = await records.propose(agent, refund('k1'));
        await records.approve(alice, { request_id: mine.approval!.id });
        const bob: RecordContext = { log, caller: { identity: 'agent:bob', scopes: ['payments:write'] } };
        const theirs = await records.propose(bob, refund('k2'));
        expect(theirs.approval?.id).not.toBe(mine.approval?.id);
        const borrowed = {
          proposal_id: theirs.proposal.id,
          outcome: 'succeeded',
          approval_request_id: mine.approval!.id,
        };
        expect(await codeOf(records.observe(bob, borrowed))).toBe('APPROVAL_SCOPE_MISMATCH');
      });
    });
  });

  describe('when many gateways work at once', () => {
    it('keeps every invariant and a chain the record tables agree with', async () => {
      const { agent, alice, log } = await setup();
      const stories = await Promise.all(
        Array.from({ length: 30 }, async (_, i) => {
          const { proposal, decision } = await records.propose(agent, refund(`many-${i}`));
          expect(decision?.verdict).toBe('allow');
          // Two accounts of one execution race, one of them posted twice: whichever is
          // recorded first, its twin replays it and the other account is refused.
          const outcomes = ['succeeded', 'succeeded', 'failed'] as const;
          await records.authorize(agent, { proposal_id: proposal.id });
          const settled = await Promise.allSettled(
            outcomes.map((outcome) => records.observe(agent, { proposal_id: proposal.id, outcome })),
          );
          const observed = settled.flatMap((r) => (r.status === 'fulfilled' ? [r.value.observation] : []));
          const ids = new Set(observed.map((o) => o.id));
          expect(ids.size).toBe(1);
          const recorded = observed[0]!.outcome;
          expect(observed).toHaveLength(outcomes.filter((o) => o === recorded).length);
          const refused = settled.flatMap((r) => (r.status === 'rejected' ? [r.reason] : []));
          expect(refused.map((e) => e.code)).toEqual(
            outcomes.filter((o) => o !== recorded).map(() => 'OBSERVATION_CONFLICT'),
          );
          const [observationId] = [...ids];
          await records.recordVerification(alice, {
            observation_id: observationId,
            checks: [{ name: 'refund.recorded', status: 'pass', source: 'ledger-api' }],
          });
          return proposal.id;
        }),
      );
      expect(new Set(stories).size).toBe(30);
      expect(await count('proposals', log)).toBe(30);
      expect(await count('observations', log)).toBe(30);
      expect(await count('refused_executions', log)).toBeGreaterThanOrEqual(30);
      expect(await count('refused_executions', log)).toBeLessThanOrEqual(60);
      expect(await count('verifications', log)).toBe(30);
      const report = await ledger.verifyChain({ log });
      expect(report).toMatchObject({ ok: true, failures: [] });
      expect(await failuresOf(log)).toEqual([]);
    });
  });

  describe('when one caller asks for an id no row can have, beside others', () => {
    it('answers it NOT_FOUND and answers the others', async () => {
      const { agent, log } = await setup();
      const { proposal } = await records.propose(agent, refund('k1'));
      const [bad, good] = await Promise.allSettled([
        records.getProposal(log, 'prop_\u0000'),
        records.getProposal(log, proposal.id),
      ]);
      expect(bad.status === 'rejected' && isLedgerError(bad.reason) && bad.reason.code).toBe('NOT_FOUND');
      expect(good.status === 'fulfilled' && good.value.id).toBe(proposal.id);
    });
  });

  describe('when an id names nothing in the log', () => {
    it('answers NOT_FOUND and writes nothing', async () => {
      const { agent, alice, log } = await setup();
      const { proposal } = await records.propose(agent, refund('k1'));
      const before = await counts(log);
      expect(await codeOf(records.approve(alice, { request_id: 'apr_missing' }))).toBe('NOT_FOUND');
      expect(
        await codeOf(records.observe(agent, { proposal_id: 'prop_missing', outcome: 'succeeded' })),
      ).toBe('NOT_FOUND');
      expect(
        await codeOf(records.recordVerification(alice, { observation_id: 'obs_missing', checks: [] })),
      ).toBe('NOT_FOUND');
      expect(await codeOf(records.getApproval(log, 'apr_missing'))).toBe('NOT_FOUND');
      expect(await codeOf(records.story('another-log', proposal.id))).toBe('NOT_FOUND');
      expect(await counts(log)).toEqual(before);
    });
  });

  describe('recordVerification', () => {
    const executed = async (
      over: Partial<ProposalInput> = {},
      outcome: 'succeeded' | 'failed' | 'unknown' = 'succeeded',
    ) => {
      const ctx = await setup();
      const { proposal } = await records.propose(ctx.agent, refund('k1', over));
      const { observation } = await execute(ctx.agent, {
        proposal_id: proposal.id,
        outcome,
        transport_status: 200,
      });
      const verifier: RecordContext = { log: ctx.log, caller: { identity: 'service:verifier' } };
      const verify = async (checks: CheckInput[], extra: Record<string, unknown> = {}, as = verifier) =>
        records.recordVerification(as, { observation_id: observation.id, checks, ...extra });
      const statusOf = async () => {
        const story = await records.story(ctx.log, proposal.id);
        return { status: story.verification_status.status, outcome: story.outcome };
      };
      return { ...ctx, proposal, observation, verifier, verify, statusOf };
    };
    const pass = (name = 'refund.recorded'): CheckInput => ({ name, status: 'pass', source: 'ledger-api' });
    const fail = (name = 'refund.recorded'): CheckInput => ({ name, status: 'fail', source: 'ledger-api' });
    const noVerifier = (name = 'refund.recorded'): CheckInput => ({
      name,
      status: 'inconclusive',
      source: null,
      reason: 'NO_VERIFIER',
    });

    describe('when an independent source says the refund is missing', () => {
      it('derives failed even though the tool said 200', async () => {
        const { verify, log, proposal } = await executed();
        const { verification } = await verify([fail()]);
        expect(verification).toMatchObject({
          status: 'failed',
          verifier: 'service:verifier',
          proposal_id: proposal.id,
          undeclared: [],
        });
        const story = await records.story(log, proposal.id);
        expect(story.outcome).toBe('verification_failed');
        expect(story.events.map((e) => e.kind)).toEqual([
          'proposal',
          'decision',
          'execution_claim',
          'observation',
          'verification',
        ]);
      });
    });

    describe('when the checks are read from the system that performed the write', () => {
      it('counts them inconclusive with NOT_INDEPENDENT and aborts the proposal', async () => {
        const { verify, log, proposal } = await executed();
        const { verification } = await verify([
          { name: 'refund.recorded', status: 'pass', source: 'payments', evidence: { row: 1 } },
        ]);
        expect(verification.status).toBe('inconclusive');
        expect(verification.checks[0]).toMatchObject({
          status: 'inconclusive',
          reason: 'NOT_INDEPENDENT',
          reported: 'pass',
        });
        expect((await records.story(log, proposal.id)).outcome).toBe('unverified');
      });
    });

    describe('when the checks vary', () => {
      it.each([
        [[], 'inconclusive'],
        [[pass()], 'passed'],
        [[pass(), { ...noVerifier(), status: 'error', reason: 'VERIFIER_TIMEOUT' }], 'inconclusive'],
        [[pass(), fail()], 'failed'],
      ] as Array<[CheckInput[], string]>)('derives the status from %j', async (checks, status) => {
        const { verify } = await executed();
        expect((await verify(checks)).verification.status).toBe(status);
      });

      it('completes the proposal once every declared postcondition passed', async () => {
        const { verify, log, proposal } = await executed();
        expect((await records.story(log, proposal.id)).outcome).toBe('awaiting_verification');
        await verify([pass()]);
        expect((await records.story(log, proposal.id)).outcome).toBe('verified');
      });
    });

    describe('when a check names no declared postcondition', () => {
      it('reports it as undeclared, does not count it, and leaves the postcondition unproven', async () => {
        const { verify, statusOf } = await executed();
        const { verification, verification_status } = await verify([pass('unrelated.thing')]);
        expect(verification).toMatchObject({ status: 'inconclusive', undeclared: ['unrelated.thing'] });
        expect(verification_status).toMatchObject({
          status: 'inconclusive',
          reason: 'UNPROVEN',
          postconditions: [{ name: 'refund.recorded', status: 'inconclusive', decided_by: [] }],
        });
        expect(await statusOf()).toEqual({ status: 'inconclusive', outcome: 'unverified' });
      });

      it('matches a host check by the postcondition it answers, not its name', async () => {
        const { verify } = await executed();
        const { verification } = await verify([{ ...pass('row.count'), postcondition: 'refund.recorded' }]);
        expect(verification).toMatchObject({ status: 'passed', undeclared: [] });
      });
    });

    describe('when only one of two declared postconditions passed', () => {
      it('is inconclusive until the other is proven, by any later record', async () => {
        const { verify, statusOf } = await executed({
          postconditions: [{ name: 'refund.recorded' }, { name: 'customer.notified' }],
        });
        const first = await verify([pass()]);
        expect(first.verification.status).toBe('inconclusive');
        expect(first.verification_status.postconditions).toEqual([
          { name: 'refund.recorded', status: 'passed', decided_by: [first.verification.id] },
          { name: 'customer.notified', status: 'inconclusive', decided_by: [] },
        ]);
        expect(await statusOf()).toEqual({ status: 'inconclusive', outcome: 'unverified' });
        const second = await verify([pass('customer.notified')]);
        expect(second.verification.status).toBe('inconclusive');
        expect(second.verification_status.status).toBe('passed');
        expect(await statusOf()).toEqual({ status: 'passed', outcome: 'verified' });
      });
    });

    describe('when the proposal declared no postconditions', () => {
      it('proves nothing, whatever passed', async () => {
        const { verify, statusOf } = await executed({ postconditions: [] });
        const { verification, verification_status } = await verify([pass()]);
        expect(verification).toMatchObject({ status: 'inconclusive', undeclared: ['refund.recorded'] });
        expect(verification_status.reason).toBe('NO_POSTCONDITIONS');
        expect((await statusOf()).status).toBe('inconclusive');
      });
    });

    describe('when a definitive result is followed by an inconclusive one', () => {
      it.each([
        ['failed', fail, 'verification_failed'],
        ['passed', pass, 'verified'],
      ] as const)('keeps %s', async (status, check, outcome) => {
        const { verify, statusOf } = await executed();
        await verify([check()]);
        // E.g. the gateway asking for verification on a server with no verifiers configured.
        const later = await verify([noVerifier()]);
        expect(later.verification.status).toBe('inconclusive');
        expect(later.verification_status.status).toBe(status);
        expect(await statusOf()).toEqual({ status, outcome });
      });
    });

    describe('when a pass follows a failure without superseding it', () => {
      it('stays failed', async () => {
        const { verify, statusOf, log } = await executed();
        const failed = await verify([fail()]);
        const passed = await verify([pass()], {}, { log, caller: { identity: 'service:other' } });
        expect(passed.verification_status).toMatchObject({
          status: 'failed',
          postconditions: [{ status: 'failed', decided_by: [failed.verification.id] }],
        });
        expect((await statusOf()).status).toBe('failed');
      });
    });

    describe('when a verifier re-verifies, naming the failed record and why', () => {
      it('passes, and keeps both records in the story', async () => {
        const { verify, statusOf, log, proposal } = await executed();
        const failed = await verify([fail()]);
        const again = await verify([pass()], {
          supersedes: [failed.verification.id],
          reason: 'the billing ledger replicated late',
        });
        expect(again.verification).toMatchObject({
          status: 'passed',
          supersedes: [failed.verification.id],
          reason: 'the billing ledger replicated late',
        });
        expect(again.verification_status).toMatchObject({
          status: 'passed',
          superseded: [{ id: failed.verification.id, by: again.verification.id }],
        });
        const story = await records.story(log, proposal.id);
        expect(story.verifications.map((v) => v.id)).toEqual([failed.verification.id, again.verification.id]);
        expect(story.outcome).toBe('verified');
        expect(await statusOf()).toEqual({ status: 'passed', outcome: 'verified' });
        expect(await failuresOf(log)).toEqual([]);
        expect((await ledger.verifyChain({ log })).ok).toBe(true);
        // An owner who quietly drops the supersession from the row is caught against the chain.
        await tamper(
          database,
          sql`update verifications set supersedes = null, reason = null where log_id = ${log} and id = ${again.verification.id}`,
        );
        expect(await failuresOf(log)).toMatchObject([{ code: 'RECORD_MISMATCH', id: again.verification.id }]);
      });
    });

    describe('when two re-verifications supersede the same record at once', () => {
      it('records one and refuses the other as ALREADY_SUPERSEDED', async () => {
        const { verify } = await executed();
        const failed = await verify([fail()]);
        const supersede = { supersedes: [failed.verification.id], reason: 'recheck' };
        const results = await Promise.allSettled([verify([pass()], supersede), verify([pass()], supersede)]);
        expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
        const refused = results.find((r) => r.status === 'rejected');
        expect(refused?.status === 'rejected' && refused.reason).toMatchObject({
          code: 'SUPERSESSION_INVALID',
          details: { reason: 'ALREADY_SUPERSEDED' },
        });
      });
    });

    describe('when the audited party tries to supersede', () => {
      it.each([
        ['the identity that executed', 'agent:billing'],
        ['the same identity in another case', 'Agent:Billing'],
      ])('refuses %s with SUPERSESSION_FORBIDDEN and writes nothing', async (_, identity) => {
        const { verify, log } = await executed();
        const failed = await verify([fail()]);
        const before = await counts(log);
        const tried = verify(
          [pass()],
          { supersedes: [failed.verification.id], reason: 'trust me' },
          { log, caller: { identity } },
        );
        expect(await codeOf(tried)).toBe('SUPERSESSION_FORBIDDEN');
        expect(await counts(log)).toEqual(before);
      });
    });

    describe('when a supersession is not a valid one', () => {
      it('refuses what it cannot replace and writes nothing', async () => {
        const { verify, log } = await executed();
        const failed = await verify([fail()]);
        const unproven = await verify([noVerifier()]);
        const reason = { reason: 'recheck' };
        const before = await counts(log);
        const attempt = (extra: Record<string, unknown>, checks = [pass()]) =>
          codeOf(verify(checks, { ...reason, ...extra }));
        expect(await attempt({ supersedes: ['ver_missing'] })).toBe('NOT_FOUND');
        expect(await attempt({ supersedes: [unproven.verification.id] })).toBe('SUPERSESSION_INVALID');
        expect(await attempt({ supersedes: [failed.verification.id] }, [noVerifier()])).toBe(
          'SUPERSESSION_INVALID',
        );
        expect(await codeOf(verify([pass()], { supersedes: [failed.verification.id] }))).toBe(
          'VALIDATION_FAILED',
        );
        expect(await codeOf(verify([pass()], reason))).toBe('VALIDATION_FAILED');
        expect(await counts(log)).toEqual(before);
        await verify([pass()], { ...reason, supersedes: [failed.verification.id] });
        expect(await attempt({ supersedes: [failed.verification.id] })).toBe('SUPERSESSION_INVALID');
      });

      it('refuses a record of another proposal as NOT_FOUND', async () => {
        const first = await executed();
        const other = await first.verify([fail()]);
        const second = await executed();
        expect(
          await codeOf(second.verify([pass()], { supersedes: [other.verification.id], reason: 'mix-up' })),
        ).toBe('NOT_FOUND');
      });
    });

    describe('when the tool timed out and may still act', () => {
      it('holds every verification at inconclusive until the outcome settles', async () => {
        const { verify, statusOf, log, proposal } = await executed({}, 'unknown');
        try {
          clock += 81;
          const early = await verify([fail()]);
          expect(early.verification).toMatchObject({ status: 'inconclusive', held: 'OUTCOME_UNKNOWN' });
          expect(early.verification.checks[0]).toMatchObject({ status: 'fail' });
          expect(early.verification_status).toMatchObject({
            status: 'inconclusive',
            reason: 'OUTCOME_UNKNOWN',
            settles_at: new Date(T0 + 900_000).toISOString(),
          });
          // Awaiting resolution: no verdict yet, so not aborted either.
          expect(await statusOf()).toEqual({ status: 'inconclusive', outcome: 'awaiting_resolution' });
          expect(
            await codeOf(verify([pass()], { supersedes: [early.verification.id], reason: 'too early' })),
          ).toBe('SUPERSESSION_INVALID');
          clock = T0 + 900_000;
          expect((await records.story(log, proposal.id)).verification_status.reason).toBe('UNPROVEN');
          const settled = await verify([pass()]);
          expect(settled.verification).toMatchObject({ status: 'passed' });
          expect(settled.verification.held).toBeUndefined();
          expect(await statusOf()).toEqual({ status: 'passed', outcome: 'verified' });
          expect(await failuresOf(log)).toEqual([]);
        } finally {
          clock = T0;
        }
      });
    });

    describe('when a caller supplies the status', () => {
      it('refuses with VERIFICATION_INVALID and writes nothing', async () => {
        const { observation, verifier, log } = await executed();
        const before = await counts(log);
        const body = { observation_id: observation.id, checks: [], status: 'passed' };
        expect(await codeOf(records.recordVerification(verifier, body))).toBe('VERIFICATION_INVALID');
        expect(await counts(log)).toEqual(before);
      });
    });
  });

  describe('execution claims', () => {
    /** Run `work` with the clock `seconds` later, then put it back. */
    const later = async <T>(seconds: number, work: () => Promise<T>): Promise<T> => {
      clock = T0 + seconds * 1000;
      try {
        return await work();
      } finally {
        clock = T0;
      }
    };

    describe('when a gateway authorizes', () => {
      it('records a claim with a deadline, and answers the same claim when asked again', async () => {
        const { agent, log } = await setup();
        const { proposal } = await records.propose(agent, refund('k1'));
        const first = await records.authorize(agent, { proposal_id: proposal.id });
        expect(first.claim).toMatchObject({
          proposal_id: proposal.id,
          decision_id: first.decision.id,
          approval_use_id: null,
          claimed_by: 'agent:billing',
          claimed_at: new Date(T0).toISOString(),
          deadline: new Date(T0 + 600_000).toISOString(),
        });
        const before = await counts(log);
        expect((await records.authorize(agent, { proposal_id: proposal.id })).claim).toEqual(first.claim);
        expect(await counts(log)).toEqual(before);
        expect((await records.story(log, proposal.id)).claim).toEqual(first.claim);
      });

      it('takes a shorter deadline the gateway asks for, and never a longer one than the server allows', async () => {
        const { agent } = await setup();
        const short = await records.propose(agent, refund('k1'));
        const long = await records.propose(agent, refund('k2'));
        expect(
          (await records.authorize(agent, { proposal_id: short.proposal.id, claim_seconds: 5 })).claim
            .deadline,
        ).toBe(new Date(T0 + 5_000).toISOString());
        expect(
          (await records.authorize(agent, { proposal_id: long.proposal.id, claim_seconds: 86_400 })).claim
            .deadline,
        ).toBe(new Date(T0 + 600_000).toISOString());
        expect(
          await codeOf(records.authorize(agent, { proposal_id: long.proposal.id, claim_seconds: 0 })),
        ).toBe('VALIDATION_FAILED');
      });
    });

    describe('when the gateway posts no observation before the deadline', () => {
      it('the sweep records the outcome as unknown, by the server, once, and it never runs again', async () => {
        const { agent, alice, log } = await setup({ side_effect: 'irreversible' });
        const { proposal, approval } = await records.propose(agent, refund('k1'));
        await records.approve(alice, { request_id: approval!.id, validity: 'once' });
        const { claim, approval_use } = await records.authorize(agent, {
          proposal_id: proposal.id,
          claim_seconds: 30,
        });
        expect(await records.sweepLapsedClaims({ log })).toEqual([]);
        const swept = await later(31, () => records.sweepLapsedClaims({ log }));
        expect(swept).toMatchObject([
          {
            proposal_id: proposal.id,
            approval_use_id: approval_use!.id,
            executed_by: CLAIM_SWEEPER_IDENTITY,
            outcome: 'unknown',
            result: { reason: 'EXECUTION_CLAIM_LAPSED', claim_id: claim.id, claimed_by: 'agent:billing' },
          },
        ]);
        expect(await later(60, () => records.sweepLapsedClaims({ log }))).toEqual([]);
        const story = await records.story(log, proposal.id);
        expect(story).toMatchObject({ stage: 'executed', outcome: 'awaiting_resolution', claim });
        expect(story.events.map((e) => e.kind)).toContain('execution_claim');

        // The gateway comes back: its late account is refused and kept; it may not run it again.
        const late = { proposal_id: proposal.id, outcome: 'succeeded' };
        expect(await codeOf(records.observe(agent, late))).toBe('EXECUTION_CLAIM_LAPSED');
        expect(await codeOf(records.authorize(agent, { proposal_id: proposal.id }))).toBe(
          'EXECUTION_CLAIM_LAPSED',
        );
        expect((await records.story(log, proposal.id)).refusals).toMatchObject([
          { code: 'EXECUTION_CLAIM_LAPSED', attempted: late },
        ]);
        expect(await count('observations', log)).toBe(1);
      });

      it('refuses to authorize again once the deadline passed, even before the sweep', async () => {
        const { agent } = await setup();
        const { proposal } = await records.propose(agent, refund('k1'));
        await records.authorize(agent, { proposal_id: proposal.id, claim_seconds: 10 });
        expect(await later(10, () => codeOf(records.authorize(agent, { proposal_id: proposal.id })))).toBe(
          'EXECUTION_CLAIM_LAPSED',
        );
      });

      it('takes a late observation that arrives before the sweep, and the sweep then writes nothing', async () => {
        const { agent, log } = await setup();
        const { proposal } = await records.propose(agent, refund('k1'));
        await records.authorize(agent, { proposal_id: proposal.id, claim_seconds: 10 });
        const { observation } = await later(20, () =>
          records.observe(agent, { proposal_id: proposal.id, outcome: 'succeeded' }),
        );
        expect(observation.executed_by).toBe('agent:billing');
        expect(await later(20, () => records.sweepLapsedClaims({ log }))).toEqual([]);
      });
    });

    describe('when two server processes sweep at once', () => {
      it('records one outcome per lapsed claim', async () => {
        const { agent, log } = await setup();
        const other = createRecords(createLedger(database), { now: () => new Date(clock) });
        const ids: string[] = [];
        for (const key of ['k1', 'k2', 'k3']) {
          const { proposal } = await records.propose(agent, refund(key));
          await records.authorize(agent, { proposal_id: proposal.id, claim_seconds: 1 });
          ids.push(proposal.id);
        }
        const [a, b] = await later(2, () =>
          Promise.all([records.sweepLapsedClaims({ log }), other.sweepLapsedClaims({ log })]),
        );
        expect([...a, ...b].map((o) => o.proposal_id).sort()).toEqual([...ids].sort());
        expect(await count('observations', log)).toBe(3);
      });
    });
  });

  describe('record tables', () => {
    describe('when anyone tries to change a record', () => {
      it.each([
        ['UPDATE', (log: string) => sql`update proposals set arguments = '{}' where log_id = ${log}`],
        ['DELETE', (log: string) => sql`delete from decisions where log_id = ${log}`],
        ['TRUNCATE', () => sql`truncate observations`],
      ])('refuses %s in the database itself', async (_, statement) => {
        const { agent, log } = await setup();
        const { proposal } = await records.propose(agent, refund('k1'));
        await execute(agent, { proposal_id: proposal.id, outcome: 'succeeded' });
        await expect(database.rows(statement(log))).rejects.toThrow();
        expect(await count('proposals', log)).toBe(1);
        expect(await count('decisions', log)).toBe(1);
        expect(await count('observations', log)).toBe(1);
      });
    });

    describe('when a second row breaks a uniqueness rule', () => {
      it('is refused by the database, not only by the code', async () => {
        const { agent, log } = await setup();
        const { proposal, decision } = await records.propose(agent, refund('k1'));
        const before = await counts(log);
        const duplicate = ledger.transact(log, async (tx) => {
          const event = await tx.append({ kind: 'decision', entity: 'dec_dup', actor: 'x', payload: {} });
          await tx.db.execute(
            sql`insert into decisions (log_id, id, event_seq, proposal_id, verdict, reasons, repair, source, decided_by, decided_at)
                values (${log}, 'dec_dup', ${event.seq}, ${proposal.id}, 'allow', '[]', 'null', 'x', 'x', 'x')`,
          );
        });
        await expect(duplicate).rejects.toThrow();
        expect(decision).not.toBeNull();
        expect(await counts(log)).toEqual(before);
      });
    });

    describe('when the record tables agree with the chain', () => {
      it('reports nothing across a full story', async () => {
        const { agent, alice, log } = await setup({ side_effect: 'irreversible' });
        const { proposal, approval } = await records.propose(agent, refund('k1'));
        await records.approve(alice, { request_id: approval!.id });
        const { observation } = await execute(agent, {
          proposal_id: proposal.id,
          outcome: 'succeeded',
        });
        await records.recordVerification(alice, {
          observation_id: observation.id,
          checks: [{ name: 'refund.recorded', status: 'pass', source: 'ledger-api' }],
        });
        await records.observe(alice, { proposal_id: 'nope', outcome: 'succeeded' }).catch(() => {});
        expect(await failuresOf(log)).toEqual([]);
        expect((await ledger.verifyChain({ log })).ok).toBe(true);
      });
    });

    describe('when the database owner edits a row', () => {
      it('reports RECORD_MISMATCH at the row event seq', async () => {
        const { agent, log } = await setup();
        const { proposal } = await records.propose(agent, refund('k1'));
        await tamper(
          database,
          sql`update proposals set arguments = '{"amount":500,"currency":"EUR"}' where log_id = ${log} and id = ${proposal.id}`,
        );
        const [event] = (await ledger.events(log)).filter((e) => e.entity === proposal.id);
        expect(await failuresOf(log)).toEqual([
          expect.objectContaining({
            code: 'RECORD_MISMATCH',
            seq: event!.seq,
            table: 'proposals',
            id: proposal.id,
          }),
        ]);
      });

      it('reports RECORD_MISMATCH for a row edited into invalid JSON', async () => {
        const { agent, log } = await setup();
        const { decision } = await records.propose(agent, refund('k1'));
        await tamper(
          database,
          sql`update decisions set reasons = 'not json' where log_id = ${log} and id = ${decision!.id}`,
        );
        expect((await failuresOf(log)).map((f) => [f.code, f.id])).toEqual([
          ['RECORD_MISMATCH', decision!.id],
        ]);
      });
    });

    describe('when the database owner deletes a row', () => {
      it('reports RECORD_MISMATCH for the event left without its record', async () => {
        const { agent, log } = await setup();
        const { proposal } = await records.propose(agent, refund('k1'));
        const { observation } = await execute(agent, {
          proposal_id: proposal.id,
          outcome: 'succeeded',
        });
        await tamper(
          database,
          sql`delete from observations where log_id = ${log} and id = ${observation.id}`,
        );
        expect(await failuresOf(log)).toEqual([
          expect.objectContaining({ code: 'RECORD_MISMATCH', table: 'observations', id: observation.id }),
        ]);
      });
    });

    describe('when the database owner inserts a row no event accounts for', () => {
      it('reports RECORD_WITHOUT_EVENT for a missing or a foreign event', async () => {
        const { agent, log } = await setup();
        const { proposal, decision } = await records.propose(agent, refund('k1'));
        const head = (await ledger.head(log))!.seq;
        await tamper(
          database,
          sql`insert into observations (log_id, id, event_seq, proposal_id, decision_id, server_id, tool_name, executed_by, outcome, result, observed_at)
              values (${log}, 'obs_forged', ${head + 10}, ${proposal.id}, ${decision!.id}, 'payments', 'refund', 'agent:billing', 'succeeded', 'null', 'x')`,
        );
        await tamper(
          database,
          sql`insert into verifications (log_id, id, event_seq, observation_id, proposal_id, checks, status, verifier, verified_at)
              values (${log}, 'ver_forged', ${head}, 'obs_forged', ${proposal.id}, '[]', 'passed', 'x', 'x')`,
        );
        expect((await failuresOf(log)).map((f) => [f.code, f.table, f.id])).toEqual([
          ['RECORD_WITHOUT_EVENT', 'observations', 'obs_forged'],
          ['RECORD_WITHOUT_EVENT', 'verifications', 'ver_forged'],
        ]);
      });
    });
  });
  // Runs last: every log the tests above wrote through the records service (approvals once and
  // by window, denials, repairs, refusals, replays, supersessions, unknown outcomes …) must
  // verify, record rules included: a rule that flags what the server itself writes is wrong.
  describe('after every story above', () => {
    it('each log obeys every record rule verifyChain re-checks', async () => {
      const written = (await listLogs(database)).filter((log) => log.startsWith('records-'));
      expect(written.length).toBeGreaterThan(20);
      for (const log of written) {
        // (A few tests above edit rows on purpose: only the rules are asked about here.)
        const broken = (await ledger.verifyChain({ log })).failures.filter(
          (f) => f.code === 'RECORD_RULE_VIOLATION',
        );
        expect({ log, broken }).toEqual({ log, broken: [] });
      }
    }, 180_000);
  });
});
