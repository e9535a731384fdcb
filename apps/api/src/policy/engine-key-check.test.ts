import { createLedger, type Database, type Ledger, OPERATOR_ACTOR } from '@vouch/ledger';
import { testBackends } from '@vouch/ledger/testing';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createKeyStore } from '../auth/key-store';
import type { Logger } from '../logger';
import { checkPolicyEngineKey } from './engine-key-check';

const ENGINE = 'service:policy-engine';

describe('the startup check of the policy engine identity', () => {
  let database: Database;
  let ledger: Ledger;
  let warnings: Array<{ message: string; fields: unknown }>;
  const logger: Logger = {
    info() {},
    error() {},
    warn(message, fields) {
      warnings.push({ message, fields });
    },
  };

  beforeEach(async () => {
    database = await testBackends()[0]!.open();
    ledger = createLedger(database);
    warnings = [];
  });
  afterEach(async () => {
    await ledger.close();
    await database.close();
  });

  it('says nothing while no key was ever issued: the ledger judges no writers then', async () => {
    expect(await checkPolicyEngineKey(database, ENGINE, logger)).toBe(true);
    expect(warnings).toEqual([]);
  });

  it('warns, naming the identity and the fix, when keys exist but none with the policy role for it', async () => {
    const store = createKeyStore(ledger);
    await store.create({ identity: 'user:ops', roles: ['admin'], createdBy: OPERATOR_ACTOR });
    await store.create({ identity: ENGINE, roles: ['auditor'], createdBy: OPERATOR_ACTOR });
    expect(await checkPolicyEngineKey(database, ENGINE, logger)).toBe(false);
    expect(warnings).toEqual([
      {
        message: expect.stringContaining('holds no live policy key'),
        fields: { identity: ENGINE, fix: `vouch keys create --identity ${ENGINE} --roles policy` },
      },
    ]);
  });

  it('is satisfied by a live policy key, and warns again once it is revoked', async () => {
    const store = createKeyStore(ledger);
    const key = await store.create({ identity: ENGINE, roles: ['policy'], createdBy: OPERATOR_ACTOR });
    expect(await checkPolicyEngineKey(database, ENGINE, logger)).toBe(true);
    expect(warnings).toEqual([]);
    await store.revoke(key.key.id, OPERATOR_ACTOR);
    expect(await checkPolicyEngineKey(database, ENGINE, logger, new Date(Date.now() + 1000))).toBe(false);
    expect(warnings).toHaveLength(1);
  });
});
