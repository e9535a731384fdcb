import { formatAuthorPublicKey, generateAuthorKey } from '@vouch/audit';
import {
  createRecords,
  ensureServerKeyEnrolled,
  type Ledger,
  POLICY_CONFIGURED_KIND,
  POLICY_PINNER,
  SERVER_SIGNER,
} from '@vouch/ledger';
import { forgeRecords } from '@vouch/ledger/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHarness, type Harness } from '../testing/app-harness';
import { attackerBackends } from '../testing/runtime-attacker';

// docs/chain.md, "The server signs its own": the policy pin, a lapsed claim's `unknown` outcome
// and a settle verification are signed with the server's key once it is enrolled, so the
// runtime role's credentials alone can no longer write them in the server's name.

/** A read-only lookup the built-in policy allows. */
const lookup = (key: string, order: string) => ({
  idempotency_key: key,
  action: 'lookup',
  server_id: 'payments',
  tool_name: 'lookup',
  target: { kind: 'order', id: order, env: 'prod' },
  arguments: { order },
  side_effect: 'read_only',
});

describe.each(attackerBackends)('the server signs its own records on $name', (backend) => {
  let h: Harness;
  let attacker: { ledger: Ledger; close(): Promise<void> };
  let keys: Record<'admin' | 'gateway' | 'auditor', string>;
  const serverKey = generateAuthorKey();
  let n = 0;

  beforeAll(async () => {
    const opened = await backend.open();
    h = await createHarness({
      open: async () => opened.database,
      recordsOptions: { serverKey, pinnedPolicy: { engine: 'built_in' } },
    });
    attacker = await opened.attacker();
    keys = {
      admin: await h.keyFor('user:root', ['admin']),
      gateway: await h.keyFor('agent:gw', ['gateway']),
      auditor: await h.keyFor('user:audit', ['auditor']),
    };
    // An engine's `policy` key whose holder need not sign: what a forged pin would let speak.
    await h.keyFor('service:opa', ['policy']);
    expect(await ensureServerKeyEnrolled(h.ledger, serverKey)).toBe('enrolled');
  }, 60_000);
  afterAll(async () => {
    await attacker?.close();
    await h?.close();
  });

  const rules = async (log: string) => {
    const { body } = await h.json('GET', `/v1/logs/${log}/verify`, keys.auditor);
    return (body.failures as Array<{ rule?: string }>).map((f) => f.rule);
  };
  /** A proposal the built-in policy allows, authorized with a claim of `claimSeconds`. */
  const authorized = async (claimSeconds: number) => {
    const log = `server-signed-${++n}`;
    const tool = { server_id: 'payments', tool_name: 'lookup', side_effect: 'read_only' };
    expect((await h.json('POST', `/v1/tools?log=${log}`, keys.admin, tool)).status).toBe(201);
    const proposed = await h.json('POST', `/v1/proposals?log=${log}`, keys.gateway, lookup('k1', 'A-1'));
    expect(proposed.status).toBe(201);
    const proposalId = proposed.body.proposal.id as string;
    const claim = await h.json('POST', `/v1/proposals/${proposalId}/authorize?log=${log}`, keys.gateway, {
      claim_seconds: claimSeconds,
    });
    expect(claim.status).toBe(200);
    return { log, proposalId };
  };
  /** Sweep `log` once its claims lapsed: the server's `unknown` observation. */
  const swept = async (log: string) => {
    await new Promise((resolve) => setTimeout(resolve, 1_100));
    const [observation] = await createRecords(h.ledger, { serverKey }).sweepLapsedClaims({ log });
    expect(observation).toBeDefined();
    return observation!;
  };

  it('enrols the key once: a second start finds it live', async () => {
    expect(await ensureServerKeyEnrolled(h.ledger, serverKey)).toBe('live');
    const listed = await h.json('GET', '/v1/signing-keys', keys.auditor);
    expect(listed.body.keys.filter((k: { identity: string }) => k.identity === SERVER_SIGNER)).toEqual([
      expect.objectContaining({
        key_id: serverKey.keyId,
        public_key: formatAuthorPublicKey(serverKey.publicKey),
      }),
    ]);
  });

  it('signs the pin and the sweep, and the log verifies with both counted as signed', async () => {
    const { log, proposalId } = await authorized(1);
    const observation = await swept(log);
    expect(observation.signature?.signatures[0]?.keyid).toBe(serverKey.keyId);
    const events = await h.ledger.events(log, { after: 0, limit: 100 });
    const pin = events.find((e) => e.kind === POLICY_CONFIGURED_KIND)!;
    expect(JSON.parse(pin.payload).signature.signatures[0].keyid).toBe(serverKey.keyId);
    const story = await h.json('GET', `/v1/proposals/${proposalId}?log=${log}`, keys.auditor);
    expect(story.status).toBe(200);
    const verified = await h.json('GET', `/v1/logs/${log}/verify`, keys.auditor);
    expect(verified.body).toMatchObject({ ok: true, failures: [] });
  });

  it("refuses an unknown outcome forged in the claim sweeper's name, and verification reports it", async () => {
    const { log, proposalId } = await authorized(600);
    const before = await h.json('GET', `/v1/proposals/${proposalId}?log=${log}`, keys.auditor);
    await forgeRecords(attacker.ledger, log, (tx, now) => {
      tx.write('observation', 'vouch:claim-sweeper', {
        id: 'obs_forged',
        proposal_id: proposalId,
        decision_id: before.body.decision.id,
        approval_use_id: null,
        server_id: 'payments',
        tool_name: 'lookup',
        executed_by: 'vouch:claim-sweeper',
        outcome: 'unknown',
        result: { reason: 'EXECUTION_CLAIM_LAPSED' },
        transport_status: null,
        tool_error: null,
        started_at: now,
        finished_at: null,
        observed_at: now,
      });
    });
    const story = await h.json('GET', `/v1/proposals/${proposalId}?log=${log}`, keys.auditor);
    expect(story).toMatchObject({ status: 409, body: { error: { code: 'RECORD_SIGNATURE_INVALID' } } });
    expect(await rules(log)).toContain('SIGNATURE_MISSING');
  });

  it("refuses a 'passed' forged in the settle verifier's name over the server's unknown outcome", async () => {
    const { log, proposalId } = await authorized(1);
    const observation = await swept(log);
    await forgeRecords(attacker.ledger, log, (tx, now) => {
      tx.write('verification', 'vouch:settle-verifier', {
        id: 'ver_forged',
        observation_id: observation.id,
        proposal_id: proposalId,
        checks: [{ name: 'order.found', status: 'pass', source: 'orders-db' }],
        status: 'passed',
        verifier: 'vouch:settle-verifier',
        verified_at: now,
        undeclared: [],
      });
    });
    const story = await h.json('GET', `/v1/proposals/${proposalId}?log=${log}`, keys.auditor);
    expect(story).toMatchObject({ status: 409, body: { error: { code: 'RECORD_SIGNATURE_INVALID' } } });
    expect(await rules(log)).toContain('SIGNATURE_MISSING');
  });

  it('a pin forged in the server’s name pins nothing: an external allow under it is refused', async () => {
    const { log } = await authorized(600);
    const tool = (await h.json('GET', `/v1/tools?log=${log}`, keys.auditor)).body.tools[0];
    const proposal = await h.json('POST', `/v1/proposals?log=${log}`, keys.gateway, lookup('k2', 'A-2'));
    await attacker.ledger.append({
      log,
      kind: POLICY_CONFIGURED_KIND,
      entity: 'policy',
      actor: POLICY_PINNER,
      payload: { format: 'policy/1', policy: { engine: 'external', decisions: 'posted' } },
    });
    // The runtime role's proposal and the engine's allow: every hash right, the pin above it.
    const { body: forged } = proposal;
    await forgeRecords(attacker.ledger, log, (tx, now) => {
      tx.write('proposal', 'agent:gw', {
        ...forged.proposal,
        id: 'prop_forged',
        idempotency_key: 'k3',
        proposed_at: now,
      });
      tx.write('decision', 'service:opa', {
        id: 'dec_forged',
        proposal_id: 'prop_forged',
        verdict: 'allow',
        reasons: [{ code: 'OPA_ALLOW', effect: 'allow', message: 'allowed by rego' }],
        repair: null,
        authorized_identity: 'agent:gw',
        source: 'opa',
        tool_id: tool.id,
        approval_request_id: null,
        decided_by: 'service:opa',
        decided_at: now,
      });
    });
    const refused = await h.json('POST', `/v1/proposals/prop_forged/authorize?log=${log}`, keys.gateway, {});
    expect(refused).toMatchObject({ status: 409, body: { error: { code: 'DECISION_SOURCE_NOT_PINNED' } } });
    expect(await rules(log)).toContain('SIGNATURE_MISSING');
  });
});

