import {
  type ApiKeyFailure,
  checkApiKeyTables,
  keyHashCommitment,
  OPERATOR_ACTOR,
  verifyChain,
} from '@vouch/ledger';
import { tamper, testBackends } from '@vouch/ledger/testing';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHarness, type Harness } from '../testing/app-harness';
import { generateApiKey } from './api-key';

// U+0456 CYRILLIC SMALL LETTER BYELORUSSIAN-UKRAINIAN I, drawn like a Latin i.
const CYRILLIC_I = '\u0456';

describe.each(testBackends())('API keys proven by the system log on $name', ({ open }) => {
  let h: Harness;
  let admin: string;

  beforeAll(async () => {
    h = await createHarness({ open });
    admin = await h.keyFor('user:root', ['admin']);
  });
  afterAll(async () => {
    await h.close();
  });

  const keyFailures = async () => {
    const failures: ApiKeyFailure[] = [];
    for await (const failure of checkApiKeyTables(h.database, { pageSize: 2 })) failures.push(failure);
    return failures;
  };
  /** The database's own message for a refused statement (drizzle wraps it in its cause). */
  const refusal = async (statement: ReturnType<typeof sql>) => {
    try {
      await h.database.rows(statement);
    } catch (error) {
      return String((error as { cause?: { message?: string } }).cause?.message ?? error);
    }
    return 'not refused';
  };
  const status = async (secret: string) => (await h.call('GET', '/v1/keys', { key: secret })).status;
  const refusedLines = () =>
    h.logger.lines.filter((line) => line.msg === 'api key row fails its chain proof: refused');

  it('binds every key it issues to an event that commits to the hash without holding it', async () => {
    const { key, secret } = await h.keys.create({
      identity: 'user:kim',
      roles: ['admin'],
      createdBy: OPERATOR_ACTOR,
    });
    const [row] = await h.database.rows<{ key_hash: string; event_seq: number }>(
      sql`select key_hash, event_seq from api_keys where id = ${key.id}`,
    );
    const [event] = await h.database.rows<{ kind: string; payload: string }>(
      sql`select kind, payload from audit_events where log_id = 'system' and seq = ${row!.event_seq}`,
    );
    expect(event!.kind).toBe('api_key.created');
    expect(JSON.parse(event!.payload)).toMatchObject({
      id: key.id,
      key_commitment: keyHashCommitment(row!.key_hash),
    });
    expect(event!.payload).not.toContain(row!.key_hash);
    expect(await status(secret)).toBe(200);
    expect(await keyFailures()).toEqual([]);
  });

  describe('when a row is inserted straight into api_keys', () => {
    it('authenticates nothing, logs the refusal without hash or secret, and verification names it', async () => {
      const forged = generateApiKey();
      await h.database.rows(sql`
        insert into api_keys (id, key_hash, identity, roles, scopes, created_by, created_at)
        values (${forged.id}, ${forged.hash}, 'user:mallory', '["admin"]'::jsonb, '[]'::jsonb, 'user:root', '2026-01-01T00:00:00.000Z')`);
      const response = await h.call('GET', '/v1/keys', { key: forged.secret });
      expect(response.status).toBe(401);
      expect((await response.json()) as object).toMatchObject({ error: { code: 'UNAUTHENTICATED' } });
      expect(refusedLines()).toEqual([expect.objectContaining({ key_id: forged.id, proof: 'no_event' })]);
      const logged = JSON.stringify(h.logger.lines);
      expect(logged).not.toContain(forged.hash);
      expect(logged).not.toContain(forged.secret);
      expect(await keyFailures()).toContainEqual(
        expect.objectContaining({ code: 'KEY_WITHOUT_EVENT', table: 'api_keys', id: forged.id }),
      );
      // The verification an auditor runs of the system log says so too, not INTACT.
      const report = await verifyChain(h.database, { log: 'system' });
      expect(report.ok).toBe(false);
      expect(report.failures).toContainEqual(
        expect.objectContaining({ code: 'KEY_WITHOUT_EVENT', table: 'api_keys', id: forged.id }),
      );
    });

    it('authenticates nothing either when it names the event of another key', async () => {
      const forged = generateApiKey();
      const [taken] = await h.database.rows<{ seq: number }>(
        sql`select event_seq as seq from api_keys where event_seq is not null limit 1`,
      );
      // The unique event_seq refuses the copy; with the constraint out of the way the proof still does.
      await expect(
        h.database.rows(sql`
          insert into api_keys (id, key_hash, identity, roles, scopes, created_by, created_at, event_seq)
          values (${forged.id}, ${forged.hash}, 'user:mallory', '["admin"]'::jsonb, '[]'::jsonb, 'user:root', 'x', ${taken!.seq})`),
      ).rejects.toThrow();
    });
  });

  describe('when the owner edits a key row behind the ledger', () => {
    it('refuses the key (401) and verification reports KEY_MISMATCH', async () => {
      const { key, secret } = await h.keys.create({
        identity: 'agent:edit',
        roles: ['auditor'],
        createdBy: OPERATOR_ACTOR,
      });
      expect(await status(secret)).toBe(403);
      await tamper(h.database, sql`update api_keys set roles = '["admin"]'::jsonb where id = ${key.id}`);
      expect(await status(secret)).toBe(401);
      expect(await keyFailures()).toContainEqual(
        expect.objectContaining({ code: 'KEY_MISMATCH', id: key.id }),
      );
    });

    it('refuses a swapped key hash: the event commits to the hash it was issued with', async () => {
      const { key } = await h.keys.create({
        identity: 'agent:swap',
        roles: ['admin'],
        createdBy: OPERATOR_ACTOR,
      });
      const mine = generateApiKey();
      await tamper(h.database, sql`update api_keys set key_hash = ${mine.hash} where id = ${key.id}`);
      expect(await status(mine.secret)).toBe(401);
      expect(await keyFailures()).toContainEqual(
        expect.objectContaining({ code: 'KEY_MISMATCH', id: key.id }),
      );
    });

    it('reports a deleted key row from its event', async () => {
      const { key } = await h.keys.create({
        identity: 'agent:gone',
        roles: ['auditor'],
        createdBy: OPERATOR_ACTOR,
      });
      await tamper(h.database, sql`delete from api_keys where id = ${key.id}`);
      expect(await keyFailures()).toContainEqual(
        expect.objectContaining({ code: 'KEY_MISMATCH', table: 'api_keys', id: key.id }),
      );
    });
  });

  describe('when a key is revoked', () => {
    it('adds a revocation row and event, refuses every UPDATE of api_keys, and the key stops working', async () => {
      const { key, secret } = await h.keys.create({
        identity: 'user:leaver',
        roles: ['admin'],
        createdBy: OPERATOR_ACTOR,
      });
      const revoked = await h.call('POST', `/v1/keys/${key.id}/revoke`, { key: admin });
      expect(revoked.status).toBe(200);
      expect(
        ((await revoked.json()) as { key: { revoked_at: string | null } }).key.revoked_at,
      ).not.toBeNull();
      expect(await status(secret)).toBe(401);
      const [row] = await h.database.rows<{ kind: string }>(sql`
        select e.kind from api_key_revocations r join audit_events e on e.log_id = 'system' and e.seq = r.event_seq
        where r.key_id = ${key.id}`);
      expect(row?.kind).toBe('api_key.revoked');
      expect(await refusal(sql`update api_keys set identity = identity where id = ${key.id}`)).toMatch(
        /append-only/,
      );
      expect(await refusal(sql`update api_keys set event_seq = null where id = ${key.id}`)).toMatch(
        /append-only/,
      );
      expect(await refusal(sql`delete from api_key_revocations where key_id = ${key.id}`)).toMatch(
        /append-only/,
      );
      expect((await keyFailures()).filter((f) => f.id === key.id)).toEqual([]);
    });

    it('lets a revocation row revoke even without its event, and verification names it', async () => {
      const { key, secret } = await h.keys.create({
        identity: 'user:quiet',
        roles: ['admin'],
        createdBy: OPERATOR_ACTOR,
      });
      await h.database.rows(
        sql`insert into api_key_revocations (key_id, revoked_by, revoked_at) values (${key.id}, 'user:x', 'x')`,
      );
      expect(await status(secret)).toBe(401);
      expect(await keyFailures()).toContainEqual(
        expect.objectContaining({
          code: 'REVOCATION_WITHOUT_EVENT',
          table: 'api_key_revocations',
          id: key.id,
        }),
      );
    });
  });

  describe('when a key was issued before events committed to the key hash', () => {
    it('still authenticates, and verification reports it KEY_UNPROVEN so it gets rotated', async () => {
      const { key, secret } = await h.keys.create({
        identity: 'user:old',
        roles: ['admin'],
        createdBy: OPERATOR_ACTOR,
      });
      // Rewrite its event into the older payload, hashes recomputed, as a pre-0005 ledger holds it.
      const [event] = await h.database.rows<{ seq: number; payload: string }>(
        sql`select e.seq, e.payload from api_keys k join audit_events e on e.log_id = 'system' and e.seq = k.event_seq where k.id = ${key.id}`,
      );
      const { key_commitment: _, ...legacy } = JSON.parse(event!.payload) as Record<string, unknown>;
      const { canonicalJson, payloadHashOf } = await import('@vouch/audit');
      const text = canonicalJson(legacy);
      await tamper(
        h.database,
        sql`update audit_events set payload = ${text}, payload_hash = ${payloadHashOf(text)} where log_id = 'system' and seq = ${event!.seq}`,
      );
      expect(await status(secret)).toBe(200);
      expect(await keyFailures()).toContainEqual(
        expect.objectContaining({ code: 'KEY_UNPROVEN', id: key.id }),
      );
    });
  });

  describe('when a new key names an existing identity in another spelling', () => {
    beforeAll(async () => {
      await h.keyFor('agent:billing-bot', ['gateway']);
      // Through the store: the HTTP schema takes ASCII identities only.
      await h.keyFor('user:Jos\u00e9', ['approver']);
    });

    it.each([
      ['the same identity in capitals', 'agent:BILLING-BOT'],
      ['an ASCII look-alike (ones for ells, the same UTS #39 skeleton)', 'agent:bi11ing-bot'],
    ])('refuses %s with 409 IDENTITY_COLLISION and writes nothing', async (_, identity) => {
      const before = await h.rowCounts();
      const response = await h.call('POST', '/v1/keys', {
        key: admin,
        body: { identity, roles: ['approver'] },
      });
      expect(response.status).toBe(409);
      expect((await response.json()) as object).toMatchObject({
        error: { code: 'IDENTITY_COLLISION', details: { existing: 'agent:billing-bot' } },
      });
      expect(await h.rowCounts()).toEqual(before);
    });

    it.each([
      ['the NFD form of an NFC identity', 'user:Jose\u0301'],
      ['a look-alike with a Cyrillic letter', `agent:b${CYRILLIC_I}lling-bot`],
    ])('refuses %s over HTTP (identities are ASCII there) and writes nothing', async (_, identity) => {
      const before = await h.rowCounts();
      const response = await h.call('POST', '/v1/keys', {
        key: admin,
        body: { identity, roles: ['approver'] },
      });
      expect(response.status).toBe(400);
      expect(((await response.json()) as { error: { code: string } }).error.code).toMatch(/^[A-Z_]+$/);
      expect(await h.rowCounts()).toEqual(before);
    });

    it.each([
      ['the NFD form of an NFC identity', 'user:Jose\u0301', 'user:Jos\u00e9'],
      ['a look-alike with a Cyrillic letter', `agent:b${CYRILLIC_I}lling-bot`, 'agent:billing-bot'],
    ])('refuses %s in the key store itself with IDENTITY_COLLISION', async (_, identity, existing) => {
      const before = await h.rowCounts();
      await expect(
        h.keys.create({ identity, roles: ['approver'], createdBy: OPERATOR_ACTOR }),
      ).rejects.toMatchObject({
        code: 'IDENTITY_COLLISION',
        details: { existing },
      });
      expect(await h.rowCounts()).toEqual(before);
    });

    it('issues another key for the exact same spelling', async () => {
      const response = await h.call('POST', '/v1/keys', {
        key: admin,
        body: { identity: 'agent:billing-bot', roles: ['gateway'] },
      });
      expect(response.status).toBe(201);
    });
  });
});

