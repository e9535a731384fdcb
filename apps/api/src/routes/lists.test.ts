import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHarness, type Harness } from '../testing/app-harness';

// biome-ignore lint/suspicious/noExplicitAny: response bodies are read loosely, then pinned
type Json = Record<string, any>;

let h: Harness;
const k = {} as Record<'admin' | 'gw' | 'gw2' | 'alice' | 'sam' | 'verifier' | 'auditor' | 'narrow', string>;
let n = 0;

function proposal(tool: 'refund' | 'lookup', options: { env?: string } = {}) {
  n++;
  return {
    idempotency_key: `k-${n}`,
    action: `pay.${tool}`,
    server_id: 'pay',
    tool_name: tool,
    target: { kind: 'account', id: `acct-${n}`, env: options.env ?? 'production' },
    arguments: { n },
    side_effect: tool === 'refund' ? 'compensatable' : 'read_only',
    postconditions: tool === 'lookup' ? [{ name: 'lookup.done' }] : [],
  };
}

const ids: Record<string, string> = {};

beforeAll(async () => {
  h = await createHarness({ approvalEvents: { pollMs: 20, maxStreamMs: 2_000 } });
  k.admin = await h.keyFor('user:root', ['admin']);
  k.gw = await h.keyFor('agent:gw', ['gateway'], { environments: ['production', 'staging'] });
  k.gw2 = await h.keyFor('agent:other', ['gateway'], { environments: ['production', 'staging'] });
  k.alice = await h.keyFor('user:alice', ['approver']);
  k.sam = await h.keyFor('user:sam', ['approver'], { environments: ['staging'] });
  k.verifier = await h.keyFor('service:checker', ['verifier']);
  k.auditor = await h.keyFor('user:audrey', ['auditor']);
  k.narrow = await h.keyFor('user:narrow', ['auditor'], { logs: ['other'] });
  for (const tool of [
    {
      server_id: 'pay',
      tool_name: 'refund',
      side_effect: 'compensatable',
      approval_required: true,
      allowed_environments: ['production', 'staging'],
    },
    {
      server_id: 'pay',
      tool_name: 'lookup',
      side_effect: 'read_only',
      allowed_environments: ['production', 'staging'],
    },
  ]) {
    expect((await h.call('POST', '/v1/tools', { key: k.admin, body: tool })).status).toBe(201);
  }
  // 1: a refund waiting for approval (production); 2: a refund waiting in staging, by gw2;
  // 3: a lookup executed and verified as failed; 4: a lookup executed, not verified.
  ids.pendingProd = (await h.json('POST', '/v1/proposals', k.gw, proposal('refund'))).body.proposal.id;
  ids.pendingStaging = (
    await h.json('POST', '/v1/proposals', k.gw2, proposal('refund', { env: 'staging' }))
  ).body.proposal.id;
  for (const name of ['failedLookup', 'unverifiedLookup']) {
    const proposed = await h.json('POST', '/v1/proposals', k.gw, proposal('lookup'));
    ids[name] = proposed.body.proposal.id;
    expect((await h.json('POST', `/v1/proposals/${ids[name]}/authorize`, k.gw, {})).status).toBe(200);
    const observed = await h.json('POST', '/v1/observations', k.gw, {
      proposal_id: ids[name],
      outcome: 'succeeded',
      result: { ok: true },
    });
    expect(observed.status).toBe(201);
    ids[`${name}Observation`] = observed.body.observation.id;
  }
  const failed = await h.json('POST', '/v1/verifications', k.verifier, {
    observation_id: ids.failedLookupObservation,
    checks: [{ name: 'lookup.done', status: 'fail', source: 'audit-replica' }],
  });
  expect(failed.status).toBe(201);
  ids.failedVerification = failed.body.id;
});
afterAll(async () => {
  await h.close();
});

const get = (path: string, key: string) => h.json('GET', path, key);
const proposalIds = (body: Json) => body.proposals.map((p: Json) => p.proposal.id);

