import { randomBytes } from 'node:crypto';
import { eq } from 'drizzle-orm';
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Database } from './database';
import { openDatabase, sqlStateOf } from './database';
import { type KeyRow, keyCreatedPayload, keyRevokedPayload, SYSTEM_LOG } from './keys/api-key-events';
import { issueApiKey, revokeApiKey, scheduleApiKeyExpiry } from './keys/api-keys';
import { forbiddenKeyIds } from './keys/forbidden-keys';
import { BOOTSTRAP_ACTOR, OPERATOR_ACTOR } from './keys/key-history';
import { createLedger, type Ledger } from './ledger';
import { migrate } from './migrate';
import { appendWithFields, redactFields } from './redaction';
import { grantRuntimeRole } from './runtime-role';
import { apiKeyRevocations, apiKeys } from './schema/core';
import { appendRecordedAt, verifyBothWays } from './tamper-testing';
import { createTestDatabase, testBackends } from './testing';
import type { LogVerificationReport } from './verify-chain';

/**
 * Key events written as the runtime database role can write them: an `api_key.created` (or
 * `.revoked`, `.expires`) event with its matching row, in any actor's name. The key tables'
 * check passes (row and event agree); `verifyChain` of `system` must still refuse every key
 * event its actor could not have written, and give such a key no power afterwards.
 */
