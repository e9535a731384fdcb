import {
  authorStatement,
  detachedSignature,
  formatAuthorPublicKey,
  generateAuthorKey,
  signAuthorStatement,
} from '@vouch/audit';
import { enrollSigningKey, type Ledger, OPERATOR_ACTOR } from '@vouch/ledger';
import { forgeRecords } from '@vouch/ledger/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHarness, type Harness } from '../testing/app-harness';
import { attackerBackends } from '../testing/runtime-attacker';

// The red team's attacker: nothing but the runtime role's connection string (INSERT only, every
// trigger and foreign key on; on PGlite, which has one user, the same database). Every author
// holds an enrolled signing key. What it appends in their names, every hash right, is refused
// by the server before it acts and reported by verification.

const backends = attackerBackends;

describe.each(backends)('the runtime role forges records in enrolled authors’ names on $name', (backend) => {
  let h: Harness;
  let attacker: { ledger: Ledger; close(): Promise<void> };
  let keys: Record<'admin' | 'gateway' | 'approver' | 'verifier' | 'auditor', string>;
  const alice = generateAuthorKey();
  const checker = generateAuthorKey();
  const root = generateAuthorKey();
  let n = 0;

  beforeAll(async () => {
    const opened = await backend.open();
    h = await createHarness({ open: async () => opened.database });
    attacker = await opened.attacker();
    keys = {
      admin: await h.keyFor('user:root', ['admin']),
      gateway: await h.keyFor('agent:gw', ['gateway']),
      approver: await h.keyFor('user:alice', ['approver']),
      verifier: await h.keyFor('service:checker', ['verifier']),
      auditor: await h.keyFor('user:audit', ['auditor']),
    };
    for (const [identity, key] of [
      ['user:alice', alice],
      ['service:checker', checker],
      ['user:root', root],
    ] as const) {
      await enrollSigningKey(h.ledger, {
        identity,
        publicKey: formatAuthorPublicKey(key.publicKey),
        enrolledBy: OPERATOR_ACTOR,
      });
    }
  }, 60_000);
  afterAll(async () => {
    await attacker?.close();
    await h?.close();
  });

  const signed = (log: string, action: string, signer: string, claims: unknown, key = alice) => ({
    'vouch-signature': detachedSignature(
      signAuthorStatement(authorStatement(log, action, signer, claims), key),
    ),
  });

  const pending = async () => {
    const log = `forged-${++n}`;
    const tool = {
      server_id: 'payments',
      tool_name: 'refund',
      side_effect: 'irreversible',
      approval_required: true,
    };
    const registered = await h.call('POST', `/v1/tools?log=${log}`, {
      key: keys.admin,
      body: tool,
      headers: signed(log, 'tool.register', 'user:root', tool, root),
    });
    expect(registered.status).toBe(201);
    const proposed = await h.json('POST', `/v1/proposals?log=${log}`, keys.gateway, {
      idempotency_key: 'k1',
      action: 'refund.issue',
      server_id: 'payments',
      tool_name: 'refund',
      target: { kind: 'order', id: 'A-1', env: 'prod' },
      arguments: { amount: 1 },
      side_effect: 'irreversible',
    });
    expect(proposed.status).toBe(201);
    return {
      log,
      proposalId: proposed.body.proposal.id as string,
      requestId: proposed.body.approval.id as string,
    };
  };
  const rules = async (log: string) => {
    const { body } = await h.json('GET', `/v1/logs/${log}/verify`, keys.auditor);
    return (body.failures as Array<{ rule?: string }>)
      .map((f) => f.rule)
      .filter((r) => r?.startsWith('SIGN'));
  };
  it('an approval: authorize and the story refuse it (409), verification reports it', async () => {
    const { log, proposalId, requestId } = await pending();
    await forgeRecords(attacker.ledger, log, (tx, now) => {
      tx.write('approval_resolution', 'user:alice', {
        id: 'res_forged',
        request_id: requestId,
        resolution: 'approved',
        resolver: 'user:alice',
        validity: 'once',
        window_seconds: 3600,
        window_source: 'policy',
        valid_until: new Date(Date.parse(now) + 3_600_000).toISOString(),
        comment: null,
        resolved_at: now,
      });
    });
    const authorized = await h.json(
      'POST',
      `/v1/proposals/${proposalId}/authorize?log=${log}`,
      keys.gateway,
      {},
    );
    expect(authorized).toMatchObject({ status: 409, body: { error: { code: 'RECORD_SIGNATURE_INVALID' } } });
    expect((await h.json('GET', `/v1/proposals/${proposalId}?log=${log}`, keys.auditor)).status).toBe(409);
    expect(await rules(log)).toEqual(['SIGNATURE_MISSING']);
    const ready = await h.call('GET', '/readyz');
    expect(ready.status).toBe(503);
  });

  it('a verification that overturns nothing but says "passed": the story refuses to say verified', async () => {
    const { log, proposalId, requestId } = await pending();
    const approval = await h.call('POST', `/v1/approvals/${requestId}/approve?log=${log}`, {
      key: keys.approver,
      body: {},
      headers: signed(log, 'approval.approve', 'user:alice', { request_id: requestId }),
    });
    expect(approval.status).toBe(200);
    expect(
      (await h.json('POST', `/v1/proposals/${proposalId}/authorize?log=${log}`, keys.gateway, {})).status,
    ).toBe(200);
    const observed = await h.json('POST', `/v1/observations?log=${log}`, keys.gateway, {
      proposal_id: proposalId,
      outcome: 'succeeded',
    });
    await forgeRecords(attacker.ledger, log, (tx, now) => {
      tx.write('verification', 'service:checker', {
        id: 'ver_forged',
        observation_id: observed.body.observation.id,
        proposal_id: proposalId,
        checks: [{ name: 'refund.recorded', status: 'pass', source: 'billing-ledger' }],
        status: 'passed',
        verifier: 'service:checker',
        verified_at: now,
        undeclared: [],
      });
    });
    const story = await h.json('GET', `/v1/proposals/${proposalId}?log=${log}`, keys.auditor);
    expect(story).toMatchObject({ status: 409, body: { error: { code: 'RECORD_SIGNATURE_INVALID' } } });
    expect(await rules(log)).toEqual(['SIGNATURE_MISSING']);
  });

  it("a registration forged in the admin's name decides nothing: the next proposal is refused", async () => {
    const { log } = await pending();
    const tools = await h.json('GET', `/v1/tools?log=${log}`, keys.auditor);
    const current = tools.body.tools[0];
    await forgeRecords(attacker.ledger, log, (tx, now) => {
      const { signature: _signature, ...unsigned } = current;
      tx.write('tool', 'user:root', {
        ...unsigned,
        id: 'tool_forged',
        version: current.version + 1,
        approval_required: false,
        registered_at: now,
      });
    });
    const proposed = await h.json('POST', `/v1/proposals?log=${log}`, keys.gateway, {
      idempotency_key: 'k-after-forgery',
      action: 'refund.issue',
      server_id: 'payments',
      tool_name: 'refund',
      target: { kind: 'order', id: 'A-2', env: 'prod' },
      arguments: { amount: 1 },
      side_effect: 'irreversible',
    });
    expect(proposed).toMatchObject({ status: 409, body: { error: { code: 'RECORD_SIGNATURE_INVALID' } } });
    expect(await rules(log)).toEqual(['SIGNATURE_MISSING']);
  });

  it('an honest signed approval still authorizes, and the log verifies', async () => {
    const { log, proposalId, requestId } = await pending();
    const approval = await h.call('POST', `/v1/approvals/${requestId}/approve?log=${log}`, {
      key: keys.approver,
      body: { validity: 'once' },
      headers: signed(log, 'approval.approve', 'user:alice', { validity: 'once', request_id: requestId }),
    });
    expect(approval.status).toBe(200);
    expect(
      (await h.json('POST', `/v1/proposals/${proposalId}/authorize?log=${log}`, keys.gateway, {})).status,
    ).toBe(200);
    expect(await rules(log)).toEqual([]);
  });
});
