import {
  commitFields,
  committedFieldHashes,
  type DsseEnvelope,
  FIELDS_COMMITMENT,
  parseRedaction,
  REDACTION_KIND,
  type RedactionPayload,
  type StoredEvent,
  sameIdentity,
} from '@vouch/audit';
import { and, eq, gt, sql } from 'drizzle-orm';
import type { Database } from './database';
import { LedgerError } from './errors';
import { deleteFieldRows, fieldRows } from './event-fields';
import type { AppendInput } from './event-input';
import { keyTimeFloor, type Ledger, type LedgerTransaction } from './ledger';
import { auditEvents, eventFields } from './schema/core';

/** A field-committed event to append: `payload` must be an object; each member is a field. */
export type FieldsAppendInput = Omit<AppendInput, 'payload' | 'commitment'> & {
  payload: Record<string, unknown>;
};

/**
 * Append an event under the `fields/1` commitment: each top-level member of `payload` gets
 * a fresh random salt and a salted hash; the chain stores and hashes only the field hashes,
 * and the content (value and salt) goes into `event_fields` in the same transaction. A
 * field can later be erased with {@link redactFields} and every hash, proof and checkpoint
 * still verifies. The returned event carries its content as `fields`.
 *
 * @example
 * await appendWithFields(ledger, { log: 'crm', kind: 'customer.contacted', entity: 'cust_1',
 *   actor: 'gateway:mcp', payload: { email: 'ana@example.com', channel: 'email' } });
 */
export async function appendWithFields(ledger: Ledger, input: FieldsAppendInput): Promise<StoredEvent> {
  const { payload, fields } = commitFields(input.payload);
  return ledger.transact(input.log, async (tx) => {
    const event = await tx.append({
      kind: input.kind,
      entity: input.entity,
      actor: input.actor,
      payload: JSON.parse(payload),
      commitment: FIELDS_COMMITMENT,
    });
    const rows = fieldRows(input.log, event.seq, fields);
    if (rows.length > 0) await tx.db.insert(eventFields).values(rows);
    return { ...event, fields };
  });
}

/** What {@link redactFields} is asked to erase, and by whom. */
export interface RedactionInput {
  log: string;
  /** The event whose fields are erased. */
  seq: number;
  /** Top-level field names of that event. */
  fields: string[];
  /** Why (kept in the chain for good: name the request, not the person). */
  reason: string;
  /** The authenticated identity that asked. */
  actor: string;
  /** When the key the actor authenticated with was issued (see `BatchOptions.notBefore`). */
  keyIssuedAt?: string;
  /**
   * The redactor's author signature over the request (`event.redact`), kept in the
   * `event.redacted` payload as `signature` (a redaction without one hashes as before).
   */
  signature?: DsseEnvelope;
}

/** What a redaction wrote. */
export interface RedactionResult {
  /** The `event.redacted` event appended to the log. */
  event: StoredEvent;
  target: { seq: number; hash: string };
  fields: string[];
}

const MAX_REASON = 500;

/**
 * Erase fields of a `fields/1` event: append an `event.redacted` event (who, why, which
 * event and fields) and delete the fields' value and salt from `event_fields`, in one
 * transaction. The event's field hashes stay in the chain, so the chain, the Merkle tree and
 * every signed checkpoint verify as before, and verification reports the erasure with this
 * event.
 *
 * Refuses, writing nothing: `REDACTION_INVALID` (no fields, a repeated field, an empty or
 * overlong reason), `EVENT_NOT_FOUND`, `EVENT_NOT_REDACTABLE` (the event commits to its
 * whole payload: a record the server acts on, or an event written before fields/1),
 * `FIELD_NOT_FOUND` (the event has no such field), `FIELD_ALREADY_REDACTED`, and
 * `SELF_REDACTION` (the caller is the event's own actor: whoever caused an event, such as the
 * gateway that proposed or observed, never erases it, whichever of its keys it uses).
 */
