import { and, asc, eq, lte } from 'drizzle-orm';
import { anyOf } from '../batched-sql';
import type { Db } from '../database';
import { auditEvents } from '../schema/core';
import { KEY_CREATED, SYSTEM_LOG } from './api-key-events';
import { KEY_EVENT_KINDS } from './check-key-authority';
import { createKeyHistory, type KeyEvent, type KeyHistory } from './key-history';

/** The keys of the `system` log as verification reads them, and whether any key was ever issued. */
export interface LoadedKeyHistory {
  history: KeyHistory;
  /** At least one `api_key.created` event: the ledger is used through the API, which authorizes by key. */
  keysIssued: boolean;
}

/** The `system` log's key events in seq order (up to `through`, when given): what every key history is built from. */
export function readKeyEvents(db: Db, through?: number): Promise<KeyEvent[]> {
  return db
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
        anyOf(auditEvents.kind, KEY_EVENT_KINDS),
        through === undefined ? undefined : lte(auditEvents.seq, through),
      ),
    )
    .orderBy(asc(auditEvents.seq));
}

/** The keys the `system` log's events issue, under the rule of who may issue them (see `createKeyHistory`). */
export async function loadKeyHistory(db: Db): Promise<LoadedKeyHistory> {
  const events = await readKeyEvents(db);
  const history = createKeyHistory();
  for (const event of events) history.add(event);
  return { history, keysIssued: events.some((event) => event.kind === KEY_CREATED) };
}
