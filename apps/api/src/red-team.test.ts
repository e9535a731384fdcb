import { createRecords } from '@vouch/ledger';
import { testBackends } from '@vouch/ledger/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApp, type VouchApp } from './app';
import { createHarness, type Harness } from './testing/app-harness';

// Attacks of the audited party through the HTTP API (the threat model in docs/chain.md:
// the gateway can post anything it likes; it must not be able to change what a reviewer
// reads about its own actions). Each case is one attack and what the API must answer.

// biome-ignore lint/suspicious/noExplicitAny: response bodies are read loosely, then pinned with toMatchObject
type Json = Record<string, any>;

describe.each(testBackends())('red team: the HTTP API on $name', ({ open }) => {
  let h: Harness;
  let app: VouchApp;
  const k = {} as Record<
    'admin' | 'gw' | 'gwAsVerifier' | 'proposerAsVerifier' | 'verifier' | 'auditor',
    string
  >;

  beforeAll(async () => {
    h = await createHarness({ open });
    app = createApp({ ledger: h.ledger, keys: h.keys, records: createRecords(h.ledger) });
    k.admin = await h.keyFor('user:root', ['admin']);
    k.gw = await h.keyFor('agent:gw', ['gateway']);
    k.gwAsVerifier = await h.keyFor('agent:gw', ['verifier']);
    k.verifier = await h.keyFor('service:checker', ['verifier']);
    k.auditor = await h.keyFor('user:audrey', ['auditor']);
    const tool = { server_id: 'pay', tool_name: 'refund', side_effect: 'compensatable' };
    expect((await call('POST', '/v1/tools', k.admin, tool)).status).toBe(201);
  });
  afterAll(async () => {
    await h?.close();
  });

  async function call(method: string, path: string, key: string, body?: unknown, raw?: string) {
    const response = await app.request(path, {
      method,
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      ...(raw !== undefined ? { body: raw } : body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    return { status: response.status, body: (await response.json()) as Json };
  }

  let n = 0;
  /** A refund proposed and executed by the gateway, declaring `refund.recorded`. */
  async function executed() {
    const proposed = await call('POST', '/v1/proposals', k.gw, {
      idempotency_key: `red-${++n}`,
      action: 'pay.refund',
      server_id: 'pay',
      tool_name: 'refund',
      target: { kind: 'payment', id: `pay_${n}`, env: 'production' },
      arguments: { amount: n },
      side_effect: 'compensatable',
      postconditions: [{ name: 'refund.recorded' }],
    });
    expect(proposed.body.decision?.verdict).toBe('allow');
    const proposalId = proposed.body.proposal.id as string;
    const observed = await call('POST', '/v1/observations', k.gw, {
      proposal_id: proposalId,
      outcome: 'succeeded',
    });
    expect(observed.status).toBe(201);
    const observationId = observed.body.observation.id as string;
    const story = async () => (await call('GET', `/v1/proposals/${proposalId}`, k.auditor)).body;
    return { proposalId, observationId, story };
  }
  const pass = { name: 'refund.recorded', status: 'pass', source: 'billing-ledger' };

  describe('the identity that executed, holding a verifier key, posts a pass of its own action', () => {
    it('the check is kept but proves nothing: the outcome stays unverified', async () => {
      const { observationId, story } = await executed();
      const posted = await call('POST', '/v1/verifications', k.gwAsVerifier, {
        observation_id: observationId,
        checks: [pass],
      });
      expect(posted.status).toBe(201);
      expect(posted.body).toMatchObject({
        status: 'inconclusive',
        checks: [
          { name: 'refund.recorded', status: 'inconclusive', reason: 'NOT_INDEPENDENT', reported: 'pass' },
        ],
      });
      expect((await story()).outcome).toBe('unverified');
      // An independent verifier's pass still proves it.
      await call('POST', '/v1/verifications', k.verifier, { observation_id: observationId, checks: [pass] });
      expect((await story()).outcome).toBe('verified');
    });
  });
});
