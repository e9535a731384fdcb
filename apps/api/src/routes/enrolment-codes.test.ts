import {
  type AuthorKey,
  authorStatement,
  detachedSignature,
  formatAuthorPrivateKey,
  formatAuthorPublicKey,
  generateAuthorKey,
  signAuthorStatement,
} from '@vouch/audit';
import { createVouchClient } from '@vouch/client';
import { ENROL_BY_CODE_ACTION, enrolByCodeClaims, enrolmentCodeCommitment } from '@vouch/ledger';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApp, type VouchApp } from '../app';
import { createHarness, type Harness } from '../testing/app-harness';

/** The members of the answers these tests read (one type for all: a test reads what it asked for). */
type Answer = Record<string, unknown> & { code: string; error: { code: string }; approval: { id: string } };

// A person enrols their own signing key over HTTP with a one-time code an admin issued for
// them, then signs with it; every refusal has its code and writes nothing.
describe('enrolment by one-time code over HTTP', () => {
  let h: Harness;
  let app: VouchApp;
  let keys: Record<'admin' | 'gateway' | 'approver' | 'auditor', string>;

  beforeAll(async () => {
    h = await createHarness();
    app = createApp({ ledger: h.ledger, keys: h.keys, logger: h.logger });
    keys = {
      admin: await h.keyFor('user:root', ['admin']),
      gateway: await h.keyFor('agent:gw', ['gateway']),
      approver: await h.keyFor('user:alice', ['approver']),
      auditor: await h.keyFor('user:audit', ['auditor']),
    };
  });
  afterAll(async () => {
    await h?.close();
  });

  const post = async (path: string, key: string, body: unknown) => {
    const response = await app.request(path, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    return { status: response.status, body: (await response.json()) as Answer };
  };
  const issue = async (identity = 'user:alice') => {
    const answer = await post('/v1/signing-keys/enrolment-codes', keys.admin, { identity });
    expect(answer.status).toBe(201);
    return answer.body.code;
  };
  const proof = (key: AuthorKey, code: string, identity = 'user:alice') =>
    detachedSignature(
      signAuthorStatement(
        authorStatement(
          'system',
          ENROL_BY_CODE_ACTION,
          identity,
          enrolByCodeClaims({
            identity,
            public_key: formatAuthorPublicKey(key.publicKey),
            code_commitment: enrolmentCodeCommitment(code),
          }),
        ),
        key,
      ),
    );
  const enrol = (key: AuthorKey, code: string, signedBy = key) =>
    post('/v1/signing-keys/enrol', keys.approver, {
      public_key: formatAuthorPublicKey(key.publicKey),
      code,
      proof: proof(signedBy, code),
    });
  const enrolled = async () => {
    const response = await app.request('/v1/signing-keys', {
      headers: { authorization: `Bearer ${keys.auditor}` },
    });
    return ((await response.json()) as { keys: { key_id: string }[] }).keys.map((k) => k.key_id);
  };

  it('only an admin issues codes; the answer shows the code once, the log its commitment', async () => {
    const refused = await post('/v1/signing-keys/enrolment-codes', keys.approver, { identity: 'user:alice' });
    expect(refused.status).toBe(403);
    const answer = await post('/v1/signing-keys/enrolment-codes', keys.admin, { identity: 'user:alice' });
    expect(answer.status).toBe(201);
    expect(answer.body).toEqual({
      identity: 'user:alice',
      code: expect.any(String),
      code_commitment: enrolmentCodeCommitment(answer.body.code),
      expires_at: expect.any(String),
    });
  });

  it('the approver enrols a key with a code and then signs with it', async () => {
    const alice = generateAuthorKey();
    const answer = await enrol(alice, await issue());
    expect(answer.status, JSON.stringify(answer.body)).toBe(201);
    expect(answer.body).toMatchObject({ key_id: alice.keyId, identity: 'user:alice', revoked_at: null });
    await createVouchClient({
      baseUrl: 'http://vouch.test',
      apiKey: keys.admin,
      fetch: async (input, init) => app.request(String(input).replace('http://vouch.test', ''), init),
    }).tools.register({
      server_id: 'payments',
      tool_name: 'refund',
      side_effect: 'irreversible',
      approval_required: true,
    });
    const proposed = await post('/v1/proposals', keys.gateway, {
      idempotency_key: 'k1',
      action: 'refund.issue',
      server_id: 'payments',
      tool_name: 'refund',
      target: { kind: 'order', id: 'A-1', env: 'prod' },
      arguments: { amount: 1 },
      side_effect: 'irreversible',
    });
    const id = proposed.body.approval.id;
    const detail = await createVouchClient({
      baseUrl: 'http://vouch.test',
      apiKey: keys.approver,
      signing: { key: formatAuthorPrivateKey(alice), identity: 'user:alice' },
      fetch: async (input, init) => app.request(String(input).replace('http://vouch.test', ''), init),
    }).approvals.approve(id, { validity: 'once' });
    expect(detail.resolution?.signature?.signatures[0]?.keyid).toBe(alice.keyId);
    for (const log of ['default', 'system']) {
      const response = await app.request(`/v1/logs/${log}/verify`, {
        headers: { authorization: `Bearer ${keys.auditor}` },
      });
      expect(((await response.json()) as { failures: unknown[] }).failures).toEqual([]);
    }
  });

  it.each([
    ['a wrong code', 403, 'ENROLMENT_CODE_INVALID', async (key: AuthorKey) => enrol(key, 'a-guess')],
    [
      'a code for someone else',
      403,
      'ENROLMENT_CODE_INVALID',
      async (key: AuthorKey) => enrol(key, await issue('user:bob')),
    ],
    [
      'a used code',
      409,
      'ENROLMENT_CODE_USED',
      async (key: AuthorKey) => {
        const code = await issue();
        expect((await enrol(generateAuthorKey(), code)).status).toBe(201);
        return enrol(key, code);
      },
    ],
    [
      'a proof by another key',
      403,
      'ENROLMENT_PROOF_INVALID',
      async (key: AuthorKey) => enrol(key, await issue(), generateAuthorKey()),
    ],
  ])('%s is refused (%i %s), nothing enrolled', async (_what, status, code, attempt) => {
    const key = generateAuthorKey();
    const answer = await attempt(key);
    expect(answer.status).toBe(status);
    expect(answer.body.error.code).toBe(code);
    expect(await enrolled()).not.toContain(key.keyId);
  });
});
