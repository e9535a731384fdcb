import type { FieldOpening, StoredEvent } from '@vouch/audit';
import { canonicalJson } from '@vouch/audit';
import { and, eq, gte, inArray, lte } from 'drizzle-orm';
import type { Database, Db } from './database';
import { eventFields } from './schema/core';

/**
 * Give every `fields/1` event of `events` (one log) its content from `event_fields`: an
 * opening per field whose row is still there, `{}` when all were erased. One query for the
 * page, and none when it holds no such event.
 */
export async function attachFields(
  database: Database,
  log: string,
  events: StoredEvent[],
  executor: Db = database.db,
): Promise<StoredEvent[]> {
  let lo = Number.POSITIVE_INFINITY;
  let hi = Number.NEGATIVE_INFINITY;
  // Indexed loops over a page: no iterator result per event before the loop is optimized.
  for (let i = 0; i < events.length; i++) {
    const event = events[i]!;
    if (event.commitment === undefined || event.commitment === null) continue;
    event.fields = {};
    lo = Math.min(lo, event.seq);
    hi = Math.max(hi, event.seq);
  }
  if (lo > hi) return events;
  const rows = await executor
    .select()
    .from(eventFields)
    .where(and(eq(eventFields.logId, log), gte(eventFields.seq, lo), lte(eventFields.seq, hi)));
  const bySeq = new Map(events.map((event) => [event.seq, event]));
  for (const row of rows) {
    const fields = bySeq.get(row.seq)?.fields;
    // A row is JSON text the ledger wrote; an edited one that no longer parses is content
    // that cannot be the committed value, which verification reports as FIELD_MISMATCH.
    // Defined, not assigned: a field named "__proto__" would otherwise set the prototype.
    if (fields) {
      Object.defineProperty(fields, row.name, {
        value: { salt: row.salt, value: parseOrText(row.value) },
        enumerable: true,
        writable: true,
        configurable: true,
      });
    }
  }
  return events;
}

function parseOrText(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

/** The rows of `event_fields` for the content of one event. */
export function fieldRows(
  log: string,
  seq: number,
  fields: Record<string, FieldOpening>,
): Array<typeof eventFields.$inferInsert> {
  return Object.entries(fields).map(([name, opening]) => ({
    logId: log,
    seq,
    name,
    salt: opening.salt,
    value: canonicalJson(opening.value),
  }));
}

/** Erase fields of one event: allowed by the table's trigger only under its redaction event. */
export async function deleteFieldRows(
  db: Db,
  log: string,
  seq: number,
  names: readonly string[],
): Promise<number> {
  const deleted = await db
    .delete(eventFields)
    .where(and(eq(eventFields.logId, log), eq(eventFields.seq, seq), inArray(eventFields.name, [...names])))
    .returning({ name: eventFields.name });
  return deleted.length;
}
