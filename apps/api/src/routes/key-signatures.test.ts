import { formatAuthorPrivateKey, formatAuthorPublicKey, generateAuthorKey } from '@vouch/audit';
import { createVouchClient, isVouchClientError } from '@vouch/client';
import { appendWithFields, enrollSigningKey, OPERATOR_ACTOR, redactFields } from '@vouch/ledger';
import { testBackends } from '@vouch/ledger/testing';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createKeyStore } from '../auth/key-store';
import { createHarness, type Harness } from '../testing/app-harness';

// Issue #33: an admin (and a redactor) with an enrolled signing key signs what it does with
// its API key; a key or a redaction written in its name without that signature, as the
// runtime role can write one, counts for nothing and is reported.
describe.each(testBackends())(
  'API keys and redactions signed by their authors, over HTTP on $name',
  ({ open }) => {
    let h: Harness;
    let keys: Record<'ops' | 'dpo' | 'auditor', string>;
    const ops = generateAuthorKey();
    const dpo = generateAuthorKey();
    const signingOf = (key: typeof ops, identity: string) => ({ key: formatAuthorPrivateKey(key), identity });
    const client = (apiKey: string, signing?: { key: string; identity: string }) =>
      createVouchClient({
        baseUrl: 'http://vouch.test',
        apiKey,
        fetch: async (input, init) => h.app.request(String(input).replace('http://vouch.test', ''), init),
        ...(signing ? { signing } : {}),
      });
    const codeOf = (promise: Promise<unknown>) =>
      promise.then(
        () => 'SUCCEEDED',
        (error) => (isVouchClientError(error) ? error.code : Promise.reject(error)),
      );
    const verify = async (log: string) =>
      (await h.json('GET', `/v1/logs/${log}/verify`, keys.auditor)).body as {
        ok: boolean;
        failures: Array<Record<string, unknown>>;
      };

    beforeAll(async () => {
      h = await createHarness({ open });
      keys = {
        ops: await h.keyFor('user:ops', ['admin']),
        dpo: await h.keyFor('user:dpo', ['redactor']),
        auditor: await h.keyFor('user:audit', ['auditor']),
      };
      for (const [identity, key] of [
        ['user:ops', ops],
        ['user:dpo', dpo],
      ] as const) {
        await enrollSigningKey(h.ledger, {
          identity,
          publicKey: formatAuthorPublicKey(key.publicKey),
          enrolledBy: OPERATOR_ACTOR,
        });
      }
    });
    afterAll(async () => {
      await h?.close();
    });

    it('the enrolled admin, unsigned, is refused (403 SIGNATURE_REQUIRED) and nothing is written', async () => {
      const before = await h.rowCounts();
      const issued = await h.json('POST', '/v1/keys', keys.ops, { identity: 'user:kim', roles: ['auditor'] });
      expect(issued).toMatchObject({ status: 403, body: { error: { code: 'SIGNATURE_REQUIRED' } } });
      expect(await h.rowCounts()).toEqual(before);
    });

    it('signed through the client, the key is issued and works; revoked signed, it no longer does', async () => {
      const admin = client(keys.ops, signingOf(ops, 'user:ops'));
      const { key, secret } = await admin.keys.create({ identity: 'user:kim', roles: ['auditor'] });
      expect((await h.call('GET', '/v1/logs', { key: secret })).status).toBe(200);
      expect(await codeOf(client(keys.ops).keys.revoke(key.id))).toBe('SIGNATURE_REQUIRED');
      expect((await admin.keys.revoke(key.id)).key.revoked_at).not.toBeNull();
      expect((await h.call('GET', '/v1/logs', { key: secret })).status).toBe(401);
      expect(await verify('system')).toMatchObject({ ok: true, failures: [] });
    });

    it('a signature by another key, or over another key, is refused (403 SIGNATURE_INVALID)', async () => {
      const mallory = client(keys.ops, signingOf(generateAuthorKey(), 'user:ops'));
      expect(await codeOf(mallory.keys.create({ identity: 'user:lee', roles: ['auditor'] }))).toBe(
        'SIGNATURE_INVALID',
      );
    });

    it('a redaction: unsigned refused, signed through the client erased, and the log verifies', async () => {
      const target = await appendWithFields(h.ledger, {
        log: 'crm',
        kind: 'customer.contacted',
        entity: 'cust_1',
        actor: 'gateway:mcp',
        payload: { email: 'ana@example.com', channel: 'email' },
      });
      const body = { fields: ['email'], reason: 'GDPR request 7' };
      expect(await codeOf(client(keys.dpo).audit.redact('crm', target.seq, body))).toBe('SIGNATURE_REQUIRED');
      const erased = await client(keys.dpo, signingOf(dpo, 'user:dpo')).audit.redact('crm', target.seq, body);
      expect(erased.fields).toEqual(['email']);
      expect(await verify('crm')).toMatchObject({ ok: true, failures: [] });
    });

    // Last: the alarm this raises stays raised.
    it("a key the runtime role issues in the enrolled admin's name is refused (401) and reported", async () => {
      // As the server writes it (row and event agree), without the admin's signature.
      const { key, secret } = await createKeyStore(h.ledger).create({
        identity: 'user:mallory',
        roles: ['admin'],
        createdBy: 'user:ops',
      });
      expect(await h.json('GET', '/v1/keys', secret)).toMatchObject({
        status: 401,
        body: { error: { code: 'UNAUTHENTICATED' } },
      });
      const [row] = await h.database.rows<{ seq: number }>(
        sql`select event_seq::int as seq from api_keys where id = ${key.id}`,
      );
      const ready = await h.json('GET', '/readyz', keys.auditor);
      expect(ready.body.integrity.alarms).toEqual([
        expect.objectContaining({ code: 'KEY_MISMATCH', log: 'system', seq: row!.seq, table: 'api_keys' }),
      ]);
      expect((await verify('system')).failures).toMatchObject([
        {
          seq: row!.seq,
          code: 'RECORD_RULE_VIOLATION',
          rule: 'SIGNATURE_MISSING',
          table: 'api_keys',
          id: key.id,
        },
      ]);
    });

    it("a redaction in the enrolled redactor's name without its signature is reported", async () => {
      const target = await appendWithFields(h.ledger, {
        log: 'crm2',
        kind: 'customer.contacted',
        entity: 'cust_2',
        actor: 'gateway:mcp',
        payload: { email: 'bo@example.com' },
      });
      const { event } = await redactFields(h.ledger, {
        log: 'crm2',
        seq: target.seq,
        fields: ['email'],
        reason: 'forged',
        actor: 'user:dpo',
      });
      expect((await verify('crm2')).failures).toMatchObject([
        { seq: event.seq, code: 'RECORD_RULE_VIOLATION', rule: 'SIGNATURE_MISSING', target: target.seq },
      ]);
    });
  },
);
