import { createRecords } from '@vouch/ledger';
import { createVerifierRegistry } from '@vouch/verifier-sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApp } from '../app';
import { createHarness, type Harness } from '../testing/app-harness';
import { accountOpen, lookupDone } from '../testing/sample-verifiers';

// biome-ignore lint/suspicious/noExplicitAny: response bodies are read loosely, then pinned with toMatchObject
type Json = Record<string, any>;

let h: Harness;
const k = {} as Record<
  'admin' | 'gw' | 'gw2' | 'alice' | 'sam' | 'selfie' | 'policy' | 'verifier' | 'auditor',
  string
>;

beforeAll(async () => {
  h = await createHarness({
    verification: { registry: createVerifierRegistry([{ verifier: accountOpen }, { verifier: lookupDone }]) },
  });
  k.admin = await h.keyFor('user:root', ['admin']);
  k.gw = await h.keyFor('agent:gw', ['gateway'], {});
  k.gw2 = await h.keyFor('agent:other', ['gateway']);
  k.alice = await h.keyFor('user:alice', ['approver']);
  k.sam = await h.keyFor('user:sam', ['approver'], { environments: ['staging'] });
  k.selfie = await h.keyFor('user:selfie', ['gateway', 'approver']);
  k.policy = await h.keyFor('service:opa', ['policy']);
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
  await h.close();
});

const call = (method: string, path: string, key: string, body?: unknown) => h.json(method, path, key, body);

let n = 0;
function proposal(tool: 'refund' | 'lookup', extra: Json = {}) {
  n++;
  return {
    idempotency_key: `k-${n}`,
    action: `pay.${tool}`,
    server_id: 'pay',
    tool_name: tool,
    target: { kind: 'account', id: `acct-${n}`, env: 'production' },
    arguments: { n },
    side_effect: tool === 'refund' ? 'compensatable' : 'read_only',
    ...extra,
  };
}

