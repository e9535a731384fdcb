import { createVouchClient, payloadHashOf, proposalPayloadOf } from '@vouch/client';
import { testBackends } from '@vouch/ledger/testing';
import { createVerifierRegistry } from '@vouch/verifier-sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHarness, type Harness } from '../testing/app-harness';
import { accountOpen } from '../testing/sample-verifiers';

// Every execution is claimed (docs/verification.md): an observation needs the claim
// `authorize` records, the preconditions run at authorize and their checks are in the chain,
// a refused attempt by another identity leaves the proposal alone, and an approval whose
// approver's key was revoked before its use no longer authorizes.

// biome-ignore lint/suspicious/noExplicitAny: response bodies are read loosely, then pinned with toMatchObject
type Json = Record<string, any>;

describe.each(testBackends())('every execution is claimed, over HTTP on $name', ({ open }) => {
  let h: Harness;
  const k = {} as Record<'admin' | 'gw' | 'gw2' | 'alice' | 'bob' | 'auditor', string>;

  beforeAll(async () => {
    h = await createHarness({
      open,
      // `account.open` has a verifier on this server (it fails for target id `closed`);
      // `stock.reserved` has none, so no check can prove it.
      verification: { registry: createVerifierRegistry([{ verifier: accountOpen }]) },
    });
    k.admin = await h.keyFor('user:root', ['admin']);
    k.gw = await h.keyFor('agent:gw', ['gateway']);
    k.gw2 = await h.keyFor('agent:other', ['gateway']);
    k.alice = await h.keyFor('user:alice', ['approver']);
    k.bob = await h.keyFor('user:bob', ['approver']);
    k.auditor = await h.keyFor('user:audrey', ['auditor']);
    for (const tool of [
      { server_id: 'pay', tool_name: 'refund', side_effect: 'compensatable', approval_required: true },
      { server_id: 'pay', tool_name: 'lookup', side_effect: 'read_only' },
      { server_id: 'pay', tool_name: 'peek', side_effect: 'read_only', unproven_preconditions: 'warn' },
    ]) {
      expect((await h.call('POST', '/v1/tools', { key: k.admin, body: tool })).status).toBe(201);
    }
  });
  afterAll(async () => {
    await h?.close();
  });

  const call = (method: string, path: string, key: string, body?: unknown) => h.json(method, path, key, body);
  const story = async (id: string) => (await call('GET', `/v1/proposals/${id}`, k.auditor)).body as Json;
  const count = async (table: string) => (await h.rowCounts())[table] ?? 0;
  const chainOk = async () => (await call('GET', '/v1/logs/default/verify', k.auditor)).body.ok;
  const eventsOfKind = async (kind: string) =>
    ((await call('GET', '/v1/logs/default/events?limit=1000', k.auditor)).body.events as Json[]).filter(
      (e) => e.kind === kind,
    );

  let n = 0;
  async function propose(tool: 'refund' | 'lookup' | 'peek', extra: Json = {}) {
    n++;
    const proposed = await call('POST', '/v1/proposals', k.gw, {
      idempotency_key: `claim-${n}`,
      action: `pay.${tool}`,
      server_id: 'pay',
      tool_name: tool,
      target: { kind: 'account', id: `acct-${n}`, env: 'production' },
      arguments: { n },
      side_effect: tool === 'refund' ? 'compensatable' : 'read_only',
      ...extra,
    });
    expect(proposed.status).toBe(201);
    return proposed.body as Json;
  }

  describe('when a gateway observes without authorizing', () => {
    it('refuses an allowed proposal with 409 EXECUTION_NOT_CLAIMED and records the attempt under the caller', async () => {
      const { proposal } = await propose('lookup');
      const attempt = { proposal_id: proposal.id, outcome: 'succeeded', result: { rows: 1 } };
      const refused = await call('POST', '/v1/observations', k.gw, attempt);
      expect(refused).toMatchObject({
        status: 409,
        body: { error: { code: 'EXECUTION_NOT_CLAIMED', details: { proposal_id: proposal.id } } },
      });
      expect(await count('observations')).toBe(0);
      const told = await story(proposal.id);
      expect(told.observation).toBeNull();
      expect(told.refusals).toMatchObject([
        {
          id: refused.body.error.details.refusal_id,
          code: 'EXECUTION_NOT_CLAIMED',
          attempted_by: 'agent:gw',
          attempted: attempt,
        },
      ]);
      // Authorized, it runs: the refusal closed nothing.
      expect((await call('POST', `/v1/proposals/${proposal.id}/authorize`, k.gw, {})).status).toBe(200);
      expect((await call('POST', '/v1/observations', k.gw, attempt)).status).toBe(201);
      expect(await chainOk()).toBe(true);
    });

    it('refuses an approved-once proposal and leaves its approval unused', async () => {
      const { proposal, approval } = await propose('refund');
      expect((await call('POST', `/v1/approvals/${approval.id}/approve`, k.alice, {})).status).toBe(200);
      const uses = await count('approval_uses');
      const refused = await call('POST', '/v1/observations', k.gw, {
        proposal_id: proposal.id,
        outcome: 'succeeded',
      });
      expect(refused).toMatchObject({ status: 409, body: { error: { code: 'EXECUTION_NOT_CLAIMED' } } });
      expect(await count('approval_uses')).toBe(uses);
      expect(await count('observations')).toBe(1);
      expect((await call('GET', `/v1/approvals/${approval.id}`, k.alice)).body.status).toBe('approved');
      const authorized = await call('POST', `/v1/proposals/${proposal.id}/authorize`, k.gw, {});
      expect(authorized.body.approval_use).toMatchObject({ request_id: approval.id });
    });

    it('refuses an unknown outcome the same way (the sweeper alone records one without a post)', async () => {
      const { proposal } = await propose('lookup');
      const refused = await call('POST', '/v1/observations', k.gw, {
        proposal_id: proposal.id,
        outcome: 'unknown',
      });
      expect(refused.body.error.code).toBe('EXECUTION_NOT_CLAIMED');
    });
  });

  describe('when a precondition is checked at authorize', () => {
    it('blocks one the server’s verifier fails with 412 PRECONDITION_FAILED, and keeps the checks in the chain', async () => {
      const { proposal } = await propose('lookup', {
        target: { kind: 'account', id: 'closed', env: 'production' },
        preconditions: [{ name: 'account.open' }],
      });
      const refused = await call('POST', `/v1/proposals/${proposal.id}/authorize`, k.gw, {});
      expect(refused).toMatchObject({
        status: 412,
        body: {
          error: {
            code: 'PRECONDITION_FAILED',
            details: {
              proposal_id: proposal.id,
              status: 'failed',
              checks: [{ name: 'account.open', status: 'fail', source: 'core-banking' }],
            },
          },
        },
      });
      const told = await story(proposal.id);
      expect(told.claim).toBeNull();
      expect(told.refusals).toMatchObject([
        {
          id: refused.body.error.details.refusal_id,
          code: 'PRECONDITION_FAILED',
          attempted_by: 'agent:gw',
          attempted: {
            authorize: { proposal_id: proposal.id },
            preconditions: { status: 'failed', checks: [{ name: 'account.open', status: 'fail' }] },
          },
        },
      ]);
      expect(told.events.map((e: Json) => e.kind)).toEqual(['proposal', 'decision', 'execution_refused']);
      expect(await chainOk()).toBe(true);
    });

    it('blocks one no check proves with 412 PRECONDITION_UNPROVEN by default, using no approval', async () => {
      const { proposal, approval } = await propose('refund', { preconditions: [{ name: 'stock.reserved' }] });
      expect((await call('POST', `/v1/approvals/${approval.id}/approve`, k.alice, {})).status).toBe(200);
      const refused = await call('POST', `/v1/proposals/${proposal.id}/authorize`, k.gw, {});
      expect(refused).toMatchObject({
        status: 412,
        body: {
          error: {
            code: 'PRECONDITION_UNPROVEN',
            details: { status: 'inconclusive', checks: [{ name: 'stock.reserved', reason: 'NO_VERIFIER' }] },
          },
        },
      });
      expect((await story(proposal.id)).approval.uses).toEqual([]);
      expect((await call('GET', `/v1/approvals/${approval.id}`, k.alice)).body.status).toBe('approved');
    });

    it('records the checks and their status in the claim when they pass', async () => {
      const { proposal } = await propose('lookup', { preconditions: [{ name: 'account.open' }] });
      const authorized = await call('POST', `/v1/proposals/${proposal.id}/authorize`, k.gw, {});
      expect(authorized).toMatchObject({
        status: 200,
        body: {
          claim: { preconditions: { status: 'passed', checks: [{ name: 'account.open', status: 'pass' }] } },
          preconditions: { status: 'passed' },
        },
      });
      const [event] = (await eventsOfKind('execution_claim')).filter(
        (e) => e.entity === authorized.body.claim.id,
      );
      expect(JSON.parse(event!.payload)).toEqual(authorized.body.claim);
      expect((await story(proposal.id)).claim).toEqual(authorized.body.claim);
      expect(await chainOk()).toBe(true);
    });

    it('runs them on the fast path too: a blocked ?authorize= is refused beside the proposal and recorded', async () => {
      n++;
      const action = {
        idempotency_key: `claim-${n}`,
        action: 'pay.lookup',
        server_id: 'pay',
        tool_name: 'lookup',
        target: { kind: 'account', id: 'closed', env: 'production' },
        arguments: { n },
        side_effect: 'read_only',
        preconditions: [{ name: 'account.open' }],
      };
      const hash = payloadHashOf(proposalPayloadOf(action as Parameters<typeof proposalPayloadOf>[0]));
      const proposed = await call('POST', `/v1/proposals?authorize=${hash}`, k.gw, action);
      expect(proposed).toMatchObject({
        status: 201,
        body: { authorization: null, authorization_refused: { status: 412, code: 'PRECONDITION_FAILED' } },
      });
      const told = await story(proposed.body.proposal.id);
      expect(told.claim).toBeNull();
      expect(told.refusals).toMatchObject([
        { code: 'PRECONDITION_FAILED', attempted: { preconditions: { status: 'failed' } } },
      ]);
    });

    it('runs nothing and records no checks for a proposal with no preconditions', async () => {
      const { proposal } = await propose('lookup');
      const authorized = await call('POST', `/v1/proposals/${proposal.id}/authorize`, k.gw, {});
      expect(authorized.body.preconditions).toBeNull();
      expect(authorized.body.claim).not.toHaveProperty('preconditions');
    });
  });

  describe('when the tool’s registration says unproven_preconditions: warn', () => {
    it('lets an unproven precondition through with the unproven checks in the claim', async () => {
      const { proposal } = await propose('peek', { preconditions: [{ name: 'stock.reserved' }] });
      const authorized = await call('POST', `/v1/proposals/${proposal.id}/authorize`, k.gw, {});
      expect(authorized).toMatchObject({
        status: 200,
        body: {
          claim: {
            preconditions: {
              status: 'inconclusive',
              checks: [{ name: 'stock.reserved', status: 'inconclusive', reason: 'NO_VERIFIER' }],
            },
          },
        },
      });
      expect((await story(proposal.id)).claim.preconditions.status).toBe('inconclusive');
      expect(await chainOk()).toBe(true);
    });

    it('still blocks a failed one', async () => {
      const { proposal } = await propose('peek', {
        target: { kind: 'account', id: 'closed', env: 'production' },
        preconditions: [{ name: 'account.open' }],
      });
      const refused = await call('POST', `/v1/proposals/${proposal.id}/authorize`, k.gw, {});
      expect(refused.body.error.code).toBe('PRECONDITION_FAILED');
    });

    it('shows the mode in the registry', async () => {
      const tools = (await call('GET', '/v1/tools', k.admin)).body.tools as Json[];
      expect(tools.find((t) => t.tool_name === 'peek')).toMatchObject({ unproven_preconditions: 'warn' });
      expect(tools.find((t) => t.tool_name === 'lookup')).not.toHaveProperty('unproven_preconditions');
    });
  });

  describe('when a second gateway posts an observation of someone else’s proposal', () => {
    it.each([
      ['before it was authorized', false],
      ['after it was authorized', true],
    ])('%s: is refused, recorded under that gateway, and leaves the story unchanged', async (_, claimed) => {
      const { proposal } = await propose('lookup');
      if (claimed) {
        expect((await call('POST', `/v1/proposals/${proposal.id}/authorize`, k.gw, {})).status).toBe(200);
      }
      const before = await story(proposal.id);
      expect(before.stage).toBe('authorized');
      const refused = await call('POST', '/v1/observations', k.gw2, {
        proposal_id: proposal.id,
        outcome: 'failed',
        result: { message: 'the refund bounced, call the other gateway' },
      });
      expect(refused).toMatchObject({ status: 403, body: { error: { code: 'IDENTITY_MISMATCH' } } });
      expect(await story(proposal.id)).toEqual(before);
      const [kept] = (await eventsOfKind('execution_refused')).filter(
        (e) => e.entity === refused.body.error.details.refusal_id,
      );
      expect(kept).toMatchObject({ actor: 'agent:other' });
      // The first gateway's own execution goes on as if nothing happened.
      if (claimed) {
        const observed = await call('POST', '/v1/observations', k.gw, {
          proposal_id: proposal.id,
          outcome: 'succeeded',
        });
        expect(observed.status).toBe(201);
      }
    });
  });

  describe('when the approver’s key is revoked before the approval is used', () => {
    const keyIdOf = async (identity: string) =>
      ((await call('GET', '/v1/keys', k.admin)).body.keys as Json[]).find((key) => key.identity === identity)!
        .id as string;

    it('refuses authorize with 409 APPROVER_KEY_REVOKED and uses nothing; a new approval authorizes', async () => {
      const carol = await h.keyFor('user:carol', ['approver']);
      const { proposal, approval } = await propose('refund');
      expect((await call('POST', `/v1/approvals/${approval.id}/approve`, carol, {})).status).toBe(200);
      expect((await call('POST', `/v1/keys/${await keyIdOf('user:carol')}/revoke`, k.admin)).status).toBe(
        200,
      );
      const uses = await count('approval_uses');
      const refused = await call('POST', `/v1/proposals/${proposal.id}/authorize`, k.gw, {});
      expect(refused).toMatchObject({
        status: 409,
        body: { error: { code: 'APPROVER_KEY_REVOKED', details: { proposal_id: proposal.id } } },
      });
      expect(await count('approval_uses')).toBe(uses);
      // Nor can the observation skip the check.
      const observed = await call('POST', '/v1/observations', k.gw, {
        proposal_id: proposal.id,
        outcome: 'succeeded',
      });
      expect(observed.body.error.code).toBe('EXECUTION_NOT_CLAIMED');
      // Proposed again, the same payload opens a new request another approver answers.
      const { action, server_id, tool_name, target, arguments: args, side_effect } = proposal;
      const again = await call('POST', '/v1/proposals', k.gw, {
        ...{ action, server_id, tool_name, target, arguments: args, side_effect },
        idempotency_key: `${proposal.idempotency_key}-again`,
      });
      expect(again.body.approval.id).not.toBe(approval.id);
      expect((await call('POST', `/v1/approvals/${again.body.approval.id}/approve`, k.bob, {})).status).toBe(
        200,
      );
      const authorized = await call('POST', `/v1/proposals/${again.body.proposal.id}/authorize`, k.gw, {});
      expect(authorized.status).toBe(200);
    });

    it('keeps an approval used before the revocation: the execution it claimed goes on', async () => {
      const dave = await h.keyFor('user:dave', ['approver']);
      const { proposal, approval } = await propose('refund');
      expect((await call('POST', `/v1/approvals/${approval.id}/approve`, dave, {})).status).toBe(200);
      expect((await call('POST', `/v1/proposals/${proposal.id}/authorize`, k.gw, {})).status).toBe(200);
      expect((await call('POST', `/v1/keys/${await keyIdOf('user:dave')}/revoke`, k.admin)).status).toBe(200);
      const observed = await call('POST', '/v1/observations', k.gw, {
        proposal_id: proposal.id,
        outcome: 'succeeded',
      });
      expect(observed.status).toBe(201);
    });
  });

  describe('through the client SDK', () => {
    const client = () =>
      createVouchClient({
        baseUrl: 'http://vouch.test',
        apiKey: k.gw,
        fetch: ((url: string, init: RequestInit) => h.app.request(url, init)) as unknown as typeof fetch,
      });
    const action = (extra: Json) => ({
      action: 'pay.lookup',
      server_id: 'pay',
      tool_name: 'lookup',
      target: { kind: 'account', id: `sdk-${++n}`, env: 'production' },
      arguments: { n },
      side_effect: 'read_only' as const,
      ...extra,
    });

    it('execute() claims before it invokes, so the observation is recorded', async () => {
      let invoked = 0;
      const result = await client().execute(action({}), async () => ++invoked, { verify: false });
      expect(result).toMatchObject({ status: 'executed', invoked: true });
      expect(invoked).toBe(1);
      const told = await story(result.proposal.id);
      expect(told.claim).toMatchObject({ claimed_by: 'agent:gw' });
      expect(told.observation).toMatchObject({ executed_by: 'agent:gw' });
    });

    it('execute() answers not_authorized APPROVER_KEY_REVOKED and never invokes', async () => {
      const erin = await h.keyFor('user:erin', ['approver']);
      const refund = {
        ...action({}),
        action: 'pay.refund',
        tool_name: 'refund',
        side_effect: 'compensatable' as const,
      };
      let invoked = 0;
      const quick = { verify: false, wait: { timeoutMs: 50, pollIntervalMs: 10 } };
      const first = await client().execute(refund, async () => ++invoked, quick);
      expect(first).toMatchObject({ status: 'pending', waitingFor: 'approval' });
      const requestId = first.status === 'pending' ? first.decision!.approval_request_id : null;
      expect((await call('POST', `/v1/approvals/${requestId}/approve`, erin, {})).status).toBe(200);
      const keys = (await call('GET', '/v1/keys', k.admin)).body.keys as Json[];
      const erinKey = keys.find((key) => key.identity === 'user:erin')!.id;
      expect((await call('POST', `/v1/keys/${erinKey}/revoke`, k.admin)).status).toBe(200);
      const again = await client().execute(refund, async () => ++invoked, quick);
      expect(again).toMatchObject({ status: 'not_authorized', code: 'APPROVER_KEY_REVOKED' });
      expect(invoked).toBe(0);
    });

    it('execute() answers precondition_failed for an unproven precondition and never invokes', async () => {
      let invoked = 0;
      const result = await client().execute(
        action({ preconditions: [{ name: 'stock.reserved' }] }),
        async () => ++invoked,
        { verify: false },
      );
      expect(result).toMatchObject({
        status: 'precondition_failed',
        code: 'PRECONDITION_UNPROVEN',
        preconditions: { status: 'inconclusive' },
      });
      expect(invoked).toBe(0);
    });
  });
});
