import { testBackends } from '@vouch/ledger/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHarness, type Harness } from '../testing/app-harness';

// biome-ignore lint/suspicious/noExplicitAny: response bodies are read loosely, then pinned with toMatchObject
type Json = Record<string, any>;

/** The tables a records request can write; Merkle nodes and checkpoints follow the events. */
const WRITTEN = [
  'tools',
  'proposals',
  'decisions',
  'approval_requests',
  'approval_resolutions',
  'approval_uses',
  'observations',
  'refused_executions',
  'verifications',
  'audit_events',
];

describe.each(testBackends())('POST /v1/observations on $name', ({ open }) => {
  let h: Harness;
  const k = {} as Record<'admin' | 'gw' | 'gw2' | 'alice' | 'verifier' | 'auditor', string>;

  beforeAll(async () => {
    h = await createHarness({ open });
    k.admin = await h.keyFor('user:root', ['admin']);
    k.gw = await h.keyFor('agent:gw', ['gateway']);
    k.gw2 = await h.keyFor('agent:other', ['gateway']);
    k.alice = await h.keyFor('user:alice', ['approver']);
    k.verifier = await h.keyFor('service:checker', ['verifier']);
    k.auditor = await h.keyFor('user:audrey', ['auditor']);
    for (const tool of [
      { server_id: 'pay', tool_name: 'refund', side_effect: 'compensatable', approval_required: true },
      { server_id: 'pay', tool_name: 'lookup', side_effect: 'read_only' },
    ]) {
      expect((await h.call('POST', '/v1/tools', { key: k.admin, body: tool })).status).toBe(201);
    }
  });
  afterAll(async () => {
    await h?.close();
  });

  const call = (method: string, path: string, key: string, body?: unknown) => h.json(method, path, key, body);

  let n = 0;
  async function propose(tool: 'refund' | 'lookup') {
    n++;
    const proposed = await call('POST', '/v1/proposals', k.gw, {
      idempotency_key: `obs-${n}`,
      action: `pay.${tool}`,
      server_id: 'pay',
      tool_name: tool,
      target: { kind: 'account', id: `acct-${n}`, env: 'production' },
      arguments: { n },
      side_effect: tool === 'refund' ? 'compensatable' : 'read_only',
      postconditions: [{ name: 'refund.recorded' }],
    });
    expect(proposed.status).toBe(201);
    return proposed.body as Json;
  }

  const story = async (id: string) => (await call('GET', `/v1/proposals/${id}`, k.auditor)).body;
  const written = async () => {
    const counts = await h.rowCounts();
    return Object.fromEntries(WRITTEN.map((table) => [table, counts[table] ?? 0])) as Record<string, number>;
  };

  /** An allowed proposal with its observation recorded by `agent:gw`. */
  async function observed() {
    const { proposal } = await propose('lookup');
    const first = {
      proposal_id: proposal.id,
      outcome: 'succeeded',
      result: { rows: 1, account: { id: 'a', currency: 'EUR' } },
      transport_status: 200,
      tool_error: false,
      started_at: '2026-01-01T00:00:00.000Z',
      finished_at: '2026-01-01T00:00:01.000Z',
    };
    expect((await call('POST', `/v1/proposals/${proposal.id}/authorize`, k.gw, {})).status).toBe(200);
    const recorded = await call('POST', '/v1/observations', k.gw, first);
    expect(recorded.status).toBe(201);
    return { proposal, first, observation: recorded.body.observation as Json };
  }

  describe('when the same identity posts the same observation again', () => {
    it('replays it with 200 whatever the key order, and writes nothing', async () => {
      const { first, observation } = await observed();
      const before = await written();
      const reordered = {
        finished_at: first.finished_at,
        started_at: first.started_at,
        tool_error: false,
        transport_status: 200,
        result: { account: { currency: 'EUR', id: 'a' }, rows: 1 },
        outcome: 'succeeded',
        proposal_id: first.proposal_id,
      };
      const again = await call('POST', '/v1/observations', k.gw, reordered);
      expect(again).toEqual({ status: 200, body: { observation, replayed: true } });
      expect(await written()).toEqual(before);
    });
  });

  describe('when another account of a recorded execution is posted', () => {
    it.each([
      ['another outcome', 'gw', { outcome: 'failed' }],
      ['another result', 'gw', { result: { rows: 2, account: { id: 'a', currency: 'EUR' } } }],
      ['the same body from another identity', 'gw2', {}],
    ] as const)(
      'refuses %s with 409 OBSERVATION_CONFLICT and records only the refusal',
      async (_, who, change) => {
        const { proposal, first, observation } = await observed();
        const before = await written();
        const attempt = { ...first, ...change };
        const refused = await call('POST', '/v1/observations', k[who], attempt);
        expect(refused).toMatchObject({
          status: 409,
          body: {
            error: {
              code: 'OBSERVATION_CONFLICT',
              details: { proposal_id: proposal.id, observation_id: observation.id },
            },
          },
        });
        expect(await written()).toEqual({
          ...before,
          refused_executions: before.refused_executions! + 1,
          audit_events: before.audit_events! + 1,
        });
        const told = await story(proposal.id);
        expect(told.observation).toEqual(observation);
        // Another identity's attempt is recorded under it, in the chain, and leaves this story alone.
        const own = who === 'gw';
        expect(told.refusals).toMatchObject(
          own
            ? [
                {
                  id: refused.body.error.details.refusal_id,
                  code: 'OBSERVATION_CONFLICT',
                  attempted_by: 'agent:gw',
                  attempted: attempt,
                },
              ]
            : [],
        );
        if (own) expect(told.refusals[0].message).toContain(observation.id);
        expect(told.events.map((e: Json) => e.kind)).toEqual([
          'proposal',
          'decision',
          'execution_claim',
          'observation',
          ...(own ? ['execution_refused'] : []),
        ]);
        if (own) expect(told.events.at(-1)).toMatchObject({ entity: refused.body.error.details.refusal_id });
        expect(told).toMatchObject({ stage: 'executed', outcome: 'awaiting_verification' });
        // The refusal is a record like any other: the chain and the record tables agree with it.
        expect((await call('GET', '/v1/logs/default/verify', k.auditor)).body).toMatchObject({ ok: true });
      },
    );
  });

  describe('when a proposal goes through its life', () => {
    it('reports the outcome and stage of each step', async () => {
      const { proposal, approval } = await propose('refund');
      expect(await story(proposal.id)).toMatchObject({ stage: 'awaiting_approval', outcome: 'not_executed' });

      const early = await call('POST', '/v1/observations', k.gw, {
        proposal_id: proposal.id,
        outcome: 'succeeded',
      });
      expect(early.body.error.code).toBe('EXECUTION_NOT_AUTHORIZED');
      expect(await story(proposal.id)).toMatchObject({ stage: 'execution_refused', outcome: 'not_executed' });

      expect((await call('POST', `/v1/approvals/${approval.id}/approve`, k.alice, {})).status).toBe(200);
      expect((await call('POST', `/v1/proposals/${proposal.id}/authorize`, k.gw, {})).status).toBe(200);
      const timedOut = await call('POST', '/v1/observations', k.gw, {
        proposal_id: proposal.id,
        outcome: 'unknown',
      });
      expect(timedOut.status).toBe(201);
      expect(await story(proposal.id)).toMatchObject({ stage: 'executed', outcome: 'awaiting_resolution' });

      const verify = (status: 'pass' | 'fail' | 'inconclusive') =>
        call('POST', '/v1/verifications', k.verifier, {
          observation_id: timedOut.body.observation.id,
          checks: [{ name: 'refund.recorded', status, source: 'bank-books' }],
        });
      // The tool may still act: a pass read back this early is held, not definitive
      // (verifications.test.ts follows it past the settle time).
      expect((await verify('pass')).status).toBe(201);
      expect(await story(proposal.id)).toMatchObject({ stage: 'executed', outcome: 'awaiting_resolution' });
    });

    it.each([
      ['pass', 'verified'],
      ['fail', 'verification_failed'],
      ['inconclusive', 'unverified'],
    ] as const)('names a check that says %s %s', async (status, outcome) => {
      const { proposal, observation } = await observed();
      expect(await story(proposal.id)).toMatchObject({ stage: 'executed', outcome: 'awaiting_verification' });
      const verified = await call('POST', '/v1/verifications', k.verifier, {
        observation_id: observation.id,
        checks: [{ name: 'refund.recorded', status, source: 'bank-books' }],
      });
      expect(verified.status).toBe(201);
      expect((await story(proposal.id)).outcome).toBe(outcome);
    });

    it('reports a denied approval as approval_denied, never executed', async () => {
      const { proposal, approval } = await propose('refund');
      expect((await call('POST', `/v1/approvals/${approval.id}/deny`, k.alice, {})).status).toBe(200);
      expect(await story(proposal.id)).toMatchObject({ stage: 'approval_denied', outcome: 'not_executed' });
    });
  });
});