describe.each(testBackends())('who may issue and revoke keys, on $name', ({ name, open }) => {
  /** The table owner (the operator's CLI, and `tamper`). */
  let owner: Database;
  /** What the server holds: the runtime role on Postgres; on PGlite (one user) the owner. */
  let runtime: Database;
  let asOwner: Ledger;
  let asServer: Ledger;
  let close: () => Promise<void>;
  let n = 0;

  beforeAll(async () => {
    const serverUrl = process.env.DATABASE_URL;
    if (name !== 'postgres' || !serverUrl) {
      owner = runtime = await open();
      close = () => owner.close();
    } else {
      const created = await createTestDatabase(serverUrl);
      owner = await openDatabase({ url: created.url });
      await migrate(owner);
      const role = `vouch_keys_${randomBytes(4).toString('hex')}`;
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
    // The server's bootstrap: the first key of the log, user:admin.
    await key(asServer, BOOTSTRAP_ACTOR, 'user:admin', ['admin']);
  });
  afterAll(async () => {
    if (asServer !== asOwner) await asServer?.close();
    await asOwner?.close();
    await close?.();
  });

  /** Issue a key through the ledger, in `by`'s name. */
  async function key(
    ledger: Ledger,
    by: string,
    identity: string,
    roles: string[],
    limits: { logs?: string[] | null; environments?: string[] | null } = {},
  ) {
    return (await issueApiKey(ledger, {
      id: `key_${++n}`,
      identity,
      roles,
      scopes: [],
      environments: limits.environments ?? null,
      logs: limits.logs ?? null,
      createdBy: by,
      keyHash: randomBytes(32).toString('hex'),
    }))!;
  }

  const unique = (what: string) => `${what}-${++n}`;
  const verifySystem = () => verifyBothWays(owner, { log: SYSTEM_LOG });
  /** The failures about key `id`, as [code, rule, table]. */
  const about = (report: LogVerificationReport, id: string) =>
    report.failures.filter((f) => f.id === id).map((f) => [f.code, f.rule, f.table]);
  const forbidden = (rule: string, table = 'api_keys') => [['RECORD_RULE_VIOLATION', rule, table]];

  describe('accepts the keys the server and the operator issue', () => {
    it('the bootstrap key, an admin issuing and revoking over the server, the operator issuing and rotating', async () => {
      const alice = await key(asServer, 'user:admin', unique('user:alice'), ['auditor']);
      await revokeApiKey(asServer, alice.id, 'user:admin');
      const bob = await key(asOwner, OPERATOR_ACTOR, unique('user:bob'), ['gateway']);
      await scheduleApiKeyExpiry(asOwner, bob.id, { graceSeconds: 60, by: OPERATOR_ACTOR });
      await revokeApiKey(
        asOwner,
        (await key(asOwner, OPERATOR_ACTOR, unique('user:c'), ['auditor'])).id,
        OPERATOR_ACTOR,
      );
      // An admin the operator issued issues in turn, within the limits of its key.
      const ops = unique('user:ops');
      await key(asOwner, OPERATOR_ACTOR, ops, ['admin'], { logs: ['a', 'b'], environments: ['prod'] });
      await key(asServer, ops, unique('agent:gw'), ['gateway'], { logs: ['a'], environments: ['prod'] });
      const report = await verifySystem();
      expect(report.failures).toEqual([]);
      expect(report.ok).toBe(true);
    });
  });

  describe('reports RECORD_RULE_VIOLATION for a key issued by someone who could not', () => {
    it("in a non-admin's name (KEY_ISSUER_FORBIDDEN)", async () => {
      const auditor = unique('user:audrey');
      await key(asServer, 'user:admin', auditor, ['auditor', 'redactor']);
      const forged = await key(asServer, auditor, unique('user:mallory'), ['admin']);
      const report = await verifySystem();
      expect(report.ok).toBe(false);
      expect(about(report, forged.id)).toEqual(forbidden('KEY_ISSUER_FORBIDDEN'));
      expect(report.failures.find((f) => f.id === forged.id)).toMatchObject({
        seq: expect.any(Number),
        id: forged.id,
        message: expect.stringContaining(`${auditor} held no live admin key`),
      });
    });

    it('in the name of an identity that holds no key (KEY_ISSUER_FORBIDDEN)', async () => {
      const forged = await key(asServer, unique('user:nobody'), unique('user:mallory'), ['admin']);
      expect(about(await verifySystem(), forged.id)).toEqual(forbidden('KEY_ISSUER_FORBIDDEN'));
    });

    it(`in ${BOOTSTRAP_ACTOR}'s name after the first key (KEY_ISSUER_FORBIDDEN)`, async () => {
      const forged = await key(asServer, BOOTSTRAP_ACTOR, unique('user:mallory'), ['admin']);
      expect(about(await verifySystem(), forged.id)).toEqual(forbidden('KEY_ISSUER_FORBIDDEN'));
    });

    it('by an admin whose key was revoked before (KEY_ISSUER_FORBIDDEN)', async () => {
      const former = unique('user:former');
      const adminKey = await key(asServer, 'user:admin', former, ['admin']);
      await revokeApiKey(asServer, adminKey.id, 'user:admin');
      const forged = await key(asServer, former, unique('user:mallory'), ['admin']);
      const report = await verifySystem();
      expect(about(report, adminKey.id)).toEqual([]);
      expect(about(report, forged.id)).toEqual(forbidden('KEY_ISSUER_FORBIDDEN'));
    });

    it('by an admin limited to logs or environments, beyond them (KEY_REACH_FORBIDDEN)', async () => {
      const limited = unique('user:limited');
      await key(asServer, 'user:admin', limited, ['admin'], { logs: ['a'], environments: ['prod'] });
      const anyLog = await key(asServer, limited, unique('agent:x'), ['gateway'], { environments: ['prod'] });
      const otherLog = await key(asServer, limited, unique('agent:y'), ['gateway'], {
        logs: ['b'],
        environments: ['prod'],
      });
      const anyEnv = await key(asServer, limited, unique('agent:z'), ['gateway'], { logs: ['a'] });
      const within = await key(asServer, limited, unique('agent:w'), ['gateway'], {
        logs: ['a'],
        environments: ['prod'],
      });
      const report = await verifySystem();
      for (const beyond of [anyLog, otherLog, anyEnv]) {
        expect(about(report, beyond.id), beyond.id).toEqual(forbidden('KEY_REACH_FORBIDDEN'));
      }
      expect(about(report, within.id)).toEqual([]);
    });

    it('whose payload names another issuer than its actor (KEY_ISSUER_FORBIDDEN)', async () => {
      // A live admin as the actor, the operator as created_by in the payload and the row (which agree).
      const row: KeyRow = {
        id: `key_${++n}`,
        identity: unique('user:mallory'),
        roles: ['admin'],
        scopes: [],
        environments: null,
        logs: null,
        createdBy: OPERATOR_ACTOR,
        keyHash: randomBytes(32).toString('hex'),
        createdAt: '',
      };
      await asServer.transact(SYSTEM_LOG, async (tx) => {
        const event = await tx.append({
          kind: 'api_key.created',
          entity: row.id,
          actor: 'user:admin',
          payload: keyCreatedPayload(row),
        });
        await tx.db.insert(apiKeys).values({ ...row, createdAt: event.at, eventSeq: event.seq });
      });
      expect(about(await verifySystem(), row.id)).toEqual(forbidden('KEY_ISSUER_FORBIDDEN'));
    });
  });

  describe('reports RECORD_RULE_VIOLATION for a key ended by someone who could not', () => {
    it('a revocation or an expiry by a non-admin (KEY_REVOKER_FORBIDDEN)', async () => {
      const gateway = unique('agent:gw');
      const own = await key(asServer, 'user:admin', gateway, ['gateway']);
      const other = await key(asServer, 'user:admin', unique('agent:other'), ['gateway']);
      // No route lets a key without the admin role revoke, itself included.
      await revokeApiKey(asServer, own.id, gateway);
      await scheduleApiKeyExpiry(asServer, other.id, { graceSeconds: 60, by: gateway });
      const report = await verifySystem();
      expect(about(report, own.id)).toEqual(forbidden('KEY_REVOKER_FORBIDDEN', 'api_key_revocations'));
      expect(about(report, other.id)).toEqual(forbidden('KEY_REVOKER_FORBIDDEN', 'api_key_revocations'));
    });
  });

  describe('gives a key issued by someone who could not no power', () => {
    it('it issues no key', async () => {
      const mallory = unique('user:mallory');
      const forgedAdmin = await key(asServer, unique('user:nobody'), mallory, ['admin']);
      const issued = await key(asServer, mallory, unique('user:eve'), ['auditor']);
      const report = await verifySystem();
      expect(about(report, forgedAdmin.id)).toEqual(forbidden('KEY_ISSUER_FORBIDDEN'));
      expect(about(report, issued.id)).toEqual(forbidden('KEY_ISSUER_FORBIDDEN'));
    });

    it('it authorizes no redaction', async () => {
      const eve = unique('user:eve');
      await key(asServer, unique('user:nobody'), eve, ['redactor']);
      const log = unique('kc');
      const target = await appendWithFields(asServer, {
        log,
        kind: 'customer.contacted',
        entity: 'cust_1',
        actor: 'gateway:mcp',
        payload: { email: 'ana@example.com', channel: 'email' },
      });
      await redactFields(asServer, {
        log,
        seq: target.seq,
        fields: ['email'],
        reason: 'ticket 1',
        actor: eve,
      });
      const report = await verifyBothWays(owner, { log });
      expect(report.failures).toMatchObject([
        { code: 'RECORD_RULE_VIOLATION', rule: 'ROLE_FORBIDDEN', table: 'event_fields', target: target.seq },
      ]);
    });
  });

  describe('gives a back-dated event no reach before an ending already recorded', () => {
    /** An admin key for user:ops, issued and then revoked by user:admin: no live admin key remains for ops. */
    async function revokedAdmin() {
      const ops = unique('user:ops');
      const opsKey = await key(asServer, 'user:admin', ops, ['admin']);
      await revokeApiKey(asServer, opsKey.id, 'user:admin');
      return { ops, issuedAt: Date.parse(opsKey.createdAt) };
    }

    it("the server records it at the log's head time: its issuer held no live admin key then (KEY_ISSUER_FORBIDDEN)", async () => {
      const { ops, issuedAt } = await revokedAdmin();
      const head = (await asServer.head(SYSTEM_LOG))!;
      const [revocation] = await asServer.events(SYSTEM_LOG, { after: head.seq - 1 });
      // The runtime role, through the ledger, with a clock set back to just after ops's key was issued.
      const backDated = createLedger(runtime, { now: () => new Date(issuedAt + 1) });
      try {
        const forged = await key(backDated, ops, unique('user:mallory'), ['admin', 'redactor']);
        expect(forged.createdAt).toBe(revocation!.at);
        const report = await verifySystem();
        expect(report.failures.filter((f) => f.id === forged.id)).toMatchObject([
          {
            seq: head.seq + 1,
            code: 'RECORD_RULE_VIOLATION',
            rule: 'KEY_ISSUER_FORBIDDEN',
            table: 'api_keys',
            message: expect.stringContaining(`${ops} held no live admin key at ${revocation!.at}`),
          },
        ]);
        expect(report.failures.filter((f) => f.code === 'TIME_REGRESSION')).toEqual([]);
        expect((await forbiddenKeyIds(runtime)).has(forged.id)).toBe(true);
      } finally {
        await backDated.close();
      }
    });

    it('inserted with a back-dated time past the server: TIME_REGRESSION and KEY_ISSUER_FORBIDDEN at its seq, and refused at use', async () => {
      const { ops, issuedAt } = await revokedAdmin();
      const row: KeyRow = {
        id: `key_${++n}`,
        identity: unique('user:mallory'),
        roles: ['admin', 'redactor'],
        scopes: [],
        environments: null,
        logs: null,
        createdBy: ops,
        keyHash: randomBytes(32).toString('hex'),
        createdAt: new Date(issuedAt + 1).toISOString(),
      };
      const event = await appendRecordedAt(
        runtime,
        {
          log: SYSTEM_LOG,
          kind: 'api_key.created',
          entity: row.id,
          actor: ops,
          at: row.createdAt,
          payload: keyCreatedPayload(row),
        },
        (tx, written) => tx.insert(apiKeys).values({ ...row, eventSeq: written.seq }),
      );
      const report = await verifySystem();
      expect(report.failures.filter((f) => f.seq === event.seq)).toMatchObject([
        { seq: event.seq, code: 'TIME_REGRESSION', at: row.createdAt },
        {
          seq: event.seq,
          code: 'RECORD_RULE_VIOLATION',
          rule: 'KEY_ISSUER_FORBIDDEN',
          table: 'api_keys',
          id: row.id,
        },
      ]);
      expect((await forbiddenKeyIds(runtime)).has(row.id)).toBe(true);
    });

    it('a back-dated revocation does not end a key before the time it was recorded after', async () => {
      const log = unique('kc');
      const redactor = unique('user:red');
      const redactorKey = await key(asServer, 'user:admin', redactor, ['redactor']);
      const target = await appendWithFields(asServer, {
        log,
        kind: 'customer.contacted',
        entity: 'cust_1',
        actor: 'gateway:mcp',
        payload: { email: 'ana@example.com', channel: 'email' },
      });
      await redactFields(asServer, {
        log,
        seq: target.seq,
        fields: ['email'],
        reason: 'ticket 8',
        actor: redactor,
      });
      await key(asServer, 'user:admin', unique('user:later'), ['auditor']);
      // Ending the key back at its issue would make the erasure it authorized look unauthorized.
      const revocation = await appendRecordedAt(
        runtime,
        {
          log: SYSTEM_LOG,
          kind: 'api_key.revoked',
          entity: redactorKey.id,
          actor: 'user:admin',
          at: redactorKey.createdAt,
          payload: keyRevokedPayload({
            keyId: redactorKey.id,
            revokedBy: 'user:admin',
            revokedAt: redactorKey.createdAt,
          }),
        },
        (tx, written) =>
          tx.insert(apiKeyRevocations).values({
            keyId: redactorKey.id,
            eventSeq: written.seq,
            revokedBy: 'user:admin',
            revokedAt: written.at,
          }),
      );
      expect((await verifySystem()).failures.filter((f) => f.seq === revocation.seq)).toMatchObject([
        { code: 'TIME_REGRESSION' },
      ]);
      expect((await verifyBothWays(owner, { log })).failures).toEqual([]);
    });

    it('a redaction back-dated to when its actor held a redactor key, revoked since, is ROLE_FORBIDDEN', async () => {
      const log = unique('kc');
      const redactor = unique('user:red');
      const target = await appendWithFields(asServer, {
        log,
        kind: 'customer.contacted',
        entity: 'cust_1',
        actor: 'gateway:mcp',
        payload: { email: 'ana@example.com', channel: 'email' },
      });
      const redactorKey = await key(asServer, 'user:admin', redactor, ['redactor']);
      await revokeApiKey(asServer, redactorKey.id, 'user:admin');
      // The log moves on past the revocation.
      await asServer.append({ log, kind: 'note', entity: 'n', actor: 'gateway:mcp', payload: {} });
      const redaction = await appendRecordedAt(runtime, {
        log,
        kind: 'event.redacted',
        entity: `event/${target.seq}`,
        actor: redactor,
        at: new Date(Date.parse(redactorKey.createdAt) + 1).toISOString(),
        payload: { fields: ['email'], reason: 'ticket 9', target: { hash: target.hash, seq: target.seq } },
      });
      const report = await verifyBothWays(owner, { log });
      expect(report.failures).toMatchObject([
        // Appended without its delete: the field it names still has content.
        { seq: target.seq, code: 'REDACTION_NOT_APPLIED', fields: ['email'] },
        { seq: redaction.seq, code: 'TIME_REGRESSION' },
        {
          seq: redaction.seq,
          code: 'RECORD_RULE_VIOLATION',
          rule: 'ROLE_FORBIDDEN',
          table: 'event_fields',
          target: target.seq,
        },
      ]);
    });
  });

  describe.runIf(name === 'postgres')(`${OPERATOR_ACTOR} in the system log`, () => {
    it('is refused by the database for the runtime role (VC001), in every key event', async () => {
      const mallory = unique('user:mallory');
      const attempts = [
        () => key(asServer, OPERATOR_ACTOR, mallory, ['admin']),
        async () =>
          revokeApiKey(
            asServer,
            (await key(asServer, 'user:admin', unique('u'), ['auditor'])).id,
            OPERATOR_ACTOR,
          ),
        async () =>
          scheduleApiKeyExpiry(asServer, (await key(asServer, 'user:admin', unique('u'), ['auditor'])).id, {
            graceSeconds: 60,
            by: OPERATOR_ACTOR,
          }),
      ];
      for (const attempt of attempts) {
        const error = await attempt().then(
          () => undefined,
          (caught: unknown) => caught,
        );
        expect(sqlStateOf(error)).toBe('VC001');
      }
      // Each refusal took its transaction with it: no key, no row.
      expect(await owner.db.select().from(apiKeys).where(eq(apiKeys.identity, mallory))).toEqual([]);
    });

    it('is written by the owner role', async () => {
      const issued = await key(asOwner, OPERATOR_ACTOR, unique('user:ops'), ['admin']);
      await revokeApiKey(asOwner, issued.id, OPERATOR_ACTOR);
      expect(about(await verifySystem(), issued.id)).toEqual([]);
    });

    it('stays open to the runtime role in other logs', async () => {
      const log = unique('kc');
      await asServer.append({ log, kind: 'note', entity: 'n', actor: OPERATOR_ACTOR, payload: {} });
      expect((await verifyBothWays(owner, { log })).ok).toBe(true);
    });
  });
});
