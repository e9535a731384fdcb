import { randomBytes } from 'node:crypto';
import {
  type AuthorKey,
  attachSignature,
  authorStatement,
  type DsseEnvelope,
  detachedSignature,
  formatAuthorPublicKey,
  generateAuthorKey,
  parseDetachedSignature,
  signAuthorStatement,
} from '@vouch/audit';
import { sql } from 'drizzle-orm';
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Database, openDatabase } from '../database';
import { createIntegrityAlarm } from '../integrity-alarm';
import { keyCreatedPayload, keyRevokedPayload, SYSTEM_LOG } from '../keys/api-key-events';
import { findApiKeysByHash, issueApiKey, revokeApiKey } from '../keys/api-keys';
import { forbiddenKeyIds } from '../keys/forbidden-keys';
import { OPERATOR_ACTOR } from '../keys/key-history';
import { createLedger, type Ledger } from '../ledger';
import { migrate } from '../migrate';
import { appendWithFields, redactFields } from '../redaction';
import { grantRuntimeRole } from '../runtime-role';
import { verifyBothWays } from '../tamper-testing';
import { createTestDatabase, testBackends } from '../testing';
import { enrollSigningKey } from './enrol-signing-key';

/**
 * The red team's finding (issue #33): with only the runtime role's credentials, an outsider
 * appended an `api_key.created` event (and its row) in a live admin's name, and a redaction in
 * a live redactor's name. Once those authors hold enrolled signing keys, neither counts for
 * anything without their signature, and verification names it.
 */
