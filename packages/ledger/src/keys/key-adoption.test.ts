import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { migrateBefore, migrationBackends } from '../__fixtures__/migrate-before';
import type { Database } from '../database';
import { createIntegrityAlarm } from '../integrity-alarm';
import { createLedger, type Ledger } from '../ledger';
import { migrate } from '../migrate';
import { tamper } from '../tamper-testing';
import { KEY_ADOPTED, keyAdoptedPayload, OPERATOR_ACTOR } from './api-key-events';
import { findApiKeysByHash, issueApiKey } from './api-keys';
import { checkApiKeyTables } from './check-api-key-tables';
import { adoptLegacyKeys } from './key-adoption';

// Keys issued before migration 0005 (events without a key commitment), then the upgrade:
// `vouch keys adopt` (adoptLegacyKeys) binds them, and only them, to their key hash.
describe.each(migrationBackends())('adopting keys issued before migration 0005 on $name', (backend) => {
  let database: Database;
  let ledger: Ledger;
  const hashOf = (n: number) => String(n).repeat(64).slice(0, 64);
  const keyFailures = async () => {
    const failures: Array<{ code: string; id: string }> = [];
    for await (const { code, id } of checkApiKeyTables(database)) failures.push({ code, id });
    return failures;
  };
  const proofOf = async (hash: string) =>
    (await findApiKeysByHash(database, [hash], createIntegrityAlarm())).get(hash)?.proof;
  const ruleViolations = async () =>
    (await ledger.verifyChain({ log: 'system' })).failures
      .filter((failure) => failure.code === 'RECORD_RULE_VIOLATION')
      .map(({ rule, id }) => ({ rule, id }));

  beforeAll(async () => {
    database = await backend.open();
    await migrateBefore(database, '0005');
    const old = createLedger(database);
    // What the old key store wrote: the event (no commitment), then the row; a revocation as an UPDATE.
    const issue = async (id: string, hash: string, identity: string, by: string, rowIdentity = identity) => {
      const payload = {
        id,
        identity,
        roles: ['admin'],
        scopes: [],
        environments: null,
        logs: null,
        created_by: by,
      };
      const event = await old.append({
        log: 'system',
        kind: 'api_key.created',
        entity: id,
        actor: by,
        payload,
      });
      await database.rows(sql`
        insert into api_keys (id, key_hash, identity, roles, scopes, environments, logs, created_by, created_at)
        values (${id}, ${hash}, ${rowIdentity}, '["admin"]'::jsonb, '[]'::jsonb, null, null, ${by}, ${event.at})`);
    };
    await issue('key_kept', hashOf(1), 'user:admin', 'system:bootstrap');
    await issue('key_revoked', hashOf(2), 'user:leaver', 'user:admin');
    const revoked = await old.append({
      log: 'system',
      kind: 'api_key.revoked',
      entity: 'key_revoked',
      actor: 'user:admin',
      payload: { id: 'key_revoked', revoked_by: 'user:admin' },
    });
    await database.rows(sql`update api_keys set revoked_at = ${revoked.at} where id = 'key_revoked'`);
    // A row that differs from its event (its identity edited before the upgrade).
    await issue('key_edited', hashOf(3), 'user:edited', 'user:admin', 'user:somebody-else');
    await old.close();
    await migrate(database);
    ledger = createLedger(database);
  });
  afterAll(async () => {
    await ledger?.close();
    await database?.close();
    await backend.drop();
  });

  it('before: the keys are KEY_UNPROVEN, and authenticate', async () => {
    expect(await keyFailures()).toEqual([
      { code: 'KEY_MISMATCH', id: 'key_edited' },
      { code: 'KEY_UNPROVEN', id: 'key_kept' },
      { code: 'KEY_UNPROVEN', id: 'key_revoked' },
    ]);
    expect(await proofOf(hashOf(1))).toBe('unproven');
  });

  it('an adoption in anyone but the operator’s name proves nothing, and breaks the key rule', async () => {
    await ledger.append({
      log: 'system',
      kind: KEY_ADOPTED,
      entity: 'key_kept',
      actor: 'user:admin',
      payload: keyAdoptedPayload({ keyId: 'key_kept', keyHash: hashOf(1), adoptedBy: 'user:admin' }),
    });
    expect(await proofOf(hashOf(1))).toBe('unproven');
    expect(await keyFailures()).toContainEqual({ code: 'KEY_UNPROVEN', id: 'key_kept' });
    expect(await ruleViolations()).toEqual([{ rule: 'KEY_ADOPTER_FORBIDDEN', id: 'key_kept' }]);
  });

  it('adopts the keys its events prove in all but the hash, the revoked one included, and not an edited row', async () => {
    expect(await adoptLegacyKeys(ledger)).toEqual({ adopted: ['key_kept', 'key_revoked'], refused: [] });
    expect(await keyFailures()).toEqual([{ code: 'KEY_MISMATCH', id: 'key_edited' }]);
    expect(await proofOf(hashOf(1))).toBe('proven');
    expect(await proofOf(hashOf(2))).toBe('proven');
    expect(await proofOf(hashOf(3))).toBe('mismatch');
    // The forged adoption above is still reported; the operator's own are not.
    expect(await ruleViolations()).toEqual([{ rule: 'KEY_ADOPTER_FORBIDDEN', id: 'key_kept' }]);
    expect(await adoptLegacyKeys(ledger)).toEqual({ adopted: [], refused: [] });
  });

  it('after the adoption, a swapped key hash authenticates nothing', async () => {
    await tamper(database, sql`update api_keys set key_hash = ${hashOf(4)} where id = 'key_kept'`);
    expect(await proofOf(hashOf(4))).toBe('mismatch');
    expect(await keyFailures()).toContainEqual({ code: 'KEY_MISMATCH', id: 'key_kept' });
    await tamper(database, sql`update api_keys set key_hash = ${hashOf(1)} where id = 'key_kept'`);
  });

  it('an adoption of a key issued with a commitment, or of a key adopted already, breaks the key rule', async () => {
    const key = await issueApiKey(ledger, {
      id: 'key_new',
      keyHash: hashOf(5),
      identity: 'user:new',
      roles: ['auditor'],
      scopes: [],
      environments: null,
      logs: null,
      createdBy: OPERATOR_ACTOR,
    });
    for (const [id, hash] of [
      [key!.id, hashOf(5)],
      ['key_revoked', hashOf(2)],
    ] as const) {
      await ledger.append({
        log: 'system',
        kind: KEY_ADOPTED,
        entity: id,
        actor: OPERATOR_ACTOR,
        payload: keyAdoptedPayload({ keyId: id, keyHash: hash, adoptedBy: OPERATOR_ACTOR }),
      });
    }
    expect(await ruleViolations()).toEqual([
      { rule: 'KEY_ADOPTER_FORBIDDEN', id: 'key_kept' },
      { rule: 'KEY_ADOPTER_FORBIDDEN', id: 'key_new' },
      { rule: 'KEY_ADOPTER_FORBIDDEN', id: 'key_revoked' },
    ]);
    expect(await proofOf(hashOf(5))).toBe('proven');
  });
});
