import { createLedger, type Database, type Ledger, OPERATOR_ACTOR } from '@vouch/ledger';
import { testBackends } from '@vouch/ledger/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hashApiKey } from './api-key';
import { KeyCache } from './key-cache';
import { createKeyStore, type KeyStore } from './key-store';

const found = (id: string, overrides: { revokedAt?: string | null; proof?: 'proven' | 'mismatch' } = {}) =>
  ({
    key: {
      id,
      identity: `user:${id}`,
      roles: ['admin'],
      scopes: [],
      environments: null,
      logs: null,
      createdBy: OPERATOR_ACTOR,
      createdAt: '2026-12-01T00:00:00.000Z',
      eventSeq: 1,
      revokedAt: overrides.revokedAt ?? null,
      expiresAt: null,
      revokedBy: null,
    },
    keyHash: `hash-${id}`,
    proof: overrides.proof ?? 'proven',
  }) as Parameters<KeyCache['remember']>[1];

describe('KeyCache', () => {
  it('forgets the least recently used key past its size', () => {
    const cache = new KeyCache({ maxEntries: 2 });
    cache.remember('a', found('a'));
    cache.remember('b', found('b'));
    expect(cache.get('a')?.key.id).toBe('a');
    cache.remember('c', found('c'));
    expect(cache.get('b')).toBeUndefined();
    expect(cache.get('a')?.key.id).toBe('a');
    expect(cache.get('c')?.key.id).toBe('c');
  });

  it('forgets a key past its age, and every hash of a revoked key id', () => {
    let now = 0;
    const cache = new KeyCache({ maxAgeMs: 10, now: () => now });
    cache.remember('a', found('a'));
    cache.remember('b', found('b'));
    now = 11;
    expect(cache.get('a')).toBeUndefined();
    cache.remember('a', found('a'));
    cache.forgetKey('a');
    expect(cache.get('a')).toBeUndefined();
  });

  it('never remembers a revoked key or a row that fails its proof', () => {
    const cache = new KeyCache();
    cache.remember('r', found('r', { revokedAt: '2026-12-01T00:00:01.000Z' }));
    cache.remember('m', found('m', { proof: 'mismatch' }));
    expect(cache.size).toBe(0);
  });
});

/** `database` counting the queries run through `db.execute` (what a key lookup uses). */
function counting(database: Database): { database: Database; queries: () => number } {
  let count = 0;
  const db = new Proxy(database.db, {
    get(target, property, receiver) {
      if (property !== 'execute') return Reflect.get(target, property, receiver);
      return (...args: Parameters<Database['db']['execute']>) => {
        count++;
        return target.execute(...args);
      };
    },
  });
  return { database: { ...database, db }, queries: () => count };
}

describe.each(testBackends())('the key store with its cache, on $name', ({ open }) => {
  let database: Database;
  const ledgers: Ledger[] = [];
  const stores: KeyStore[] = [];
  const storeOn = (db: Database, cache: boolean) => {
    const ledger = createLedger(db);
    ledgers.push(ledger);
    const store = createKeyStore(ledger, { cache });
    stores.push(store);
    return store;
  };

  beforeAll(async () => {
    database = await open();
  });
  afterAll(async () => {
    for (const store of stores) await store.close();
    for (const ledger of ledgers) await ledger.close();
    await database?.close();
  });

  it('answers a key it has seen without a lookup, and forgets it when this process revokes it', async () => {
    const { database: counted, queries } = counting(database);
    const store = storeOn(counted, true);
    expect(await store.caching).toBe(true);
    const { key, secret } = await store.create({
      identity: 'user:cached',
      roles: ['gateway'],
      createdBy: OPERATOR_ACTOR,
    });
    const hash = hashApiKey(secret);

    expect((await store.findByHash(hash))?.status).toBe('valid');
    const before = queries();
    expect((await store.findByHash(hash))?.status).toBe('valid');
    expect(queries()).toBe(before);

    await store.revoke(key.id, 'user:admin');
    expect(await store.findByHash(hash)).toBeNull();
  });

  it('refuses a key another process revoked, once that revocation commits', async () => {
    const cached = storeOn(database, true);
    const other = storeOn(database, false);
    expect(await cached.caching).toBe(true);
    expect(await other.caching).toBe(false);
    const { key, secret } = await other.create({
      identity: 'user:elsewhere',
      roles: ['gateway'],
      createdBy: OPERATOR_ACTOR,
    });
    const hash = hashApiKey(secret);
    expect((await cached.findByHash(hash))?.status).toBe('valid');

    await other.revoke(key.id, 'user:admin');
    // The notification reaches this process's listening connection shortly after the commit.
    let answer = await cached.findByHash(hash);
    for (let attempt = 0; answer !== null && attempt < 200; attempt++) {
      await new Promise((resolve) => setTimeout(resolve, 25));
      answer = await cached.findByHash(hash);
    }
    expect(answer).toBeNull();
  });

  it('learns a grace deadline another process set, once it commits', async () => {
    const cached = storeOn(database, true);
    const other = storeOn(database, false);
    expect(await cached.caching).toBe(true);
    const { key, secret } = await other.create({
      identity: 'user:rotating',
      roles: ['gateway'],
      createdBy: OPERATOR_ACTOR,
    });
    const hash = hashApiKey(secret);
    const seen = await cached.findByHash(hash);
    expect(seen?.status === 'valid' && seen.key.expiresAt).toBeNull();

    const expiring = await other.expire(key.id, 900, 'user:admin');
    expect(expiring.expiresAt).not.toBeNull();
    // The cached entry had no deadline: the commit's notification must evict it.
    const deadline = async () => {
      const answer = await cached.findByHash(hash);
      return answer?.status === 'valid' ? answer.key.expiresAt : 'not valid';
    };
    let found = await deadline();
    for (let attempt = 0; found === null && attempt < 200; attempt++) {
      await new Promise((resolve) => setTimeout(resolve, 25));
      found = await deadline();
    }
    expect(found).toBe(expiring.expiresAt);
  });
});