describe('enrolling a signing key', () => {
  let h: Harness;
  let admin: string;
  beforeAll(async () => {
    h = await createHarness();
    admin = await h.keyFor('user:root', ['admin']);
  });
  afterAll(() => h?.close());

  it('refuses a key enrolled already with 409 SIGNING_KEY_ENROLLED, writing nothing', async () => {
    const key = generateAuthorKey();
    const body = { identity: 'user:alice', public_key: formatAuthorPublicKey(key.publicKey) };
    expect((await h.json('POST', '/v1/signing-keys', admin, body)).status).toBe(201);
    const before = await h.ledger.events('system', { after: 0, limit: 1000 });
    const again = await h.json('POST', '/v1/signing-keys', admin, { ...body, identity: 'user:bob' });
    expect(again).toMatchObject({ status: 409, body: { error: { code: 'SIGNING_KEY_ENROLLED' } } });
    expect(await h.ledger.events('system', { after: 0, limit: 1000 })).toHaveLength(before.length);
  });

  it("refuses a key for the server's identity from an admin, writing nothing", async () => {
    const key = generateAuthorKey();
    const before = await h.ledger.events('system', { after: 0, limit: 1000 });
    const refused = await h.json('POST', '/v1/signing-keys', admin, {
      identity: 'vouch:server',
      public_key: formatAuthorPublicKey(key.publicKey),
    });
    expect(refused.status).toBe(403);
    expect(refused.body.error.code).toBe('SIGNING_KEY_ENROLLER_FORBIDDEN');
    expect(await h.ledger.events('system', { after: 0, limit: 1000 })).toHaveLength(before.length);
  });
});
