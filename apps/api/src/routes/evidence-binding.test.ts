import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { testBackends } from '@vouch/ledger/testing';
import { createVerifierRegistry } from '@vouch/verifier-sdk';
import { createGuardedFetch, httpJsonVerifier } from '@vouch/verifiers';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHarness, type Harness } from '../testing/app-harness';

// biome-ignore lint/suspicious/noExplicitAny: response bodies are read loosely, then pinned with toMatchObject
type Json = Record<string, any>;

// The bank's refund API, independent of the payments tool: each refund belongs to one payment.
const REFUNDS: Record<string, { id: string; payment_id: string; amount: number; status: string }> = {
  rf_a: { id: 'rf_a', payment_id: 'pay_a', amount: 5000, status: 'succeeded' },
  rf_b: { id: 'rf_b', payment_id: 'pay_b', amount: 5000, status: 'succeeded' },
};
let bank: Server;
let base: string;

beforeAll(async () => {
  bank = createServer((req, res) => {
    const refund = REFUNDS[decodeURIComponent(req.url!.split('/').pop()!)];
    res.writeHead(refund ? 200 : 404, { 'content-type': 'application/json' });
    res.end(JSON.stringify(refund ?? { error: 'not found' }));
  });
  await new Promise<void>((resolve) => bank.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(bank.address() as AddressInfo).port}`;
});
afterAll(async () => {
  await new Promise((resolve) => bank?.close(resolve));
});

/** packages/verifiers/README.md's http-json example: the refund the result names, bound to the payment. */
function refundApi() {
  return createVerifierRegistry([
    {
      verifier: httpJsonVerifier,
      name: 'refund-api',
      handles: ['refund.recorded'],
      grants: {
        fetch: createGuardedFetch({ allowHosts: ['127.0.0.1'], resolveHost: async () => ['127.0.0.1'] }),
      },
      options: {
        url: `${base}/refunds/{observation.result.refund_id}`,
        source: 'bank-api',
        bind: [{ pointer: '/payment_id', from: 'target.id' }],
        evidenceRef: 'refund:{result.id}',
        assertions: [
          { op: 'equals', pointer: '/status', value: 'succeeded' },
          { op: 'equals', pointer: '/amount', from: 'arguments.amount' },
        ],
      },
    },
  ]);
}

describe.each(testBackends())('evidence bound to its proposal, on $name', ({ open }) => {
  let h: Harness;
  const k = {} as Record<'gw' | 'verifier' | 'auditor', string>;

  beforeAll(async () => {
    h = await createHarness({ open, verification: { registry: refundApi() } });
    const admin = await h.keyFor('user:root', ['admin']);
    k.gw = await h.keyFor('agent:gw', ['gateway']);
    k.verifier = await h.keyFor('service:checker', ['verifier']);
    k.auditor = await h.keyFor('user:audrey', ['auditor']);
    const tool = { server_id: 'payments-mcp', tool_name: 'refund', side_effect: 'compensatable' };
    expect((await h.json('POST', '/v1/tools', admin, tool)).status).toBe(201);
  });
  afterAll(async () => {
    await h?.close();
  });

  let n = 0;
  /** A refund of 5000 on `payment`, proposed and executed; the tool's result names `refundId`. */
  async function refunded(payment: string, refundId: string) {
    const proposed = await h.json('POST', '/v1/proposals', k.gw, {
      idempotency_key: `evidence-${++n}`,
      action: 'payments.refund',
      server_id: 'payments-mcp',
      tool_name: 'refund',
      target: { kind: 'payment', id: payment, env: 'test' },
      arguments: { amount: 5000 },
      side_effect: 'compensatable',
      postconditions: [{ name: 'refund.recorded' }],
    });
    expect(proposed.body.decision?.verdict).toBe('allow');
    const authorized = await h.json('POST', `/v1/proposals/${proposed.body.proposal.id}/authorize`, k.gw, {});
    expect(authorized.status).toBe(200);
    const observed = await h.json('POST', '/v1/observations', k.gw, {
      proposal_id: proposed.body.proposal.id,
      outcome: 'succeeded',
      result: { refund_id: refundId },
    });
    expect(observed.status).toBe(201);
    return { proposalId: proposed.body.proposal.id as string, observationId: observed.body.observation.id };
  }
  const verify = (observationId: string) =>
    h.json('POST', `/v1/observations/${observationId}/verify`, k.gw) as Promise<{
      status: number;
      body: Json;
    }>;

  describe("when the second proposal's result names the first one's refund (the README's attack)", () => {
    it('passes the first and does not pass the second', async () => {
      const first = await refunded('pay_a', 'rf_a');
      const second = await refunded('pay_b', 'rf_a');
      const one = await verify(first.observationId);
      expect(one.body).toMatchObject({ status: 'passed', checks: [{ evidence_ref: 'refund:rf_a' }] });
      const two = await verify(second.observationId);
      expect(two.status).toBe(201);
      expect(two.body.verification_status.status).not.toBe('passed');
      expect(two.body.checks[0]).toMatchObject({ status: 'fail', observed: { '/payment_id': 'pay_a' } });
      const story = await h.json('GET', `/v1/proposals/${second.proposalId}`, k.auditor);
      expect(story.body.outcome).not.toBe('verified');
    });
  });

  describe('when one refund is offered for two proposals of the same payment', () => {
    it('records the second pass as inconclusive EVIDENCE_REUSED, naming the first proposal', async () => {
      const first = await refunded('pay_b', 'rf_b');
      const second = await refunded('pay_b', 'rf_b');
      const one = await verify(first.observationId);
      expect(one.body.status).toBe('passed');
      const two = await verify(second.observationId);
      expect(two.body).toMatchObject({
        status: 'inconclusive',
        verification_status: { status: 'inconclusive' },
        checks: [
          {
            status: 'inconclusive',
            reason: 'EVIDENCE_REUSED',
            reported: 'pass',
            evidence_ref: 'refund:rf_b',
            evidence_reused: { proposal_id: first.proposalId, verification_id: one.body.id },
          },
        ],
      });
    });

    it('records an external verifier posting that reference for another proposal the same way', async () => {
      REFUNDS.rf_c = { id: 'rf_c', payment_id: 'pay_c', amount: 5000, status: 'succeeded' };
      const owner = await refunded('pay_c', 'rf_c');
      const first = await verify(owner.observationId);
      expect(first.body.status).toBe('passed');
      const other = await refunded('pay_c', 'rf_c');
      const posted = await h.json('POST', '/v1/verifications', k.verifier, {
        observation_id: other.observationId,
        checks: [
          { name: 'refund.recorded', status: 'pass', source: 'bank-api', evidence_ref: 'refund:rf_c' },
        ],
      });
      expect(posted.status).toBe(201);
      expect(posted.body).toMatchObject({
        status: 'inconclusive',
        checks: [
          {
            status: 'inconclusive',
            reason: 'EVIDENCE_REUSED',
            evidence_reused: { proposal_id: owner.proposalId, verification_id: first.body.id },
          },
        ],
      });
    });

    it('refuses an external check that says itself which proposal the evidence proved', async () => {
      const { observationId } = await refunded('pay_a', 'rf_z');
      const before = await h.rowCounts();
      const posted = await h.json('POST', '/v1/verifications', k.verifier, {
        observation_id: observationId,
        checks: [
          {
            name: 'refund.recorded',
            status: 'pass',
            source: 'bank-api',
            evidence_reused: { proposal_id: 'prop_x', verification_id: 'ver_x' },
          },
        ],
      });
      expect(posted.status).toBe(400);
      expect(posted.body.error).toMatchObject({
        code: 'INVALID_REQUEST',
        details: { issues: [{ path: '/checks/0/evidence_reused' }] },
      });
      expect(await h.rowCounts()).toEqual(before);
    });
  });

  describe('when the same proposal is verified again with the same reference', () => {
    it('passes again: re-verifying a proposal is no reuse', async () => {
      const { proposalId, observationId } = await refunded('pay_a', 'rf_a2');
      REFUNDS.rf_a2 = { id: 'rf_a2', payment_id: 'pay_a', amount: 5000, status: 'succeeded' };
      expect((await verify(observationId)).body.status).toBe('passed');
      const again = await verify(observationId);
      expect(again.body).toMatchObject({
        status: 'passed',
        checks: [{ status: 'pass', evidence_ref: 'refund:rf_a2' }],
      });
      const posted = await h.json('POST', '/v1/verifications', k.verifier, {
        observation_id: observationId,
        checks: [
          { name: 'refund.recorded', status: 'pass', source: 'bank-api', evidence_ref: 'refund:rf_a2' },
        ],
      });
      expect(posted.body.status).toBe('passed');
      const story = await h.json('GET', `/v1/proposals/${proposalId}`, k.auditor);
      expect(story.body.verification_status.status).toBe('passed');
    });
  });
});
