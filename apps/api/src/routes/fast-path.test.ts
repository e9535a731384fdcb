import { payloadHashOf, proposalPayloadOf } from '@vouch/client';
import { testBackends } from '@vouch/ledger/testing';
import { createVerifierRegistry } from '@vouch/verifier-sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHarness, type Harness } from '../testing/app-harness';
import { accountOpen, lookupDone } from '../testing/sample-verifiers';

// biome-ignore lint/suspicious/noExplicitAny: response bodies are read loosely, then pinned with toMatchObject
type Json = Record<string, any>;

// The fast path of a governed call: `POST /v1/proposals?authorize=<hash>` proposes and, when
// the decision allows it, authorizes in one request; `POST /v1/observations?verify=true`
// observes and verifies in one. Two round trips for an allowed call, with the same records,
// checks and refusals as the four separate calls.

const WRITTEN = [
  'proposals',
  'decisions',
  'approval_requests',
  'approval_uses',
  'execution_claims',
  'observations',
  'refused_executions',
  'verifications',
  'audit_events',
];

describe.each(testBackends())('the fast path on $name', ({ open }) => {
  let h: Harness;
  const k = {} as Record<'admin' | 'gw' | 'auditor' | 'verifier', string>;

  beforeAll(async () => {
    h = await createHarness({
      open,
      verification: {
        registry: createVerifierRegistry([{ verifier: accountOpen }, { verifier: lookupDone }]),
      },
    });
    k.admin = await h.keyFor('user:root', ['admin']);
    k.gw = await h.keyFor('agent:gw', ['gateway']);
    k.auditor = await h.keyFor('user:audrey', ['auditor']);
    k.verifier = await h.keyFor('service:checker', ['verifier']);
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
  const written = async () => {
    const counts = await h.rowCounts();
    return Object.fromEntries(WRITTEN.map((table) => [table, counts[table] ?? 0])) as Record<string, number>;
  };

  let n = 0;
  function action(tool: 'refund' | 'lookup', extra: Json = {}) {
    n++;
    return {
      idempotency_key: `fast-${n}`,
      action: `pay.${tool}`,
      server_id: 'pay',
      tool_name: tool,
      target: { kind: 'account', id: `acct-${n}`, env: 'production' },
      arguments: { n },
      side_effect: tool === 'refund' ? 'compensatable' : 'read_only',
      ...extra,
    };
  }
  const hashOf = (body: Json) =>
    payloadHashOf(proposalPayloadOf(body as Parameters<typeof proposalPayloadOf>[0]));

  describe('POST /v1/proposals?authorize=<payload hash>', () => {
    it('authorizes an allowed proposal in the same request, with its execution claim', async () => {
      const body = action('lookup', { preconditions: [{ name: 'account.open' }] });
      const proposed = await call('POST', `/v1/proposals?authorize=${hashOf(body)}`, k.gw, body);
      expect(proposed.status).toBe(201);
      expect(proposed.body).toMatchObject({
        decision: { verdict: 'allow' },
        authorization: {
          proposal: { id: proposed.body.proposal.id },
          claim: { proposal_id: proposed.body.proposal.id, claimed_by: 'agent:gw' },
          preconditions: { status: 'passed' },
        },
        authorization_refused: null,
      });
      const story = (await call('GET', `/v1/proposals/${proposed.body.proposal.id}`, k.auditor)).body;
      expect(story.claim).toMatchObject({ id: proposed.body.authorization.claim.id });
      expect(story.stage).toBe('authorized');
    });

    describe('when it asks for a claim deadline (`&claim_seconds=`)', () => {
      const secondsOf = (claim: Json) => (Date.parse(claim.deadline) - Date.parse(claim.claimed_at)) / 1000;

      it('records the claim with that deadline, not the server’s default', async () => {
        const body = action('lookup');
        const proposed = await call(
          'POST',
          `/v1/proposals?authorize=${hashOf(body)}&claim_seconds=45`,
          k.gw,
          body,
        );
        expect(proposed.status).toBe(201);
        expect(secondsOf(proposed.body.authorization.claim)).toBe(45);
      });

      it('refuses a deadline that is not a whole number of seconds from 1 to 86400, writing nothing', async () => {
        for (const bad of ['0', '-5', '1.5', 'soon', '86401']) {
          const body = action('lookup');
          const before = await written();
          const proposed = await call(
            'POST',
            `/v1/proposals?authorize=${hashOf(body)}&claim_seconds=${bad}`,
            k.gw,
            body,
          );
          expect(proposed.status, bad).toBe(400);
          expect(proposed.body.error.code, bad).toMatch(/^[A-Z_]+$/);
          expect(await written(), bad).toEqual(before);
        }
      });
    });

    it('claims nothing for a hash other than the stored payload’s, and says why', async () => {
      const body = action('lookup');
      const before = await written();
      const proposed = await call('POST', `/v1/proposals?authorize=${'0'.repeat(64)}`, k.gw, body);
      expect(proposed.status).toBe(201);
      expect(proposed.body.authorization).toBeNull();
      expect(proposed.body.authorization_refused).toMatchObject({
        status: 403,
        code: 'EXECUTION_NOT_AUTHORIZED',
      });
      const after = await written();
      expect(after.execution_claims).toBe(before.execution_claims);
      expect(after.proposals).toBe(before.proposals! + 1);
    });

    it('refuses with the precondition’s checks, and claims nothing', async () => {
      const body = action('lookup', {
        target: { kind: 'account', id: 'closed', env: 'production' },
        preconditions: [{ name: 'account.open' }],
      });
      const before = await written();
      const proposed = await call('POST', `/v1/proposals?authorize=${hashOf(body)}`, k.gw, body);
      expect(proposed.status).toBe(201);
      expect(proposed.body.authorization).toBeNull();
      expect(proposed.body.authorization_refused).toMatchObject({
        status: 412,
        code: 'PRECONDITION_FAILED',
        details: { status: 'failed' },
      });
      expect((await written()).execution_claims).toBe(before.execution_claims);
    });

    it('leaves a proposal that needs an approval unauthorized, without a refusal', async () => {
      const body = action('refund');
      const proposed = await call('POST', `/v1/proposals?authorize=${hashOf(body)}`, k.gw, body);
      expect(proposed.status).toBe(201);
      expect(proposed.body).toMatchObject({
        decision: { verdict: 'require_approval' },
        authorization: null,
        authorization_refused: null,
      });
    });

    it('does not authorize a replayed proposal: the caller reads its story', async () => {
      const body = action('lookup');
      const first = await call('POST', '/v1/proposals', k.gw, body);
      expect(first.status).toBe(201);
      const again = await call('POST', `/v1/proposals?authorize=${hashOf(body)}`, k.gw, body);
      expect(again.status).toBe(200);
      expect(again.body).toMatchObject({ replayed: true, authorization: null, authorization_refused: null });
    });

    it('answers without the fast-path fields when it is not asked for', async () => {
      const proposed = await call('POST', '/v1/proposals', k.gw, action('lookup'));
      expect(proposed.status).toBe(201);
      expect(proposed.body).not.toHaveProperty('authorization');
    });

    it('refuses a malformed hash with 400 and writes nothing', async () => {
      const before = await written();
      const proposed = await call('POST', '/v1/proposals?authorize=ABC', k.gw, action('lookup'));
      expect(proposed.status).toBe(400);
      expect(proposed.body.error.code).toBe('INVALID_REQUEST');
      expect(proposed.body.error.message).toMatch(/authorize/);
      expect(await written()).toEqual(before);
    });
  });

  describe('POST /v1/observations?verify=true', () => {
    async function authorized(extra: Json = {}) {
      const body = action('lookup', { postconditions: [{ name: 'lookup.done' }], ...extra });
      const proposed = await call('POST', `/v1/proposals?authorize=${hashOf(body)}`, k.gw, body);
      expect(proposed.body.authorization).not.toBeNull();
      return proposed.body.proposal as Json;
    }
    const observation = (proposal: Json) => ({
      proposal_id: proposal.id,
      outcome: 'succeeded',
      result: { rows: 1 },
      payload_hash: proposal.payload_hash,
    });

    it('records the observation and the server’s verification in one request', async () => {
      const proposal = await authorized();
      const observed = await call('POST', '/v1/observations?verify=true', k.gw, observation(proposal));
      expect(observed.status).toBe(201);
      expect(observed.body).toMatchObject({
        replayed: false,
        observation: { proposal_id: proposal.id, outcome: 'succeeded' },
        verification: {
          proposal_id: proposal.id,
          status: 'passed',
          checks: [{ name: 'lookup.done', status: 'pass', source: 'audit-replica' }],
          verification_status: { status: 'passed' },
        },
        verification_refused: null,
      });
      const story = (await call('GET', `/v1/proposals/${proposal.id}`, k.auditor)).body;
      expect(story.verifications.map((v: Json) => v.id)).toEqual([observed.body.verification.id]);
      expect(story.outcome).toBe('verified');
    });

    it('does not verify a replayed observation again', async () => {
      const proposal = await authorized();
      const first = await call('POST', '/v1/observations?verify=true', k.gw, observation(proposal));
      expect(first.status).toBe(201);
      const before = await written();
      const again = await call('POST', '/v1/observations?verify=true', k.gw, observation(proposal));
      expect(again.status).toBe(200);
      expect(again.body).toMatchObject({ replayed: true, verification: null, verification_refused: null });
      expect((await written()).verifications).toBe(before.verifications);
    });

    it('refuses a verify flag other than true or false with 400 and writes nothing', async () => {
      const proposal = await authorized();
      const before = await written();
      const observed = await call('POST', '/v1/observations?verify=yes', k.gw, observation(proposal));
      expect(observed.status).toBe(400);
      expect(observed.body.error.code).toBe('INVALID_REQUEST');
      expect(await written()).toEqual(before);
    });

    it('keeps the refusal of an unauthorized observation as it is, and verifies nothing', async () => {
      const body = action('refund', { postconditions: [{ name: 'lookup.done' }] });
      const proposed = (await call('POST', '/v1/proposals', k.gw, body)).body;
      const before = await written();
      const observed = await call(
        'POST',
        '/v1/observations?verify=true',
        k.gw,
        observation(proposed.proposal),
      );
      expect(observed.status).toBe(403);
      expect(observed.body.error.code).toBe('EXECUTION_NOT_AUTHORIZED');
      const after = await written();
      expect(after.verifications).toBe(before.verifications);
      expect(after.observations).toBe(before.observations);
    });
  });

  it('records an allowed call in two requests that a chain verification accepts', async () => {
    const body = action('lookup', { postconditions: [{ name: 'lookup.done' }] });
    const proposed = await call('POST', `/v1/proposals?authorize=${hashOf(body)}`, k.gw, body);
    const observed = await call('POST', '/v1/observations?verify=true', k.gw, {
      proposal_id: proposed.body.proposal.id,
      outcome: 'succeeded',
      result: { rows: 1 },
      payload_hash: proposed.body.proposal.payload_hash,
    });
    expect(observed.body.verification.status).toBe('passed');
    const report = await call('GET', '/v1/logs/default/verify', k.auditor);
    expect(report.status).toBe(200);
    expect(report.body.ok).toBe(true);
  });
});
