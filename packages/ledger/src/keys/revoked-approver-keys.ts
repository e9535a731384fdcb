import { sql } from 'drizzle-orm';
import { type Db, rowsOf } from '../database';
import { apiKeyRevocations, apiKeys, auditEvents } from '../schema/core';
import { KEY_REVOKED, SYSTEM_LOG } from './api-key-events';

/** A key that was live when an approval was given and has been revoked since. */
export interface RevokedApproverKey {
  keyId: string;
  revokedAt: string;
}

/**
 * The keys of `identity` that were live at `liveAt` (the time it answered an approval
 * request) and were revoked at or before `by` (the time the approval is about to be used).
 * The answer records who answered, not with which of their keys, so every key of theirs
 * that was live then is a key that could have given it: revoking any of them (a key is
 * revoked because it leaked) takes back what it may have approved. A key that merely
 * expired (a rotation) is not counted. Revoked by its revocation row or by its
 * `api_key.revoked` event, as the key lookup reads it: a row deleted behind the ledger's back
 * does not bring the approval back.
 */
export async function revokedApproverKeys(
  db: Db,
  options: { identity: string; liveAt: string; by: string },
): Promise<RevokedApproverKey[]> {
  const rows = rowsOf<{ keyId: string; createdAt: string; revokedAt: string | null }>(
    await db.execute(sql`
      select k.id as "keyId", k.created_at as "createdAt",
             coalesce(r.revoked_at, re.recorded_at) as "revokedAt"
      from ${apiKeys} k
      left join ${apiKeyRevocations} r on r.key_id = k.id
      left join lateral (
        select recorded_at from ${auditEvents}
        where log_id = ${SYSTEM_LOG} and entity_id = k.id and kind = ${KEY_REVOKED}
        order by seq limit 1
      ) re on true
      where k.identity = ${options.identity}`),
  );
  const liveAt = Date.parse(options.liveAt);
  const by = Date.parse(options.by);
  return rows
    .filter((row) => {
      if (row.revokedAt === null) return false;
      const revoked = Date.parse(row.revokedAt);
      return Date.parse(row.createdAt) <= liveAt && revoked > liveAt && revoked <= by;
    })
    .map((row) => ({ keyId: row.keyId, revokedAt: row.revokedAt! }));
}