export async function redactFields(ledger: Ledger, input: RedactionInput): Promise<RedactionResult> {
  const fields = checkRedactionInput(input);
  const erase = async (tx: LedgerTransaction): Promise<RedactionResult> => {
    const [target] = await tx.db
      .select({
        hash: auditEvents.hash,
        payload: auditEvents.payload,
        commitment: auditEvents.commitment,
        actor: auditEvents.actor,
      })
      .from(auditEvents)
      .where(and(eq(auditEvents.logId, input.log), eq(auditEvents.seq, input.seq)));
    if (target === undefined) {
      throw new LedgerError('EVENT_NOT_FOUND', `log ${input.log} has no event ${input.seq}`, {
        details: { log: input.log, seq: input.seq },
      });
    }
    if (sameIdentity(input.actor, target.actor)) {
      throw new LedgerError(
        'SELF_REDACTION',
        `event ${input.seq} was written by ${target.actor}, who may not erase it: ask another redactor`,
        { details: { seq: input.seq } },
      );
    }
    const hashes = committedFieldHashes(target.commitment, target.payload);
    if (hashes === null) {
      throw new LedgerError(
        'EVENT_NOT_REDACTABLE',
        `event ${input.seq} commits to its whole payload, so no single field of it can be erased`,
        { details: { seq: input.seq } },
      );
    }
    const unknown = fields.filter((name) => !Object.hasOwn(hashes, name));
    if (unknown.length > 0) {
      throw new LedgerError('FIELD_NOT_FOUND', `event ${input.seq} has no field ${unknown.join(', ')}`, {
        details: { seq: input.seq, fields: unknown },
      });
    }
    const present = new Set(
      (
        await tx.db
          .select({ name: eventFields.name })
          .from(eventFields)
          .where(and(eq(eventFields.logId, input.log), eq(eventFields.seq, input.seq)))
      ).map((row) => row.name),
    );
    // Content under an earlier redaction of this very event: it was never deleted (a
    // redaction event appended by someone else) or was put back. The database no longer
    // agrees with the chain, which is the integrity alarm's to tell; and a second redaction
    // would only make its author the one verification blames (FIELD_ALREADY_REDACTED).
    const named = await namedByRedactions(tx, input.log, { seq: input.seq, hash: target.hash });
    const kept = fields.filter((name) => present.has(name) && named.has(name));
    if (kept.length > 0) {
      const by = named.get(kept[0]!)!;
      const message = `field ${kept.join(', ')} of event ${input.seq} still has content, though ${REDACTION_KIND} ${by} erased it: it was never deleted, or was put back`;
      ledger.integrityAlarm.raise({
        code: 'RECORD_MISMATCH',
        log: input.log,
        seq: input.seq,
        table: 'event_fields',
        message,
      });
      throw new LedgerError(
        'FIELD_ALREADY_REDACTED',
        `${message}. \`vouch verify\` reports it (REDACTION_NOT_APPLIED); the role that owns the tables may delete the row, which the database allows under that redaction`,
        { details: { seq: input.seq, fields: kept, by } },
      );
    }
    const gone = fields.filter((name) => !present.has(name));
    if (gone.length > 0) {
      throw new LedgerError(
        'FIELD_ALREADY_REDACTED',
        `field ${gone.join(', ')} of event ${input.seq} is already erased`,
        { details: { seq: input.seq, fields: gone } },
      );
    }
    const payload: RedactionPayload = {
      target: { seq: input.seq, hash: target.hash },
      fields,
      reason: input.reason,
    };
    const event = await tx.append({
      kind: REDACTION_KIND,
      entity: `event/${input.seq}`,
      actor: input.actor,
      payload: input.signature ? { ...payload, signature: input.signature } : payload,
    });
    // The event above is what the table's trigger looks for before it lets a row go.
    const deleted = await deleteFieldRows(tx.db, input.log, input.seq, fields);
    if (deleted !== fields.length) {
      // Another transaction erased one first: roll back rather than record a half redaction.
      throw new LedgerError('FIELD_ALREADY_REDACTED', `a field of event ${input.seq} was erased meanwhile`, {
        details: { seq: input.seq, fields },
      });
    }
    return { event, target: payload.target, fields };
  };
  return ledger.transact(input.log, erase, keyTimeFloor(input.keyIssuedAt));
}

/**
 * The fields the log's redaction events after `target` name as erased from it (its seq and
 * hash, as the database's guard and verification match them), each with the first such event.
 */
async function namedByRedactions(
  tx: LedgerTransaction,
  log: string,
  target: { seq: number; hash: string },
): Promise<Map<string, number>> {
  const rows = await tx.db
    .select({ seq: auditEvents.seq, payload: auditEvents.payload })
    .from(auditEvents)
    .where(
      and(
        eq(auditEvents.logId, log),
        eq(auditEvents.entityId, `event/${target.seq}`),
        eq(auditEvents.kind, REDACTION_KIND),
        gt(auditEvents.seq, target.seq),
      ),
    )
    .orderBy(auditEvents.seq);
  const named = new Map<string, number>();
  for (const row of rows) {
    const redaction = parseRedaction(row.payload);
    if (redaction?.target.seq !== target.seq || redaction.target.hash !== target.hash) continue;
    for (const name of redaction.fields) if (!named.has(name)) named.set(name, Number(row.seq));
  }
  return named;
}

/** The sorted field names, once the input is one a redaction can be made of. */
function checkRedactionInput(input: RedactionInput): string[] {
  const invalid = (message: string) => new LedgerError('REDACTION_INVALID', message);
  if (!Number.isSafeInteger(input.seq) || input.seq < 1) throw invalid('seq must be a positive integer');
  if (!Array.isArray(input.fields) || input.fields.length === 0) throw invalid('name at least one field');
  if (!input.fields.every((name) => typeof name === 'string' && name.length > 0)) {
    throw invalid('field names are non-empty strings');
  }
  const fields = [...new Set(input.fields)].sort();
  if (fields.length !== input.fields.length) throw invalid('a field is named twice');
  const reason = typeof input.reason === 'string' ? input.reason.trim() : '';
  if (reason.length === 0 || reason.length > MAX_REASON) {
    throw invalid(`a reason of 1 to ${MAX_REASON} characters is required`);
  }
  return fields;
}

/**
 * The seqs of events up to `treeSize` whose fields a redaction event after `treeSize`
 * erased. A bundle that ends at `treeSize` shows those fields erased without the event that
 * authorized it (`REDACTION_UNAUTHORIZED`): export up to a newer checkpoint instead.
 */
export async function redactedAfter(database: Database, log: string, treeSize: number): Promise<number[]> {
  const rows = await database.rows<{ seq: number | string }>(
    sql`select distinct (payload::jsonb -> 'target' ->> 'seq')::bigint as seq from audit_events
        where log_id = ${log} and kind = ${REDACTION_KIND} and seq > ${treeSize}
          and (payload::jsonb -> 'target' ->> 'seq')::bigint <= ${treeSize}
        order by 1`,
  );
  return rows.map((row) => Number(row.seq));
}