describe.each(testBackends())('who issued each key, on $name', ({ open }) => {
  let h: Harness;
  beforeAll(async () => {
    h = await createHarness({ open });
  });
  afterAll(async () => {
    await h.close();
  });

  it('the bootstrap admin issues and revokes over HTTP, and the system log verifies', async () => {
    const bootstrap = (await h.keys.bootstrapAdmin())!;
    const issued = await h.call('POST', '/v1/keys', {
      key: bootstrap.secret,
      body: { identity: 'user:ops', roles: ['admin'], logs: ['default'] },
    });
    expect(issued.status).toBe(201);
    const ops = (await issued.json()) as { key: { id: string }; secret: string };
    // A limited admin issues within its limits, and an admin revokes.
    const within = await h.call('POST', '/v1/keys', {
      key: ops.secret,
      body: { identity: 'agent:gw', roles: ['gateway'], logs: ['default'] },
    });
    expect(within.status).toBe(201);
    const gateway = (await within.json()) as { key: { id: string } };
    expect((await h.call('POST', `/v1/keys/${gateway.key.id}/revoke`, { key: ops.secret })).status).toBe(200);
    const report = await verifyChain(h.database, { log: 'system' });
    expect(report.failures).toEqual([]);
    expect(report.ok).toBe(true);
  });
});
