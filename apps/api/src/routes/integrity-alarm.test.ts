import { createLedger } from '@vouch/ledger';
import { testBackends } from '@vouch/ledger/testing';
import { type SQL, sql } from 'drizzle-orm';
import { afterEach, describe, expect, it } from 'vitest';
import { hashApiKey } from '../auth/api-key';
import { createKeyStore } from '../auth/key-store';
import { createHarness, type Harness } from '../testing/app-harness';

// biome-ignore lint/suspicious/noExplicitAny: response bodies are read loosely, then pinned with toMatchObject
type Json = Record<string, any>;

// Every refusal over a row the chain does not account for raises the one integrity alarm,
// whichever route found it: a read-only route as surely as a write, a key lookup too.
// Each case gets its own app: once raised, the alarm stays raised until a restart.
describe.each(testBackends())('the integrity alarm, over HTTP on $name', ({ open }) => {
  let h: Harness | undefined;
  afterEach(async () => {
    await h?.close();
    h = undefined;
  });

  async function call(method: string, path: string, key?: string, body?: unknown) {
    const response = await h!.call(method, path, {
      ...(key === undefined ? {} : { key }),
      ...(body === undefined ? {} : { body }),
    });
    return { status: response.status, body: (await response.json()) as Json };
  }

  /** Change the database as its owner can: append-only triggers and link checks off. */
  const tamper = (statement: SQL) =>
    h!.database.db.transaction(async (tx) => {
      await h!.database.rows(sql`set local session_replication_role = replica`, tx);
      await h!.database.rows(statement, tx);
    });

  const expectAlarm = async (alarm: Json) => {
    const ready = await call('GET', '/readyz');
    expect(ready).toMatchObject({
      status: 503,
      body: { status: 'not_ready', code: 'INTEGRITY_ALARM', integrity: { ok: false } },
    });
    expect(ready.body.integrity.alarms).toEqual([expect.objectContaining(alarm)]);
  };

  describe('when an observation row is edited', () => {
    it('refuses the reads of it with 503, and /readyz answers 503 INTEGRITY_ALARM naming observations', async () => {
      h = await createHarness({ open });
      const admin = await h.keyFor('user:root', ['admin']);
      const gw = await h.keyFor('agent:gw', ['gateway']);
      const tool = { server_id: 'pay', tool_name: 'lookup', side_effect: 'read_only' };
      expect((await call('POST', '/v1/tools', admin, tool)).status).toBe(201);
      const proposed = await call('POST', '/v1/proposals', gw, {
        idempotency_key: 'k-1',
        action: 'pay.lookup',
        server_id: 'pay',
        tool_name: 'lookup',
        target: { kind: 'account', id: 'acct-1', env: 'production' },
        arguments: { n: 1 },
        side_effect: 'read_only',
      });
      expect(proposed.body.decision.verdict).toBe('allow');
      const id = proposed.body.proposal.id as string;
      expect((await call('POST', `/v1/proposals/${id}/authorize`, gw, {})).status).toBe(200);
      const observed = await call('POST', '/v1/observations', gw, { proposal_id: id, outcome: 'failed' });
      expect(observed.status).toBe(201);
      const observation = observed.body.observation.id as string;
      expect((await call('GET', '/readyz')).status).toBe(200);

      await tamper(sql`update observations set outcome = 'succeeded' where id = ${observation}`);
      const seq = (await h.ledger.events('default', { limit: 10_000 })).find(
        (e) => e.entity === observation,
      )!.seq;
      const refused = {
        status: 503,
        body: { error: { code: 'RECORD_INTEGRITY_VIOLATION', details: { table: 'observations', seq } } },
      };
      // Read-only: no ledger batch runs for it.
      expect(await call('GET', `/v1/proposals/${id}`, gw)).toMatchObject(refused);
      expect(await call('POST', `/v1/observations/${observation}/verify`, gw)).toMatchObject(refused);
      await expectAlarm({ code: 'RECORD_MISMATCH', log: 'default', seq, table: 'observations' });
    });
  });

  describe("when one proposal's observation row is deleted", () => {
    it('lists it as an error item, refuses its story and a second execution with 503, and raises the alarm', async () => {
      h = await createHarness({ open });
      const admin = await h.keyFor('user:root', ['admin']);
      const gw = await h.keyFor('agent:gw', ['gateway']);
      const auditor = await h.keyFor('user:audrey', ['auditor']);
      const tool = { server_id: 'pay', tool_name: 'lookup', side_effect: 'read_only' };
      expect((await call('POST', '/v1/tools', admin, tool)).status).toBe(201);
      const propose = async (n: number) =>
        (
          await call('POST', '/v1/proposals', gw, {
            idempotency_key: `k-${n}`,
            action: 'pay.lookup',
            server_id: 'pay',
            tool_name: 'lookup',
            target: { kind: 'account', id: 'acct-1', env: 'production' },
            arguments: { n },
            side_effect: 'read_only',
          })
        ).body.proposal.id as string;
      const [executed, other] = [await propose(1), await propose(2)];
      expect((await call('POST', `/v1/proposals/${executed}/authorize`, gw, {})).status).toBe(200);
      const observed = await call('POST', '/v1/observations', gw, {
        proposal_id: executed,
        outcome: 'failed',
      });
      const observation = observed.body.observation.id as string;
      await tamper(sql`delete from observations where id = ${observation}`);
      const seq = (await h.ledger.events('default', { limit: 10_000 })).find(
        (e) => e.entity === observation,
      )!.seq;

      const listed = await call('GET', '/v1/proposals', auditor);
      expect(listed.status).toBe(200);
      expect(listed.body.proposals).toEqual([
        {
          seq: expect.any(Number),
          proposal_id: executed,
          error: { code: 'RECORD_INTEGRITY_VIOLATION', message: expect.stringContaining(observation) },
        },
        expect.objectContaining({ proposal: expect.objectContaining({ id: other }), stage: 'authorized' }),
      ]);
      const refused = {
        status: 503,
        body: {
          error: {
            code: 'RECORD_INTEGRITY_VIOLATION',
            details: { table: 'observations', id: observation, seq, reason: 'RECORD_MISSING' },
          },
        },
      };
      expect(await call('GET', `/v1/proposals/${executed}`, auditor)).toMatchObject(refused);
      expect(
        await call('POST', '/v1/observations', gw, { proposal_id: executed, outcome: 'succeeded' }),
      ).toMatchObject(refused);
      await expectAlarm({ code: 'RECORD_MISMATCH', log: 'default', seq, table: 'observations' });
    });
  });

  describe('when an API key row is edited to grant itself more', () => {
    it('refuses the key with 401, and /readyz answers 503 INTEGRITY_ALARM naming api_keys', async () => {
      h = await createHarness({ open });
      const auditor = await h.keyFor('user:audrey', ['auditor']);
      expect((await call('GET', '/v1/keys', auditor)).status).toBe(403);
      const [row] = await h.database.rows<{ seq: number }>(
        sql`select event_seq::int as seq from api_keys where key_hash = ${hashApiKey(auditor)}`,
      );
      await tamper(
        sql`update api_keys set roles = '["admin"]'::jsonb where key_hash = ${hashApiKey(auditor)}`,
      );
      expect(await call('GET', '/v1/keys', auditor)).toMatchObject({
        status: 401,
        body: { error: { code: 'UNAUTHENTICATED' } },
      });
      await expectAlarm({ code: 'KEY_MISMATCH', log: 'system', seq: row!.seq, table: 'api_keys' });
      // Never the secret or its hash.
      expect(JSON.stringify((await call('GET', '/readyz')).body)).not.toContain(hashApiKey(auditor));
    });
  });

  describe('when a key is appended, event and row, in the name of someone who could not issue it', () => {
    // What the runtime database role can do: write the event and its matching row, so the row
    // proves against its event, in the name of an identity that holds no admin key.
    it('refuses the key with 401, /readyz answers 503 naming api_keys, and a key an admin issued still works', async () => {
      h = await createHarness({ open });
      const admin = await h.keyFor('user:root', ['admin']);
      const { key, secret } = await h.keys.create({
        identity: 'user:mallory',
        roles: ['admin'],
        createdBy: 'user:mallory',
      });
      expect(await call('GET', '/v1/keys', secret)).toMatchObject({
        status: 401,
        body: { error: { code: 'UNAUTHENTICATED' } },
      });
      const [row] = await h.database.rows<{ seq: number }>(
        sql`select event_seq::int as seq from api_keys where id = ${key.id}`,
      );
      await expectAlarm({ code: 'KEY_MISMATCH', log: 'system', seq: row!.seq, table: 'api_keys' });
      expect(JSON.stringify((await call('GET', '/readyz')).body)).not.toContain(hashApiKey(secret));
      // An admin's key, and a key it issues after the forged one, authenticate as before.
      expect((await call('GET', '/v1/keys', admin)).status).toBe(200);
      const issued = await call('POST', '/v1/keys', admin, { identity: 'user:kim', roles: ['auditor'] });
      expect(issued.status).toBe(201);
      expect((await call('GET', '/v1/logs', issued.body.secret)).status).toBe(200);
    });
  });
  describe("when a key is appended in a revoked admin's name, with a clock set back to before the revocation", () => {
    // The review's attack: the runtime role opens the ledger with a clock just after the
    // admin's key was issued, and issues itself an admin key in that admin's name.
    it('records it at the head time, refuses the key with 401, and /readyz answers 503 naming api_keys', async () => {
      h = await createHarness({ open });
      const root = await h.keyFor('user:root', ['admin']);
      const issued = await call('POST', '/v1/keys', root, { identity: 'user:ops', roles: ['admin'] });
      expect(issued.status).toBe(201);
      const opsKey = issued.body.key as { id: string; created_at: string };
      expect((await call('POST', `/v1/keys/${opsKey.id}/revoke`, root)).status).toBe(200);
      const revokedAt = (await h.ledger.events('system', { limit: 10_000 })).at(-1)!.at;

      const backDated = createLedger(h.database, { now: () => new Date(Date.parse(opsKey.created_at) + 1) });
      try {
        const { key, secret } = await createKeyStore(backDated).create({
          identity: 'user:mallory',
          roles: ['admin', 'redactor'],
          scopes: [],
          environments: null,
          logs: null,
          createdBy: 'user:ops',
          allowRoleCombination: true,
        });
        expect(key.createdAt).toBe(revokedAt);
        expect(await call('GET', '/v1/keys', secret)).toMatchObject({
          status: 401,
          body: { error: { code: 'UNAUTHENTICATED' } },
        });
        const [row] = await h.database.rows<{ seq: number }>(
          sql`select event_seq::int as seq from api_keys where id = ${key.id}`,
        );
        await expectAlarm({ code: 'KEY_MISMATCH', log: 'system', seq: row!.seq, table: 'api_keys' });
        const auditor = await h.keyFor('user:audrey', ['auditor']);
        const verified = await call('GET', '/v1/logs/system/verify', auditor);
        expect(verified.body.failures).toMatchObject([
          { seq: row!.seq, code: 'RECORD_RULE_VIOLATION', rule: 'KEY_ISSUER_FORBIDDEN', table: 'api_keys' },
        ]);
      } finally {
        await backDated.close();
      }
    });
  });
});
