import { and, asc, eq } from 'drizzle-orm';
import { anyOf } from '../batched-sql';
import type { Db } from '../database';
import { auditEvents } from '../schema/core';
import { type AdoptionEvent, KEY_ADOPTED, OPERATOR_ACTOR, SYSTEM_LOG } from './api-key-events';

/**
 * The first `api_key.adopted` event by the operator of each key in `ids`: the one that
 * counts (an adoption in anyone else's name proves nothing, and verification reports it).
 */
export async function firstAdoptions(db: Db, ids: readonly string[]): Promise<Map<string, AdoptionEvent>> {
  const found = new Map<string, AdoptionEvent>();
  if (ids.length === 0) return found;
  const events = await db
    .select({
      kind: auditEvents.kind,
      entityId: auditEvents.entityId,
      actor: auditEvents.actor,
      recordedAt: auditEvents.recordedAt,
      payload: auditEvents.payload,
      payloadHash: auditEvents.payloadHash,
    })
    .from(auditEvents)
    .where(
      and(
        eq(auditEvents.logId, SYSTEM_LOG),
        eq(auditEvents.kind, KEY_ADOPTED),
        eq(auditEvents.actor, OPERATOR_ACTOR),
        anyOf(auditEvents.entityId, ids),
      ),
    )
    .orderBy(asc(auditEvents.seq));
  for (const event of events) {
    if (event.entityId !== null && !found.has(event.entityId))
      found.set(event.entityId, event as AdoptionEvent);
  }
  return found;
}
