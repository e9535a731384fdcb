import { and, asc, eq } from 'drizzle-orm';
import { anyOf } from '../batched-sql';
import type { Db } from '../database';
import { auditEvents } from '../schema/core';
import { KEY_CREATED, KEY_EXPIRES, KEY_REVOKED, SYSTEM_LOG } from './api-key-events';
import { createKeyHistory, type KeyHistory } from './key-history';

/** The keys of the `system` log as verification reads them, and whether any key was ever issued. */
export interface LoadedKeyHistory {
  history: KeyHistory;
  /** At least one `api_key.created` event: the ledger is used through the API, which authorizes by key. */
  keysIssued: boolean;
}

/** The keys the `system` log's events issue, under the rule of who may issue them (see `createKeyHistory`). */
export async function loadKeyHistory(db: Db): Promise<LoadedKeyHistory> {
  const events = await db
    .select({
      kind: auditEvents.kind,
      entity: auditEvents.entityId,
      actor: auditEvents.actor,
      at: auditEvents.recordedAt,
      payload: auditEvents.payload,
      payload_hash: auditEvents.payloadHash,
    })
    .from(auditEvents)
    .where(
      and(
        eq(auditEvents.logId, SYSTEM_LOG),
        anyOf(auditEvents.kind, [KEY_CREATED, KEY_REVOKED, KEY_EXPIRES]),
      ),
    )
    .orderBy(asc(auditEvents.seq));
  const history = createKeyHistory();
  for (const event of events) history.add(event);
  return { history, keysIssued: events.some((event) => event.kind === KEY_CREATED) };
}
