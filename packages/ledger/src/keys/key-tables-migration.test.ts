import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { migrateBefore, migrationBackends } from '../__fixtures__/migrate-before';
import type { Database } from '../database';
import { createIntegrityAlarm } from '../integrity-alarm';
import { createLedger } from '../ledger';
import { migrate } from '../migrate';
import { findApiKeysByHash } from './api-keys';
import { type ApiKeyFailure, checkApiKeyTables } from './check-api-key-tables';

// Databases as the code before migration 0005 left them: revoked_at on api_keys, events
// without a key commitment. Each backend starts empty and is migrated up to 0004 first.
const backends = migrationBackends();

describe.each(backends)('migration 0005 of existing keys on $name', (backend) => {
  let database: Database;
  const hashOf = (n: number) => String(n).repeat(64).slice(0, 64);

  beforeAll(async () => {
    database = await backend.open();
    await migrateBefore(database, '0005');

    // What the old key store wrote: the event, then the row; a revocation as an UPDATE.
    const ledger = createLedger(database);
    const issue = async (id: string, hash: string, identity: string) => {
      const payload = {
        id,
        identity,
        roles: ['admin'],
        scopes: [],
        environments: null,
        logs: null,
        created_by: 'system:bootstrap',
      };
      const event = await ledger.append({
        log: 'system',
        kind: 'api_key.created',
        entity: id,
        actor: 'system:bootstrap',
        payload,
      });
      await database.rows(sql`
        insert into api_keys (id, key_hash, identity, roles, scopes, environments, logs, created_by, created_at)
        values (${id}, ${hash}, ${identity}, '["admin"]'::jsonb, '[]'::jsonb, null, null, 'system:bootstrap', ${event.at})`);
    };
    await issue('key_kept', hashOf(1), 'user:admin');
    await issue('key_revoked', hashOf(2), 'user:leaver');
    const revoked = await ledger.append({
      log: 'system',
      kind: 'api_key.revoked',
      entity: 'key_revoked',
      actor: 'user:admin',
      payload: { id: 'key_revoked', revoked_by: 'user:admin' },
    });
    await database.rows(sql`update api_keys set revoked_at = ${revoked.at} where id = 'key_revoked'`);
    // A row some owner inserted without any event.
    await database.rows(sql`
      insert into api_keys (id, key_hash, identity, roles, created_by, created_at)
      values ('key_rogue', ${hashOf(3)}, 'user:rogue', '["admin"]'::jsonb, 'user:rogue', 'x')`);
    await ledger.close();

    await migrate(database);
  });
  afterAll(async () => {
    await database?.close();
    await backend.drop();
  });

  it('binds each key row to its api_key.created event and leaves a row without one unbound', async () => {
    const rows = await database.rows<{ id: string; event_seq: number | null }>(
      sql`select id, event_seq from api_keys order by id`,
    );
    expect(rows).toEqual(
      [
        { id: 'key_kept', event_seq: 1 },
        { id: 'key_revoked', event_seq: 2 },
        { id: 'key_rogue', event_seq: null },
      ].sort((a, b) => a.id.localeCompare(b.id)),
    );
  });

  it('turns revoked_at into a revocation row bound to its event', async () => {
    expect(await database.rows(sql`select key_id, event_seq, revoked_by from api_key_revocations`)).toEqual([
      { key_id: 'key_revoked', event_seq: 3, revoked_by: 'user:admin' },
    ]);
    const found = await findApiKeysByHash(
      database,
      [hashOf(1), hashOf(2), hashOf(3)],
      createIntegrityAlarm(),
    );
    expect(found.get(hashOf(1))).toMatchObject({ proof: 'unproven', key: { revokedAt: null } });
    expect(found.get(hashOf(2))?.key.revokedAt).not.toBeNull();
    expect(found.get(hashOf(3))?.proof).toBe('no_event');
  });

  it('reports the keys without a commitment as unproven and the rogue row as without event', async () => {
    const failures: ApiKeyFailure[] = [];
    for await (const failure of checkApiKeyTables(database)) failures.push(failure);
    expect(failures.map(({ code, id }) => ({ code, id }))).toEqual([
      { code: 'KEY_UNPROVEN', id: 'key_kept' },
      { code: 'KEY_UNPROVEN', id: 'key_revoked' },
      { code: 'KEY_WITHOUT_EVENT', id: 'key_rogue' },
    ]);
  });
});