describe('GET /v1/proposals', () => {
  describe('when filtered by derived outcome or stage', () => {
    it('lists only the proposals whose story says so', async () => {
      const failed = await get('/v1/proposals?outcome=verification_failed', k.auditor);
      expect(failed.status).toBe(200);
      expect(proposalIds(failed.body)).toEqual([ids.failedLookup]);
      expect(failed.body.proposals[0]).toMatchObject({ outcome: 'verification_failed', stage: 'executed' });
      const waiting = await get('/v1/proposals?stage=awaiting_approval', k.auditor);
      expect(proposalIds(waiting.body)).toEqual([ids.pendingProd, ids.pendingStaging]);
      const awaiting = await get('/v1/proposals?outcome=awaiting_verification', k.verifier);
      expect(proposalIds(awaiting.body)).toEqual([ids.unverifiedLookup]);
    });
  });

  describe('when filtered by stored columns', () => {
    it('narrows by tool, server, requester, environment and time range', async () => {
      expect(proposalIds((await get('/v1/proposals?tool=lookup', k.auditor)).body)).toEqual([
        ids.failedLookup,
        ids.unverifiedLookup,
      ]);
      expect(proposalIds((await get('/v1/proposals?requester=agent:other', k.auditor)).body)).toEqual([
        ids.pendingStaging,
      ]);
      expect(proposalIds((await get('/v1/proposals?environment=staging', k.auditor)).body)).toEqual([
        ids.pendingStaging,
      ]);
      expect((await get('/v1/proposals?server=elsewhere', k.auditor)).body.proposals).toEqual([]);
      expect((await get('/v1/proposals?until=2000-01-01T00:00:00Z', k.auditor)).body.proposals).toEqual([]);
      expect(
        proposalIds((await get('/v1/proposals?since=2000-01-01T00:00:00%2B02:00', k.auditor)).body),
      ).toHaveLength(4);
    });
  });

  describe('when paged', () => {
    it('walks every proposal once, in chain order, with a stable cursor', async () => {
      const seen: string[] = [];
      let after: number | null = 0;
      while (after !== null) {
        const page: { body: Json } = await get(`/v1/proposals?limit=1&after=${after}`, k.auditor);
        seen.push(...proposalIds(page.body));
        after = page.body.next;
      }
      expect(seen).toEqual([ids.pendingProd, ids.pendingStaging, ids.failedLookup, ids.unverifiedLookup]);
    });
  });

  describe('when the key is limited to an environment', () => {
    it('shows only proposals in it', async () => {
      expect(proposalIds((await get('/v1/proposals', k.sam)).body)).toEqual([ids.pendingStaging]);
    });
  });

  describe('when a filter or cursor is bad', () => {
    it.each([
      '/v1/proposals?outcome=done',
      '/v1/proposals?stage=nowhere',
      '/v1/proposals?after=-1',
      '/v1/proposals?after=abc',
      '/v1/proposals?limit=0',
      '/v1/proposals?since=yesterday',
      '/v1/proposals?colour=red',
      '/v1/verifications?status=maybe',
      '/v1/approvals/events?after=x',
    ])('%s is 400 INVALID_REQUEST and writes nothing', async (path) => {
      const before = await h.rowCounts();
      const answer = await get(path, k.auditor);
      expect(answer).toMatchObject({ status: 400, body: { error: { code: 'INVALID_REQUEST' } } });
      expect(await h.rowCounts()).toEqual(before);
    });
  });
});

describe('GET /v1/verifications', () => {
  it('lists failed verification records with a cursor', async () => {
    const failed = await get('/v1/verifications?status=failed', k.auditor);
    expect(failed.status).toBe(200);
    expect(failed.body.verifications.map((v: Json) => v.verification.id)).toEqual([ids.failedVerification]);
    expect(failed.body.verifications[0].verification).toMatchObject({
      status: 'failed',
      proposal_id: ids.failedLookup,
    });
    expect((await get('/v1/verifications?status=passed', k.auditor)).body.verifications).toEqual([]);
  });
});

