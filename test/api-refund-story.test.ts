import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { tamper } from '@vouch/ledger/testing';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ServerBackend, serverBackends } from './helpers/backends';
import { runVouch, startVouchServer, type VouchServer } from './helpers/server';

const backends = serverBackends();

// biome-ignore lint/suspicious/noExplicitAny: response bodies are read loosely, then pinned with toMatchObject
type Json = Record<string, any>;

async function body(response: Response, status: number): Promise<Json> {
  const json = (await response.json()) as Json;
  expect({ status: response.status, body: json }).toMatchObject({ status });
  return json;
}

describe.each(backends)('the refund story over real HTTP on $name', (backend) => {
  let dir: string;
  let env: Awaited<ReturnType<ServerBackend['setup']>>;
  let server: VouchServer;
  const keys = {} as Record<'gateway' | 'stagingGateway' | 'alice' | 'verifier' | 'auditor', string>;
  let proposalSeq = 0;

  let billing: Server;
  const billingRequests: string[] = [];
  let refundedAmount = 0;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), `vouch-e2e-${backend.name}-`));
    env = await backend.setup(dir);
    // The independent source: billing's own ledger API, which (in this story) has no refund
    // of 4200 for A-119, whatever the refund tool answered.
    billing = createServer((req, res) => {
      billingRequests.push(req.url ?? '');
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ order_id: 'A-119', refunded_amount: refundedAmount }));
    });
    await new Promise<void>((resolve) => billing.listen(0, '127.0.0.1', resolve));
    const { port } = billing.address() as AddressInfo;
    writeFileSync(
      join(dir, 'vouch.config.json'),
      JSON.stringify({
        connections: { 'billing-ledger': { type: 'http', allowHosts: ['127.0.0.1'] } },
        verifiers: [
          {
            use: 'http-json',
            name: 'refund-recorded',
            handles: ['refund.recorded'],
            connection: 'billing-ledger',
            options: {
              url: `http://127.0.0.1:${port}/orders/{target.id}/refunds`,
              source: 'billing-ledger',
              assertions: [{ op: 'equals', pointer: '/refunded_amount', from: 'arguments.amount' }],
            },
          },
        ],
      }),
    );
    server = await startVouchServer({ storage: env.storage, cwd: dir });
  });
  afterAll(async () => {
    await server?.stop();
    await new Promise((resolve) => billing?.close(resolve));
    await env?.drop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('issues keys for each party with the bootstrap admin key', async () => {
    const issue = async (identity: string, roles: string[], extra: Json = {}) => {
      const created = await body(
        await server.call('POST', '/v1/keys', { key: server.adminKey, body: { identity, roles, ...extra } }),
        201,
      );
      return created.secret as string;
    };
    keys.gateway = await issue('agent:billing-bot', ['gateway'], {
      scopes: ['billing:write'],
      environments: ['staging', 'production'],
    });
    keys.stagingGateway = await issue('agent:staging-bot', ['gateway'], {
      scopes: ['billing:write'],
      environments: ['staging'],
    });
    keys.alice = await issue('user:alice', ['approver']);
    keys.verifier = await issue('service:reconciler', ['verifier']);
    keys.auditor = await issue('user:audrey', ['auditor']);
    expect(JSON.stringify(server.logs)).not.toContain(keys.alice);
  });

  let approvalId = '';
  let proposalId = '';
  let observationId = '';
  const proposal = {
    idempotency_key: 'refund-A-119',
    action: 'refund.issue',
    server_id: 'billing',
    tool_name: 'refund.issue',
    target: { kind: 'order', id: 'A-119', env: 'production' },
    arguments: { order_id: 'A-119', amount: 4200, currency: 'EUR' },
    side_effect: 'compensatable',
    postconditions: [{ name: 'refund.recorded', params: { order_id: 'A-119', amount: 4200 } }],
  };

  it('registers refund.issue (compensatable, billing:write, staging + production, approval required)', async () => {
    const { tool } = await body(
      await server.call('POST', '/v1/tools', {
        key: server.adminKey,
        body: {
          server_id: 'billing',
          tool_name: 'refund.issue',
          side_effect: 'compensatable',
          required_scopes: ['billing:write'],
          allowed_environments: ['staging', 'production'],
          approval_required: true,
        },
      }),
      201,
    );
    expect(tool).toMatchObject({ version: 1, side_effect: 'compensatable', approval_required: true });
  });

  it('refuses the proposal from a staging-only gateway key', async () => {
    const refused = await body(
      await server.call('POST', '/v1/proposals', { key: keys.stagingGateway, body: proposal }),
      403,
    );
    expect(refused.error.code).toBe('ENVIRONMENT_FORBIDDEN');
  });

  it('proposes a refund of 4200 for A-119 in production and gets require_approval', async () => {
    const result = await body(
      await server.call('POST', '/v1/proposals', { key: keys.gateway, body: proposal }),
      201,
    );
    expect(result.decision.verdict).toBe('require_approval');
    expect(result.proposal.requester).toBe('agent:billing-bot');
    expect(result.replayed).toBe(false);
    proposalId = result.proposal.id;
    approvalId = result.approval.id;
    const replay = await body(
      await server.call('POST', '/v1/proposals', { key: keys.gateway, body: proposal }),
      200,
    );
    expect(replay).toMatchObject({ replayed: true, proposal: { id: proposalId } });
    const conflict = await body(
      await server.call('POST', '/v1/proposals', {
        key: keys.gateway,
        body: { ...proposal, arguments: { ...proposal.arguments, amount: 42_000 } },
      }),
      409,
    );
    expect(conflict.error.code).toBe('IDEMPOTENCY_CONFLICT');
  });

  it('refuses execution before approval, and records the attempt', async () => {
    const refused = await body(
      await server.call('POST', '/v1/observations', {
        key: keys.gateway,
        body: { proposal_id: proposalId, outcome: 'succeeded', transport_status: 200 },
      }),
      403,
    );
    expect(refused.error.code).toBe('EXECUTION_NOT_AUTHORIZED');
  });

  it('shows the approver exactly what will run, and lets a different user approve', async () => {
    const view = await body(
      await server.call('GET', `/v1/approvals/${approvalId}`, { key: keys.alice }),
      200,
    );
    expect(view.payload).toMatchObject({
      arguments: { amount: 4200 },
      target: { env: 'production' },
      side_effect: 'compensatable',
    });
    expect(view.status).toBe('pending');
    const pending = await body(
      await server.call('GET', '/v1/approvals?status=pending', { key: keys.alice }),
      200,
    );
    expect(pending.approvals.map((a: Json) => a.request.id)).toContain(approvalId);
    const gatewayTry = await body(
      await server.call('POST', `/v1/approvals/${approvalId}/approve`, { key: keys.gateway }),
      403,
    );
    expect(gatewayTry.error.code).toBe('ROLE_FORBIDDEN');
    const approved = await body(
      await server.call('POST', `/v1/approvals/${approvalId}/approve`, {
        key: keys.alice,
        body: { comment: 'customer called' },
      }),
      200,
    );
    expect(approved).toMatchObject({ status: 'approved', resolution: { resolver: 'user:alice' } });
  });

  it('records the observation (tool status 200) as the authorized identity', async () => {
    await body(
      await server.call('POST', `/v1/proposals/${proposalId}/authorize`, { key: keys.gateway }),
      200,
    );
    const { observation } = await body(
      await server.call('POST', '/v1/observations', {
        key: keys.gateway,
        body: {
          proposal_id: proposalId,
          outcome: 'succeeded',
          result: { refund_id: 'rf_77', status: 'issued' },
          transport_status: 200,
        },
      }),
      201,
    );
    expect(observation.executed_by).toBe('agent:billing-bot');
    observationId = observation.id;
  });

  it('derives failed from an independent check that fails', async () => {
    const verification = await body(
      await server.call('POST', `/v1/observations/${observationId}/verify`, { key: keys.verifier }),
      201,
    );
    // The refund tool said 200; billing's own ledger (an independent source) disagrees.
    expect(verification.status).toBe('failed');
    expect(verification.checks).toMatchObject([
      { name: 'refund.recorded', status: 'fail', source: 'billing-ledger' },
    ]);
    expect(billingRequests).toEqual(['/orders/A-119/refunds']);
    // An external verifier's checks are recorded too, and the status is still derived.
    const external = await body(
      await server.call('POST', '/v1/verifications', {
        key: keys.verifier,
        body: {
          observation_id: observationId,
          checks: [
            { name: 'refund.recorded', status: 'fail', source: 'reconciliation-job', observed: { rows: 0 } },
          ],
        },
      }),
      201,
    );
    expect(external.status).toBe('failed');
    failedIds = [verification.id, external.id];
    const story = await body(
      await server.call('GET', `/v1/proposals/${proposalId}`, { key: keys.auditor }),
      200,
    );
    expect(story.outcome).toBe('verification_failed');
    expect(story.events.map((e: Json) => e.kind)).toEqual(
      expect.arrayContaining([
        'proposal',
        'decision',
        'approval_request',
        'approval_resolution',
        'observation',
        'verification',
      ]),
    );
    proposalSeq = story.events.find((e: Json) => e.kind === 'proposal').seq;
    const report = await body(
      await server.call('GET', '/v1/logs/default/verify', { key: keys.auditor }),
      200,
    );
    expect(report).toMatchObject({ ok: true, failures: [] });
  });

  let failedIds: string[] = [];

  it('keeps the failure when the gateway asks again, and refuses to let the gateway supersede it', async () => {
    const asked = await body(
      await server.call('POST', `/v1/observations/${observationId}/verify`, { key: keys.gateway }),
      201,
    );
    expect(asked).toMatchObject({ status: 'failed', verification_status: { status: 'failed' } });
    failedIds.push(asked.id);
    // The audited party may ask for verification, never overwrite the answer.
    const superseding = await body(
      await server.call('POST', `/v1/observations/${observationId}/verify`, {
        key: keys.gateway,
        body: { supersedes: failedIds, reason: 'the tool said 200' },
      }),
      403,
    );
    expect(superseding.error.code).toBe('SUPERSESSION_FORBIDDEN');
  });

  it('passes only through an explicit re-verification by the verifier that names the failures and why', async () => {
    // Billing's ledger replicated late: it now shows the refund.
    refundedAmount = 4200;
    const again = await body(
      await server.call('POST', `/v1/observations/${observationId}/verify`, {
        key: keys.verifier,
        body: { supersedes: failedIds, reason: 'billing ledger replicated late; re-read shows 4200' },
      }),
      201,
    );
    expect(again).toMatchObject({
      status: 'passed',
      verifier: 'service:reconciler',
      supersedes: failedIds,
      checks: [{ name: 'refund.recorded', status: 'pass', source: 'billing-ledger' }],
      verification_status: { status: 'passed' },
    });
    const story = await body(
      await server.call('GET', `/v1/proposals/${proposalId}`, { key: keys.auditor }),
      200,
    );
    expect(story.outcome).toBe('verified');
    // The history stays: every failed record, and the one that superseded them, with the reason.
    expect(story.verifications.map((v: Json) => [v.id, v.status])).toEqual([
      ...failedIds.map((id) => [id, 'failed']),
      [again.id, 'passed'],
    ]);
    expect(story.verification_status.superseded).toEqual(failedIds.map((id) => ({ id, by: again.id })));
    expect(story.events.filter((e: Json) => e.kind === 'verification').map((e: Json) => e.entity)).toEqual([
      ...failedIds,
      again.id,
    ]);
    const report = await body(
      await server.call('GET', '/v1/logs/default/verify', { key: keys.auditor }),
      200,
    );
    expect(report).toMatchObject({ ok: true, failures: [] });
  });

  it('stops gracefully, and `vouch verify` reports the chain intact', async () => {
    expect(await server.stop()).toBe(0);
    expect(server.logs.map((l) => l.msg)).toContain('stopped');
    const verify = await runVouch(['verify'], { storage: env.storage, cwd: dir });
    expect({ code: verify.code, stderr: verify.stderr }).toEqual({ code: 0, stderr: '' });
    expect(verify.stdout).toMatch(/log default: INTACT/);
  });

  it('reports an edited event with its seq through the API', async () => {
    const database = await env.open();
    try {
      // As an attacker with owner access would: triggers off for this transaction only.
      await tamper(
        database,
        sql`update audit_events set payload = replace(payload, '4200', '420000') where log_id = 'default' and seq = ${proposalSeq}`,
      );
    } finally {
      await database.close();
    }
    server = await startVouchServer({ storage: env.storage, cwd: dir, adminKey: server.adminKey });
    const report = await body(
      await server.call('GET', '/v1/logs/default/verify', { key: keys.auditor }),
      200,
    );
    expect(report.ok).toBe(false);
    expect(report.failures.map((f: Json) => [f.seq, f.code])).toContainEqual([
      proposalSeq,
      'PAYLOAD_HASH_MISMATCH',
    ]);
    await server.stop();
    const verify = await runVouch(['verify', '--log', 'default'], { storage: env.storage, cwd: dir });
    expect(verify.code).toBe(1);
    expect(verify.stdout).toContain(`seq ${proposalSeq}  PAYLOAD_HASH_MISMATCH`);
  });
});