describe('record routes', () => {
  describe('POST /v1/tools', () => {
    it('lets a gateway register only what it discovered, as irreversible', async () => {
      const declared = await call('POST', '/v1/tools', k.gw, {
        server_id: 'pay',
        tool_name: 'wire',
        side_effect: 'read_only',
      });
      expect(declared).toMatchObject({ status: 403, body: { error: { code: 'ROLE_FORBIDDEN' } } });
      const softened = await call('POST', '/v1/tools', k.gw, {
        server_id: 'pay',
        tool_name: 'wire',
        side_effect: 'read_only',
        source: 'discovery',
      });
      expect(softened.status).toBe(403);
      const discovered = await call('POST', '/v1/tools', k.gw, {
        server_id: 'pay',
        tool_name: 'wire',
        source: 'discovery',
      });
      expect(discovered).toMatchObject({
        status: 201,
        body: { tool: { side_effect: 'irreversible', source: 'discovery' } },
      });
    });

    it('replays the same registration with 200 and refuses a silent change with 409 TOOL_EXISTS', async () => {
      const again = await call('POST', '/v1/tools', k.admin, {
        server_id: 'pay',
        tool_name: 'lookup',
        side_effect: 'read_only',
      });
      expect(again).toMatchObject({ status: 200, body: { replayed: true } });
      const changed = await call('POST', '/v1/tools', k.admin, {
        server_id: 'pay',
        tool_name: 'lookup',
        side_effect: 'irreversible',
      });
      expect(changed).toMatchObject({ status: 409, body: { error: { code: 'TOOL_EXISTS' } } });
      const listed = await call('GET', '/v1/tools', k.gw);
      expect(listed.body.tools.map((t: Json) => t.tool_name).sort()).toEqual(['lookup', 'refund', 'wire']);
    });
  });

  describe('when a tool requires a scope', () => {
    it('allows a key that holds it and denies one that does not, from the key and not the body', async () => {
      await call('POST', '/v1/tools', k.admin, {
        server_id: 'pay',
        tool_name: 'balance',
        side_effect: 'read_only',
        required_scopes: ['pay:read'],
      });
      const scoped = await h.keyFor('agent:scoped', ['gateway'], { scopes: ['pay:read'] });
      const ask = { ...proposal('lookup'), tool_name: 'balance', action: 'pay.balance' };
      const allowed = await call('POST', '/v1/proposals', scoped, ask);
      expect(allowed.body.decision.verdict).toBe('allow');
      expect(allowed.body.proposal.requester_scopes).toEqual(['pay:read']);
      const denied = await call('POST', '/v1/proposals', k.gw, { ...ask, idempotency_key: 'other' });
      expect(denied.body.decision).toMatchObject({ verdict: 'deny', reasons: [{ code: 'MISSING_SCOPES' }] });
    });
  });

  describe('when an allowed proposal is executed', () => {
    it('refuses another identity with 403 IDENTITY_MISMATCH, records the owner once, replays with 200', async () => {
      const proposed = await call('POST', '/v1/proposals', k.gw, proposal('lookup'));
      expect(proposed).toMatchObject({ status: 201, body: { decision: { verdict: 'allow' } } });
      const id = proposed.body.proposal.id;
      const observation = { proposal_id: id, outcome: 'succeeded', result: { rows: 1 } };
      expect((await call('POST', '/v1/observations', k.gw2, observation)).body.error.code).toBe(
        'IDENTITY_MISMATCH',
      );
      expect((await call('POST', `/v1/proposals/${id}/authorize`, k.gw, {})).status).toBe(200);
      expect((await call('POST', '/v1/observations', k.gw, observation)).status).toBe(201);
      expect(await call('POST', '/v1/observations', k.gw, observation)).toMatchObject({
        status: 200,
        body: { replayed: true },
      });
      const story = await call('GET', `/v1/proposals/${id}`, k.auditor);
      // The other identity's attempt is recorded under it, never in the owner's story.
      expect(story.body.refusals).toHaveLength(0);
      expect(story.body.outcome).toBe('awaiting_verification');
    });

    it('runs the configured verifiers on POST /v1/observations/{id}/verify and derives passed', async () => {
      const proposed = await call(
        'POST',
        '/v1/proposals',
        k.gw,
        proposal('lookup', { postconditions: [{ name: 'lookup.done' }] }),
      );
      expect(
        (await call('POST', `/v1/proposals/${proposed.body.proposal.id}/authorize`, k.gw, {})).status,
      ).toBe(200);
      const { body } = await call('POST', '/v1/observations', k.gw, {
        proposal_id: proposed.body.proposal.id,
        outcome: 'succeeded',
      });
      const verified = await call('POST', `/v1/observations/${body.observation.id}/verify`, k.verifier);
      expect(verified).toMatchObject({
        status: 201,
        body: { status: 'passed', checks: [{ name: 'lookup.done', source: 'audit-replica' }] },
      });
      const story = await call('GET', `/v1/proposals/${proposed.body.proposal.id}`, k.gw);
      expect(story.body.outcome).toBe('verified');
    });

    it('refuses a supplied verification status', async () => {
      const posted = await call('POST', '/v1/verifications', k.verifier, {
        observation_id: 'obs_x',
        checks: [],
        status: 'passed',
      });
      expect(posted.status).toBe(400);
    });
  });

  describe('when preconditions are checked before execution', () => {
    it('answers 412 PRECONDITION_FAILED and claims nothing when one fails', async () => {
      const closed = await call('POST', '/v1/proposals', k.gw, {
        ...proposal('lookup', { preconditions: [{ name: 'account.open' }] }),
        target: { kind: 'account', id: 'closed', env: 'production' },
      });
      const refused = await call('POST', `/v1/proposals/${closed.body.proposal.id}/authorize`, k.gw);
      expect(refused).toMatchObject({ status: 412, body: { error: { code: 'PRECONDITION_FAILED' } } });
      const open = await call(
        'POST',
        '/v1/proposals',
        k.gw,
        proposal('lookup', { preconditions: [{ name: 'account.open' }] }),
      );
      const authorized = await call('POST', `/v1/proposals/${open.body.proposal.id}/authorize`, k.gw);
      expect(authorized).toMatchObject({ status: 200, body: { preconditions: { status: 'passed' } } });
    });
  });

  describe('when a proposal needs approval', () => {
    let approvalId = '';
    let proposalId = '';

    beforeAll(async () => {
      const proposed = await call('POST', '/v1/proposals', k.gw, proposal('refund'));
      expect(proposed.body.decision.verdict).toBe('require_approval');
      approvalId = proposed.body.approval.id;
      proposalId = proposed.body.proposal.id;
    });

    it('shows the canonical payload whose SHA-256 is the payload hash', async () => {
      const { createHash } = await import('node:crypto');
      const view = await call('GET', `/v1/approvals/${approvalId}`, k.alice);
      expect(createHash('sha256').update(view.body.canonical_payload).digest('hex')).toBe(
        view.body.request.payload_hash,
      );
    });

    it('refuses an approver limited to another environment with 403 ENVIRONMENT_FORBIDDEN and hides it from their list', async () => {
      const tried = await call('POST', `/v1/approvals/${approvalId}/approve`, k.sam);
      expect(tried).toMatchObject({ status: 403, body: { error: { code: 'ENVIRONMENT_FORBIDDEN' } } });
      const list = await call('GET', '/v1/approvals?status=pending', k.sam);
      expect(list.body.approvals.map((a: Json) => a.request.id)).not.toContain(approvalId);
    });

    it('accepts an optional body sent empty, with or without a content type', async () => {
      const variants: Array<Record<string, string>> = [{}, { 'content-type': 'application/json' }];
      for (const headers of variants) {
        const response = await h.app.request(`/v1/approvals/${approvalId}`, {
          headers: { authorization: `Bearer ${k.alice}` },
        });
        expect(response.status).toBe(200);
        const other = await call('POST', '/v1/proposals', k.gw, proposal('lookup'));
        const authorized = await h.app.request(`/v1/proposals/${other.body.proposal.id}/authorize`, {
          method: 'POST',
          headers: { authorization: `Bearer ${k.gw}`, ...headers },
          // Bytes, not a string: a string body would get a text/plain content type.
          body: new Uint8Array(0),
        });
        expect(authorized.status).toBe(200);
      }
    });

    it('refuses approving one’s own request with 403 SELF_APPROVAL', async () => {
      const own = await call('POST', '/v1/proposals', k.selfie, proposal('refund'));
      const tried = await call('POST', `/v1/approvals/${own.body.approval.id}/approve`, k.selfie);
      expect(tried).toMatchObject({ status: 403, body: { error: { code: 'SELF_APPROVAL' } } });
    });

    it('after a denial refuses execution with 403 EXECUTION_NOT_AUTHORIZED and answers a second answer with 409', async () => {
      const denied = await call('POST', `/v1/approvals/${approvalId}/deny`, k.alice, {
        comment: 'not this one',
      });
      expect(denied).toMatchObject({ status: 200, body: { status: 'denied' } });
      const again = await call('POST', `/v1/approvals/${approvalId}/approve`, k.alice);
      expect(again).toMatchObject({ status: 409, body: { error: { code: 'APPROVAL_RESOLVED' } } });
      const executed = await call('POST', '/v1/observations', k.gw, {
        proposal_id: proposalId,
        outcome: 'succeeded',
      });
      expect(executed.status).toBe(403);
      expect(['EXECUTION_NOT_AUTHORIZED', 'APPROVAL_RESOLVED']).toContain(executed.body.error.code);
    });
  });

  describe('when an external policy engine decides', () => {
    it('answers 202 to the proposal, 201 to the decision and 409 DECISION_EXISTS to a second one', async () => {
      const external = createApp({
        ledger: h.ledger,
        keys: h.keys,
        records: createRecords(h.ledger, { policy: 'external' }),
      });
      const ask = (method: string, path: string, key: string, body?: unknown) =>
        external.request(path, {
          method,
          headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
          ...(body === undefined ? {} : { body: JSON.stringify(body) }),
        });
      const proposed = await ask('POST', '/v1/proposals?log=ext', k.gw, proposal('lookup'));
      expect(proposed.status).toBe(202);
      const { proposal: p } = (await proposed.json()) as Json;
      const decision = {
        verdict: 'deny',
        source: 'opa',
        reasons: [{ code: 'NOPE', effect: 'deny', message: 'no' }],
      };
      const decided = await ask('POST', `/v1/proposals/${p.id}/decision?log=ext`, k.policy, decision);
      expect(decided.status).toBe(201);
      const twice = await ask('POST', `/v1/proposals/${p.id}/decision?log=ext`, k.policy, decision);
      expect(twice.status).toBe(409);
      expect(((await twice.json()) as Json).error.code).toBe('DECISION_EXISTS');
    });
  });
});
