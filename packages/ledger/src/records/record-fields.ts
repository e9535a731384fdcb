import { commitMember, type FieldOpening, fieldHashOf, memberFieldsCommitment } from '@vouch/audit';
import { CLAIM_SWEEPER_IDENTITY } from '@vouch/records';
import { and, eq, isNotNull } from 'drizzle-orm';
import { anyOf } from '../batched-sql';
import type { Db } from '../database';
import { LedgerError } from '../errors';
import { fieldRows } from '../event-fields';
import type { EventLink } from '../ledger';
import { auditEvents, eventFields } from '../schema/core';
import type { IntegrityViolation } from './record-integrity';
import type { RecordKind } from './types';

/**
 * The member of each kind of record that holds what a caller sent in free form, and so where
 * personal data lands: a proposal's `arguments` (the agent's), an observation's `result` (the
 * tool's), a decision's `repair` (the corrected action, which copies the proposal's
 * arguments) and a refused execution's `attempted` (the body exactly as posted, a result
 * included). It is committed key by key (`member-fields/1:<member>`, docs/chain.md), so a
 * redactor can erase one top-level key of it later. Every other member, and every other kind
 * of record, is what the server acts on and compares, and is hashed whole.
 */
export const ERASABLE_MEMBER: Partial<Record<RecordKind, ErasableMember>> = {
  proposal: 'arguments',
  observation: 'result',
  decision: 'repair',
  execution_refused: 'attempted',
};

type ErasableMember = 'arguments' | 'result' | 'repair' | 'attempted';

/** A record as it is stored: its erasable member replaced by its keys' field hashes. */
export interface CommittedRecord<R> {
  /** The event's payload and the row's content. */
  stored: R;
  commitment: string;
  /** The content of each key, for `event_fields`. */
  fields: Record<string, FieldOpening>;
}

/**
 * A record of `kind` as stored, or null when it is stored whole: kinds without an erasable
 * member; a member that is not a JSON object (an observation's `null`, a string result, a
 * decision without a repair), which has no keys to erase one by one; and the claim sweeper's
 * observation, whose result is the server's own account (the claim it lapsed) that the
 * record rules read.
 */
export function commitRecord<R extends object>(kind: RecordKind, record: R): CommittedRecord<R> | null {
  const member = ERASABLE_MEMBER[kind];
  if (member === undefined) return null;
  if (
    kind === 'observation' &&
    (record as { executed_by?: unknown }).executed_by === CLAIM_SWEEPER_IDENTITY
  ) {
    return null;
  }
  const value = (record as Record<string, unknown>)[member];
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return null;
  const { record: stored, fields } = commitMember(record as Record<string, unknown>, member);
  return { stored: stored as R, commitment: memberFieldsCommitment(member), fields };
}

/** The `event_fields` rows of a committed record, once its event has a seq. */
export function committedFieldRows(link: EventLink, fields: Record<string, FieldOpening>) {
  return fieldRows(link.logId, link.eventSeq, fields).map((values) => ({ table: eventFields, values }));
}

/** What a record's event committed to, and the content still there. */
export interface RecordContent {
  seq: number;
  /** The erasable member's field content, by key; an erased key has none. */
  openings: Map<string, { salt: string; value: string }>;
}

/** The key of a record's content in what {@link readRecordContent} answers. */
export function contentKey(kind: RecordKind, id: string): string {
  return `${kind}\0${id}`;
}

/**
 * The content of the committed records of `kinds` among `ids` in `log`, by
 * {@link contentKey}: one query. A record stored whole (written before records were
 * committed, or a member that is not an object) has no entry.
 */
export async function readRecordContent(
  db: Db,
  log: string,
  kinds: readonly RecordKind[],
  ids: readonly string[],
): Promise<Map<string, RecordContent>> {
  const content = new Map<string, RecordContent>();
  const erasable = kinds.filter((kind) => ERASABLE_MEMBER[kind] !== undefined);
  if (ids.length === 0 || erasable.length === 0) return content;
  const rows = await db
    .select({
      kind: auditEvents.kind,
      id: auditEvents.entityId,
      seq: auditEvents.seq,
      name: eventFields.name,
      salt: eventFields.salt,
      value: eventFields.value,
    })
    .from(auditEvents)
    .leftJoin(
      eventFields,
      and(eq(eventFields.logId, auditEvents.logId), eq(eventFields.seq, auditEvents.seq)),
    )
    .where(
      and(
        eq(auditEvents.logId, log),
        anyOf(auditEvents.entityId, [...new Set(ids)]),
        anyOf(auditEvents.kind, erasable),
        isNotNull(auditEvents.commitment),
      ),
    );
  for (const row of rows) {
    const key = contentKey(row.kind as RecordKind, row.id);
    let entry = content.get(key);
    if (!entry) {
      entry = { seq: Number(row.seq), openings: new Map() };
      content.set(key, entry);
    }
    if (row.name !== null && row.salt !== null && row.value !== null) {
      entry.openings.set(row.name, { salt: row.salt, value: row.value });
    }
  }
  return content;
}

/** Which keys of a record's erasable member were erased: present on a record read back only when some were. */
export type Redacted = Partial<Record<ErasableMember, string[]>>;

/**
 * A stored record as the server and its readers see it: its erasable member's field hashes
 * replaced by the content still in `event_fields`, and the erased keys named under
 * `redacted` (their values are gone, not hidden: there is nothing to show but the marker).
 * A record without content (stored whole) is returned as it is.
 *
 * Content is checked against the hash its record committed to (the row itself was checked
 * against its event before): an edited value or salt, or a key no hash commits to, throws.
 *
 * @throws LedgerError `RECORD_INTEGRITY_VIOLATION` (table `event_fields`).
 */
export function openRecord<R extends { id: string }>(
  kind: RecordKind,
  log: string,
  record: R,
  content: RecordContent | undefined,
): R & { redacted?: Redacted } {
  const member = ERASABLE_MEMBER[kind];
  if (member === undefined || content === undefined) return record;
  const violation = (): LedgerError => {
    const details: IntegrityViolation = {
      log,
      table: 'event_fields',
      id: record.id,
      seq: content.seq,
      reason: 'RECORD_MISMATCH',
    };
    return new LedgerError(
      'RECORD_INTEGRITY_VIOLATION',
      `the ${member} of ${kind} ${record.id} in log ${log} differ from what its event ${content.seq} committed to: the server refuses to act on it and wrote nothing; run \`vouch verify\``,
      { details: { ...details } },
    );
  };
  const hashes = (record as Record<string, unknown>)[member];
  if (typeof hashes !== 'object' || hashes === null || Array.isArray(hashes)) throw violation();
  const committed = hashes as Record<string, unknown>;
  for (const name of content.openings.keys()) if (!Object.hasOwn(committed, name)) throw violation();
  const opened: Record<string, unknown> = {};
  const erased: string[] = [];
  for (const [name, hash] of Object.entries(committed)) {
    const stored = content.openings.get(name);
    if (stored === undefined) {
      erased.push(name);
      continue;
    }
    let value: unknown;
    try {
      value = JSON.parse(stored.value);
    } catch {
      throw violation();
    }
    if (fieldHashOf(name, { salt: stored.salt, value }) !== hash) throw violation();
    // As an own property whatever the name (a plain assignment of `__proto__` would be lost).
    Object.defineProperty(opened, name, { value, enumerable: true, writable: true, configurable: true });
  }
  const open = { ...record, [member]: opened } as R & { redacted?: Redacted };
  if (erased.length > 0) open.redacted = { [member]: erased.sort() };
  return open;
}