describe('GET /v1/approvals?status=pending', () => {
  it('carries the exact payload, its hash, expiry, requester, tool class and impact', async () => {
    const pending = await get('/v1/approvals?status=pending', k.alice);
    expect(pending.status).toBe(200);
    const [first] = pending.body.approvals as Json[];
    expect(first!.request).toMatchObject({ proposal_id: ids.pendingProd, requester: 'agent:gw' });
    expect(first!.request.payload_hash).toMatch(/^[0-9a-f]{64}$/);
    expect(typeof first!.request.expires_at).toBe('string');
    expect(first!.payload).toMatchObject({ side_effect: 'compensatable', tool_name: 'refund' });
    expect(first!.payload).toHaveProperty('impact');
    expect(JSON.parse(first!.canonical_payload)).toEqual(first!.payload);
  });
});

describe('GET /v1/me', () => {
  it('says who the key is and what it may do, without its secret', async () => {
    const me = await get('/v1/me', k.sam);
    expect(me).toMatchObject({
      status: 200,
      body: { identity: 'user:sam', roles: ['approver'], environments: ['staging'], logs: null },
    });
    expect(JSON.stringify(me.body)).not.toContain(k.sam);
  });
});

describe('GET /v1/logs', () => {
  it('lists the logs the key may use', async () => {
    const all = await get('/v1/logs', k.auditor);
    expect(all).toMatchObject({ status: 200 });
    expect(all.body.logs).toContain('default');
    expect((await get('/v1/logs', k.narrow)).body.logs).toEqual([]);
  });
});

describe('GET /v1/approvals/events', () => {
  /** Read the stream until `count` approval events arrived; return their data. */
  async function readApprovalEvents(response: Response, count: number): Promise<Json[]> {
    const reader = response.body!.pipeThrough(new TextDecoderStream()).getReader();
    let text = '';
    const found: Json[] = [];
    while (found.length < count) {
      const { value, done } = await reader.read();
      if (done) break;
      text += value;
      const blocks = text.split('\n\n');
      text = blocks.pop()!;
      for (const block of blocks) {
        if (!block.includes('event: approval')) continue;
        const data = block.split('\n').find((line) => line.startsWith('data: '))!;
        found.push(JSON.parse(data.slice('data: '.length)));
      }
    }
    await reader.cancel();
    return found;
  }

  it('sends a new pending request and its resolution, with seq ids', async () => {
    const stream = await h.call('GET', '/v1/approvals/events', { key: k.alice });
    expect(stream.status).toBe(200);
    expect(stream.headers.get('content-type')).toContain('text/event-stream');
    const events = readApprovalEvents(stream, 2);
    const proposed = await h.json('POST', '/v1/proposals', k.gw, proposal('refund'));
    const requestId = proposed.body.approval.id;
    expect((await h.json('POST', `/v1/approvals/${requestId}/deny`, k.alice, { comment: 'no' })).status).toBe(
      200,
    );
    const received = await events;
    expect(received.map((e) => [e.kind, e.request_id])).toEqual([
      ['approval_request', requestId],
      ['approval_resolution', requestId],
    ]);
    expect(received[1]!.seq).toBeGreaterThan(received[0]!.seq);
  });

  it('replays from Last-Event-ID and hides requests outside the key’s environments', async () => {
    const all = await readApprovalEvents(
      await h.call('GET', '/v1/approvals/events', { key: k.alice, headers: { 'last-event-id': '0' } }),
      2,
    );
    expect(all.map((e) => e.request_id).slice(0, 2)).toHaveLength(2);
    const staging = await readApprovalEvents(
      await h.call('GET', '/v1/approvals/events?after=0', { key: k.sam }),
      1,
    );
    const stagingRequest = (await get(`/v1/proposals/${ids.pendingStaging}`, k.auditor)).body.approval.request
      .id;
    expect(staging.map((e) => e.request_id)).toEqual([stagingRequest]);
  });

  it('refuses a gateway key with 403 ROLE_FORBIDDEN', async () => {
    expect((await get('/v1/approvals/events', k.gw)).body.error.code).toBe('ROLE_FORBIDDEN');
  });
});
