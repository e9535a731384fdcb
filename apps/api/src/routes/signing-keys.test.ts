import { formatAuthorPrivateKey, formatAuthorPublicKey, generateAuthorKey } from '@vouch/audit';
import { createVouchClient, isVouchClientError } from '@vouch/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApp, type VouchApp } from '../app';
import { createHarness, type Harness } from '../testing/app-harness';

// An approver with an enrolled key signs through @vouch/client; without the signature, or
// with another request's, the server refuses and writes nothing.
describe('author signatures over HTTP, through the client', () => {
  let h: Harness;
  let app: VouchApp;
  let keys: Record<'admin' | 'gateway' | 'approver' | 'auditor', string>;
  const alice = generateAuthorKey();
  const client = (apiKey: string, signing?: { key: string; identity: string }) =>
    createVouchClient({
      baseUrl: 'http://vouch.test',
      apiKey,
      fetch: async (input, init) => app.request(String(input).replace('http://vouch.test', ''), init),
      ...(signing ? { signing } : {}),
    });
  const codeOf = (promise: Promise<unknown>) =>
    promise.then(
      () => 'SUCCEEDED',
      (error) => (isVouchClientError(error) ? error.code : Promise.reject(error)),
    );

  beforeAll(async () => {
    h = await createHarness();
    app = createApp({ ledger: h.ledger, keys: h.keys, logger: h.logger });
    keys = {
      admin: await h.keyFor('user:root', ['admin']),
      gateway: await h.keyFor('agent:gw', ['gateway']),
      approver: await h.keyFor('user:alice', ['approver']),
      auditor: await h.keyFor('user:audit', ['auditor']),
    };
    await client(keys.admin).tools.register({
      server_id: 'payments',
      tool_name: 'refund',
      side_effect: 'irreversible',
      approval_required: true,
    });
  });
  afterAll(async () => {
    await h?.close();
  });

  const pendingRequest = async (n: number) => {
    const answer = await client(keys.gateway).proposals.create({
      idempotency_key: `k${n}`,
      action: 'refund.issue',
      server_id: 'payments',
      tool_name: 'refund',
      target: { kind: 'order', id: `A-${n}`, env: 'prod' },
      arguments: { amount: n },
      side_effect: 'irreversible',
    });
    if (!answer.approval) throw new Error(`no approval request: ${JSON.stringify(answer)}`);
    return answer.approval.id;
  };

  it('an admin enrols the key; the list shows it', async () => {
    const response = await app.request('/v1/signing-keys', {
      method: 'POST',
      headers: { authorization: `Bearer ${keys.admin}`, 'content-type': 'application/json' },
      body: JSON.stringify({ identity: 'user:alice', public_key: formatAuthorPublicKey(alice.publicKey) }),
    });
    expect(response.status).toBe(201);
    const listed = await app.request('/v1/signing-keys', {
      headers: { authorization: `Bearer ${keys.approver}` },
    });
    expect(((await listed.json()) as { keys: unknown[] }).keys).toEqual([
      expect.objectContaining({ key_id: alice.keyId, identity: 'user:alice', revoked_at: null }),
    ]);
  });

  it('a bad public key is refused with a code, and nothing is enrolled', async () => {
    const response = await app.request('/v1/signing-keys', {
      method: 'POST',
      headers: { authorization: `Bearer ${keys.admin}`, 'content-type': 'application/json' },
      body: JSON.stringify({ identity: 'user:bob', public_key: 'ed25519:AAAA' }),
    });
    expect(response.status).toBe(400);
    const listed = await app.request('/v1/signing-keys', {
      headers: { authorization: `Bearer ${keys.admin}` },
    });
    expect(((await listed.json()) as { keys: unknown[] }).keys).toHaveLength(1);
  });

  it('only an admin enrols keys', async () => {
    const response = await app.request('/v1/signing-keys', {
      method: 'POST',
      headers: { authorization: `Bearer ${keys.approver}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        identity: 'user:alice',
        public_key: formatAuthorPublicKey(generateAuthorKey().publicKey),
      }),
    });
    expect(response.status).toBe(403);
  });

  it('the enrolled approver unsigned is refused (403 SIGNATURE_REQUIRED); signed, it approves', async () => {
    const id = await pendingRequest(1);
    expect(await codeOf(client(keys.approver).approvals.approve(id))).toBe('SIGNATURE_REQUIRED');
    expect((await client(keys.approver).approvals.get(id)).status).toBe('pending');
    const signing = { key: formatAuthorPrivateKey(alice), identity: 'user:alice' };
    const detail = await client(keys.approver, signing).approvals.approve(id, { validity: 'once' });
    expect(detail.status).toBe('approved');
    expect(detail.resolution?.signature?.signatures[0]?.keyid).toBe(alice.keyId);
  });

  it("a signature by a key that is not the approver's is refused (403 SIGNATURE_INVALID)", async () => {
    const id = await pendingRequest(2);
    const mallory = { key: formatAuthorPrivateKey(generateAuthorKey()), identity: 'user:alice' };
    expect(await codeOf(client(keys.approver, mallory).approvals.deny(id))).toBe('SIGNATURE_INVALID');
  });

  it('the log verifies with the signatures checked', async () => {
    const response = await app.request('/v1/logs/default/verify', {
      headers: { authorization: `Bearer ${keys.auditor}` },
    });
    const report = (await response.json()) as { ok: boolean; failures: unknown[] };
    expect(response.status, JSON.stringify(report)).toBe(200);
    expect(report.failures).toEqual([]);
  });
});
