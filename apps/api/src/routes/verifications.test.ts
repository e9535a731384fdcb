import { createRecords } from '@vouch/ledger';
import { testBackends } from '@vouch/ledger/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApp, type VouchApp } from '../app';
import { createHarness, type Harness } from '../testing/app-harness';

// biome-ignore lint/suspicious/noExplicitAny: response bodies are read loosely, then pinned with toMatchObject
type Json = Record<string, any>;

const T0 = Date.parse('2026-01-01T00:00:00.000Z');
const SETTLE_SECONDS = 600;

describe.each(testBackends())('verification routes on $name', ({ open }) => {
  let h: Harness;
  let app: VouchApp;
  let clock = T0;
  const k = {} as Record<'admin' | 'gw' | 'gwAsVerifier' | 'verifier' | 'both' | 'auditor', string>;

  beforeAll(async () => {
    h = await createHarness({ open });
    // No verifiers configured: `/verify` records NO_VERIFIER checks, as on a bare server.
    app = createApp({
      ledger: h.ledger,
      keys: h.keys,
      records: createRecords(h.ledger, {
        now: () => new Date(clock),
        unknownOutcomeSettleSeconds: SETTLE_SECONDS,
      }),
    });
    k.admin = await h.keyFor('user:root', ['admin']);
    k.gw = await h.keyFor('agent:gw', ['gateway']);
    k.gwAsVerifier = await h.keyFor('agent:gw', ['verifier']);
    k.verifier = await h.keyFor('service:checker', ['verifier']);
    k.both = await h.keyFor('service:hybrid', ['verifier', 'gateway']);
    k.auditor = await h.keyFor('user:audrey', ['auditor']);
    const tool = { server_id: 'pay', tool_name: 'refund', side_effect: 'compensatable' };
    expect((await call('POST', '/v1/tools', k.admin, tool)).status).toBe(201);
  });
  afterAll(async () => {
    await h?.close();
  });

  async function call(method: string, path: string, key: string, body?: unknown) {
    const response = await app.request(path, {
      method,
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    return { status: response.status, body: (await response.json()) as Json };
  }

  let n = 0;
  /** A refund proposed and executed by the gateway; its postconditions as given. */
  async function executed(postconditions: string[] = ['refund.recorded'], outcome = 'succeeded') {
    const proposed = await call('POST', '/v1/proposals', k.gw, {
      idempotency_key: `v-${++n}`,
      action: 'pay.refund',
      server_id: 'pay',
      tool_name: 'refund',
      target: { kind: 'payment', id: `pay_${n}`, env: 'production' },
      arguments: { amount: n },
      side_effect: 'compensatable',
      postconditions: postconditions.map((name) => ({ name })),
    });
    expect(proposed.body.decision?.verdict).toBe('allow');
    const id = proposed.body.proposal.id;
    expect((await call('POST', `/v1/proposals/${id}/authorize`, k.gw, {})).status).toBe(200);
    const observed = await call('POST', '/v1/observations', k.gw, {
      proposal_id: proposed.body.proposal.id,
      outcome,
    });
    expect(observed.status).toBe(201);
    const proposalId = proposed.body.proposal.id as string;
    const observationId = observed.body.observation.id as string;
    const post = (key: string, checks: Json[], extra: Json = {}) =>
      call('POST', '/v1/verifications', key, { observation_id: observationId, checks, ...extra });
    const story = async () => (await call('GET', `/v1/proposals/${proposalId}`, k.auditor)).body;
    return { proposalId, observationId, post, story };
  }
  const check = (status: string, name = 'refund.recorded') => ({ name, status, source: 'billing-ledger' });

  describe('when a verifier recorded a failure', () => {
    it('keeps it failed through a later inconclusive run and a later unsuperseding pass', async () => {
      const { observationId, post, story } = await executed();
      const failed = await post(k.verifier, [check('fail')]);
      expect(failed).toMatchObject({
        status: 201,
        body: { status: 'failed', verification_status: { status: 'failed' } },
      });
      // The gateway asks for verification on a server with no verifiers: NO_VERIFIER.
      const asked = await call('POST', `/v1/observations/${observationId}/verify`, k.gw);
      expect(asked).toMatchObject({
        status: 201,
        body: {
          status: 'inconclusive',
          checks: [{ reason: 'NO_VERIFIER' }],
          verification_status: { status: 'failed' },
        },
      });
      expect((await story()).outcome).toBe('verification_failed');
      const passed = await post(k.verifier, [check('pass')]);
      expect(passed.body).toMatchObject({ status: 'passed', verification_status: { status: 'failed' } });
      expect(await story()).toMatchObject({
        outcome: 'verification_failed',
        verification_status: { status: 'failed' },
      });
    });
  });

  describe('when someone tries to supersede the failure', () => {
    it('refuses the audited party with 403 SUPERSESSION_FORBIDDEN and writes nothing', async () => {
      const { observationId, post, story } = await executed();
      const failed = await post(k.verifier, [check('fail')]);
      const supersede = { supersedes: [failed.body.id], reason: 'the refund went through' };
      const before = await h.rowCounts();
      const asGateway = await call('POST', `/v1/observations/${observationId}/verify`, k.gw, supersede);
      expect(asGateway).toMatchObject({ status: 403, body: { error: { code: 'SUPERSESSION_FORBIDDEN' } } });
      const asHybrid = await post(k.both, [check('pass')], supersede);
      expect(asHybrid).toMatchObject({ status: 403, body: { error: { code: 'SUPERSESSION_FORBIDDEN' } } });
      // The identity that executed, holding a verifier key: refused by the ledger itself.
      const asExecutor = await post(k.gwAsVerifier, [check('pass')], supersede);
      expect(asExecutor).toMatchObject({ status: 403, body: { error: { code: 'SUPERSESSION_FORBIDDEN' } } });
      expect(await h.rowCounts()).toEqual(before);
      expect((await story()).outcome).toBe('verification_failed');
    });

    it('refuses a supersession without a reason with 400 and one of a non-definitive record with 409', async () => {
      const { post } = await executed();
      const failed = await post(k.verifier, [check('fail')]);
      const unproven = await post(k.verifier, [check('inconclusive')]);
      const before = await h.rowCounts();
      const noReason = await post(k.verifier, [check('pass')], { supersedes: [failed.body.id] });
      expect(noReason.status).toBe(400);
      const notDefinitive = await post(k.verifier, [check('pass')], {
        supersedes: [unproven.body.id],
        reason: 'recheck',
      });
      expect(notDefinitive).toMatchObject({ status: 409, body: { error: { code: 'SUPERSESSION_INVALID' } } });
      const missing = await post(k.verifier, [check('pass')], {
        supersedes: ['ver_missing'],
        reason: 'recheck',
      });
      expect(missing).toMatchObject({ status: 404, body: { error: { code: 'NOT_FOUND' } } });
      expect(await h.rowCounts()).toEqual(before);
    });

    it('lets a verifier re-verify, naming the failed record and why; the story keeps both', async () => {
      const { post, story } = await executed();
      const failed = await post(k.verifier, [check('fail')]);
      const again = await post(k.verifier, [check('pass')], {
        supersedes: [failed.body.id],
        reason: 'billing ledger replicated late',
      });
      expect(again).toMatchObject({
        status: 201,
        body: {
          status: 'passed',
          supersedes: [failed.body.id],
          reason: 'billing ledger replicated late',
          verification_status: { status: 'passed', superseded: [{ id: failed.body.id, by: again.body.id }] },
        },
      });
      const told = await story();
      expect(told.outcome).toBe('verified');
      expect(told.verifications.map((v: Json) => v.id)).toEqual([failed.body.id, again.body.id]);
      expect(told.events.filter((e: Json) => e.kind === 'verification')).toHaveLength(2);
    });
  });

  describe('when checks do not match the declared postconditions', () => {
    it('reports an undeclared check and does not pass on it', async () => {
      const { post, story } = await executed();
      const posted = await post(k.verifier, [check('pass', 'unrelated.thing')]);
      expect(posted.body).toMatchObject({
        status: 'inconclusive',
        undeclared: ['unrelated.thing'],
        verification_status: {
          status: 'inconclusive',
          reason: 'UNPROVEN',
          postconditions: [{ name: 'refund.recorded', status: 'inconclusive' }],
        },
      });
      expect((await story()).outcome).not.toBe('completed');
    });

    it('does not pass on one of two declared postconditions', async () => {
      const { post, story } = await executed(['refund.recorded', 'customer.notified']);
      const posted = await post(k.verifier, [check('pass')]);
      expect(posted.body).toMatchObject({
        status: 'inconclusive',
        verification_status: { status: 'inconclusive' },
      });
      expect((await story()).outcome).not.toBe('completed');
      await post(k.verifier, [check('pass', 'customer.notified')]);
      expect((await story()).outcome).toBe('verified');
    });
  });

  describe('when the tool timed out and may still act', () => {
    it('gives no definitive verdict until the outcome settles', async () => {
      const { post, story } = await executed(['refund.recorded'], 'unknown');
      try {
        clock += 81;
        const early = await post(k.verifier, [check('fail')]);
        expect(early.body).toMatchObject({
          status: 'inconclusive',
          held: 'OUTCOME_UNKNOWN',
          checks: [{ status: 'fail' }],
          verification_status: { reason: 'OUTCOME_UNKNOWN' },
        });
        const waiting = await story();
        expect(waiting.verification_status).toMatchObject({
          status: 'inconclusive',
          reason: 'OUTCOME_UNKNOWN',
          settles_at: new Date(T0 + SETTLE_SECONDS * 1000).toISOString(),
        });
        expect(waiting.outcome).toBe('awaiting_resolution');
        clock = T0 + SETTLE_SECONDS * 1000;
        const settled = await post(k.verifier, [check('pass')]);
        expect(settled.body).toMatchObject({ status: 'passed', verification_status: { status: 'passed' } });
        expect(settled.body.held).toBeUndefined();
        expect((await story()).outcome).toBe('verified');
      } finally {
        clock = T0;
      }
    });
  });
});