describe.each(testBackends())('keys and redactions signed by their authors, on $name', ({ name, open }) => {
  /** The table owner: the operator's CLI. */
  let owner: Database;
  /** What the server holds: the runtime role on Postgres; on PGlite (one user) the owner. */
  let runtime: Database;
  let asOwner: Ledger;
  let asServer: Ledger;
  let close: () => Promise<void>;
  let n = 0;
  const ops = generateAuthorKey();
  const dpo = generateAuthorKey();

  beforeAll(async () => {
    const serverUrl = process.env.DATABASE_URL;
    if (name !== 'postgres' || !serverUrl) {
      owner = runtime = await open();
      close = () => owner.close();
    } else {
      const created = await createTestDatabase(serverUrl);
      owner = await openDatabase({ url: created.url });
      await migrate(owner);
      const role = `vouch_sig_${randomBytes(4).toString('hex')}`;
      const password = randomBytes(18).toString('base64url');
      await grantRuntimeRole(owner, { role, password });
      const url = new URL(created.url);
      url.username = role;
      url.password = password;
      runtime = await openDatabase({ url: url.toString() });
      close = async () => {
        await runtime.close();
        await owner.close();
        await created.drop();
        const admin = postgres(serverUrl, { max: 1, onnotice: () => {} });
        await admin.unsafe(`drop role if exists ${role}`).catch(() => {});
        await admin.end({ timeout: 5 });
      };
    }
    asOwner = createLedger(owner);
    asServer = owner === runtime ? asOwner : createLedger(runtime);
    // The operator issues the admin and the redactor, and enrols their signing keys.
    await issue(asOwner, OPERATOR_ACTOR, { identity: 'user:ops', roles: ['admin'] });
    await issue(asOwner, OPERATOR_ACTOR, { identity: 'user:dpo', roles: ['redactor'] });
    for (const [identity, key] of [
      ['user:ops', ops],
      ['user:dpo', dpo],
    ] as const) {
      await enrollSigningKey(asOwner, {
        identity,
        publicKey: formatAuthorPublicKey(key.publicKey),
        enrolledBy: OPERATOR_ACTOR,
      });
    }
  });
  afterAll(async () => {
    if (asServer !== asOwner) await asServer?.close();
    await asOwner?.close();
    await close?.();
  });

  interface Wanted {
    identity: string;
    roles: string[];
    scopes?: string[];
    logs?: string[] | null;
  }
  /** Issue a key through the ledger, as the server writes it, in `by`'s name. */
  async function issue(ledger: Ledger, by: string, wanted: Wanted, signature?: DsseEnvelope) {
    const keyHash = randomBytes(32).toString('hex');
    const key = (await issueApiKey(ledger, {
      id: `key_${++n}`,
      keyHash,
      identity: wanted.identity,
      roles: wanted.roles,
      scopes: wanted.scopes ?? [],
      environments: null,
      logs: wanted.logs ?? null,
      createdBy: by,
      ...(signature ? { signature } : {}),
    }))!;
    return { key, keyHash };
  }
  /** The envelope the server keeps of `signer`'s signature over `claims` (as the route rebuilds it). */
  const envelope = (key: AuthorKey, log: string, action: string, signer: string, claims: unknown) => {
    const statement = authorStatement(log, action, signer, claims);
    return attachSignature(
      statement,
      parseDetachedSignature(detachedSignature(signAuthorStatement(statement, key)))!,
    );
  };
  const signatureRules = async (log: string, id?: string) =>
    (await verifyBothWays(owner, { log })).failures
      .filter((f) => f.code === 'RECORD_RULE_VIOLATION' && (id === undefined || f.id === id))
      .map((f) => [f.rule, f.table]);
  /** How the key lookup (what authenticates a request) finds a key, and what it raises. */
  const lookUp = async (keyHash: string) => {
    const alarm = createIntegrityAlarm();
    const found = (await findApiKeysByHash(runtime, [keyHash], alarm)).get(keyHash);
    return { proof: found?.proof, alarms: alarm.alarms().map((a) => [a.code, a.table]) };
  };

  it("an issuance the runtime role forges in an enrolled admin's name authenticates nothing, and is reported", async () => {
    const wanted = { identity: `user:mallory-${++n}`, roles: ['admin', 'redactor'] };
    const { key, keyHash } = await issue(asServer, 'user:ops', wanted);
    expect((await forbiddenKeyIds(runtime)).has(key.id)).toBe(true);
    expect(await lookUp(keyHash)).toEqual({ proof: 'forbidden', alarms: [['KEY_MISMATCH', 'api_keys']] });
    expect(await signatureRules(SYSTEM_LOG, key.id)).toEqual([['SIGNATURE_MISSING', 'api_keys']]);
  });

  it('an issuance signed by the admin over what it issues is proven, and verifies', async () => {
    const wanted = { identity: `user:kim-${++n}`, roles: ['auditor', 'auditor'], scopes: ['a:read'] };
    const signature = envelope(ops, SYSTEM_LOG, 'api_key.create', 'user:ops', wanted);
    const { key, keyHash } = await issue(asServer, 'user:ops', wanted, signature);
    expect(key.roles).toEqual(['auditor']);
    expect(await lookUp(keyHash)).toEqual({ proof: 'proven', alarms: [] });
    expect(await signatureRules(SYSTEM_LOG, key.id)).toEqual([]);
  });

  it('a signature over another key (a role added to the row and the event) does not count', async () => {
    const asked = { identity: `user:lee-${++n}`, roles: ['auditor'] };
    const signature = envelope(ops, SYSTEM_LOG, 'api_key.create', 'user:ops', asked);
    const { key, keyHash } = await issue(
      asServer,
      'user:ops',
      { ...asked, roles: ['auditor', 'admin'] },
      signature,
    );
    expect((await lookUp(keyHash)).proof).toBe('forbidden');
    expect(await signatureRules(SYSTEM_LOG, key.id)).toEqual([['SIGNATURE_CLAIMS_MISMATCH', 'api_keys']]);
  });

  it('one signed request replayed for a second key (a hash the runtime role knows) does not count', async () => {
    const wanted = { identity: `user:rep-${++n}`, roles: ['admin'] };
    const signature = envelope(ops, SYSTEM_LOG, 'api_key.create', 'user:ops', wanted);
    const first = await issue(asServer, 'user:ops', wanted, signature);
    const second = await issue(asServer, 'user:ops', wanted, signature);
    expect((await lookUp(first.keyHash)).proof).toBe('proven');
    expect((await lookUp(second.keyHash)).proof).toBe('forbidden');
    expect(await signatureRules(SYSTEM_LOG, second.key.id)).toEqual([['SIGNATURE_REPLAYED', 'api_keys']]);
  });

  it('a key issued by the operator needs no signature', async () => {
    const { key, keyHash } = await issue(asOwner, OPERATOR_ACTOR, {
      identity: `user:op-${++n}`,
      roles: ['auditor'],
    });
    expect(await lookUp(keyHash)).toEqual({ proof: 'proven', alarms: [] });
    expect(await signatureRules(SYSTEM_LOG, key.id)).toEqual([]);
  });

  it("an unsigned revocation in the admin's name still ends the key, and is reported", async () => {
    const { key, keyHash } = await issue(asOwner, OPERATOR_ACTOR, {
      identity: `user:rev-${++n}`,
      roles: ['auditor'],
    });
    await revokeApiKey(asServer, key.id, 'user:ops');
    expect(
      (await findApiKeysByHash(runtime, [keyHash], createIntegrityAlarm())).get(keyHash)?.key.revokedAt,
    ).not.toBeNull();
    expect(await signatureRules(SYSTEM_LOG, key.id)).toEqual([['SIGNATURE_MISSING', 'api_key_revocations']]);
  });

  it('a signed revocation verifies, its row proven against its event', async () => {
    const { key } = await issue(asOwner, OPERATOR_ACTOR, { identity: `user:rev-${++n}`, roles: ['auditor'] });
    const signature = envelope(ops, SYSTEM_LOG, 'api_key.revoke', 'user:ops', { key_id: key.id });
    await revokeApiKey(asServer, key.id, 'user:ops', signature);
    const failures = (await verifyBothWays(owner, { log: SYSTEM_LOG })).failures.filter(
      (f) => f.id === key.id,
    );
    expect(failures).toEqual([]);
  });

  it('a payload without a signature hashes as before: no signature member', () => {
    const row = {
      id: 'key_old',
      keyHash: 'ab'.repeat(32),
      identity: 'user:old',
      roles: ['auditor'],
      scopes: [],
      environments: null,
      logs: null,
      createdBy: 'user:ops',
      createdAt: '2026-01-01T00:00:00.000Z',
    };
    expect(Object.keys(keyCreatedPayload(row))).not.toContain('signature');
    expect(Object.keys(keyCreatedPayload({ ...row, signature: null }))).not.toContain('signature');
    expect(keyRevokedPayload({ keyId: 'key_old', revokedBy: 'user:ops', revokedAt: row.createdAt })).toEqual({
      id: 'key_old',
      revoked_by: 'user:ops',
    });
  });

  it('a signature column respelled behind the ledger no longer proves its row', async () => {
    const wanted = { identity: `user:sp-${++n}`, roles: ['auditor'] };
    const signature = envelope(ops, SYSTEM_LOG, 'api_key.create', 'user:ops', wanted);
    const { key, keyHash } = await issue(asServer, 'user:ops', wanted, signature);
    await owner.db.transaction(async (tx) => {
      await owner.rows(sql`set local session_replication_role = replica`, tx);
      await owner.rows(sql`update api_keys set signature = ' ' || signature where id = ${key.id}`, tx);
    });
    expect((await lookUp(keyHash)).proof).toBe('mismatch');
  });

  describe('redactions', () => {
    /** A log with one field-committed event by a gateway. */
    const fieldLog = async () => {
      const log = `red-${++n}`;
      const target = await appendWithFields(asServer, {
        log,
        kind: 'customer.contacted',
        entity: 'cust_1',
        actor: 'gateway:mcp',
        payload: { email: 'ana@example.com', channel: 'email' },
      });
      return { log, target };
    };

    it("a redaction the runtime role forges in an enrolled redactor's name is reported, and authorizes no erasure", async () => {
      const { log, target } = await fieldLog();
      const { event } = await redactFields(asServer, {
        log,
        seq: target.seq,
        fields: ['email'],
        reason: 'ticket 9',
        actor: 'user:dpo',
      });
      const report = await verifyBothWays(owner, { log });
      expect(report.ok).toBe(false);
      expect(report.failures).toMatchObject([
        {
          seq: event.seq,
          code: 'RECORD_RULE_VIOLATION',
          rule: 'SIGNATURE_MISSING',
          table: 'event_fields',
          target: target.seq,
          message: expect.stringContaining('authorizes no erasure'),
        },
      ]);
    });

    it('a redaction signed by the redactor over the request verifies', async () => {
      const { log, target } = await fieldLog();
      const claims = { fields: ['email'], reason: 'ticket 10', seq: target.seq };
      await redactFields(asServer, {
        log,
        seq: target.seq,
        fields: ['email'],
        reason: 'ticket 10',
        actor: 'user:dpo',
        signature: envelope(dpo, log, 'event.redact', 'user:dpo', claims),
      });
      const report = await verifyBothWays(owner, { log });
      expect(report.failures).toEqual([]);
      expect(report.redactions).toMatchObject([{ seq: target.seq, fields: ['email'] }]);
    });

    it('a signature over another field, or another log, is reported', async () => {
      const { log, target } = await fieldLog();
      const other = { fields: ['channel'], reason: 'ticket 11', seq: target.seq };
      await redactFields(asServer, {
        log,
        seq: target.seq,
        fields: ['email'],
        reason: 'ticket 11',
        actor: 'user:dpo',
        signature: envelope(dpo, log, 'event.redact', 'user:dpo', other),
      });
      const mine = { fields: ['channel'], reason: 'ticket 11', seq: target.seq };
      await redactFields(asServer, {
        log,
        seq: target.seq,
        fields: ['channel'],
        reason: 'ticket 11',
        actor: 'user:dpo',
        signature: envelope(dpo, 'elsewhere', 'event.redact', 'user:dpo', mine),
      });
      expect(await signatureRules(log)).toEqual([
        ['SIGNATURE_CLAIMS_MISMATCH', 'event_fields'],
        ['SIGNATURE_MISMATCH', 'event_fields'],
      ]);
    });

    it("the operator's redaction needs no signature", async () => {
      const { log, target } = await fieldLog();
      await redactFields(asOwner, {
        log,
        seq: target.seq,
        fields: ['email'],
        reason: 'x',
        actor: OPERATOR_ACTOR,
      });
      expect(await signatureRules(log)).toEqual([]);
    });
  });
});
