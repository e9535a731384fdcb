import {
  type ChainFailure,
  canonicalJson,
  committedFieldHashes,
  type DsseEnvelope,
  parseRedaction,
  REDACTION_KIND,
  type StoredEvent,
  sameIdentity,
} from '@vouch/audit';
import { and, eq } from 'drizzle-orm';
import { anyOf } from './batched-sql';
import type { Database, Db } from './database';
import { type KeyHistory, OPERATOR_ACTOR, timeText } from './keys/key-history';
import { loadKeyHistory } from './keys/load-key-history';
import type { RecordRule } from './records/record-rules';
import { auditEvents, eventFields } from './schema/core';
import type { SignatureRule, SignatureViolation } from './signatures/signing-key-registry';

export { OPERATOR_ACTOR };

/** The action a redactor signs (claims: the body of `POST …/redactions`, the path's `seq` added). */
export const REDACT_ACTION = 'event.redact';

/** The role a key must hold to erase fields over HTTP (`POST …/redactions`). */
const REDACTOR_ROLE = 'redactor';
const MAX_REASON = 500;

/** A redaction rule the server enforces, by the code it refuses such a redaction with. */
export type RedactionRule = Extract<
  RecordRule,
  | 'REDACTION_INVALID'
  | 'EVENT_NOT_FOUND'
  | 'EVENT_NOT_REDACTABLE'
  | 'FIELD_NOT_FOUND'
  | 'FIELD_ALREADY_REDACTED'
  | 'SELF_REDACTION'
  | 'ROLE_FORBIDDEN'
  | 'LOG_FORBIDDEN'
>;

/** A redaction event as the rules read it. */
export interface RedactionEventRow {
  seq: number;
  entity: string;
  actor: string;
  at: string;
  /**
   * The time it is judged at (ms): the latest `at` of the log's events up to it, so a
   * back-dated redaction cannot reach back before a key's end; NaN when its `at` is no time.
   */
  judgedAt: number;
  payload: string;
  commitment: string | null;
}

/**
 * Every `event.redacted` event of `log` must be one the server would have written: a
 * well-formed redaction (`REDACTION_INVALID`) of an earlier event whose seq and hash it names
 * (`EVENT_NOT_FOUND`), that commits to fields (`EVENT_NOT_REDACTABLE`) including every field
 * named (`FIELD_NOT_FOUND`), not erased before (`FIELD_ALREADY_REDACTED`), by someone other
 * than the event's own actor (`SELF_REDACTION`), who held a live key with the `redactor`
 * role for this log when the redaction was recorded (`ROLE_FORBIDDEN`, `LOG_FORBIDDEN`: at the
 * latest time of the log's events up to it, never an earlier one it claims; keys
 * are the `api_key.*` events of the `system` log, less those issued by someone who could
 * not: see `createKeyHistory`), or by the operator's CLI
 * ({@link OPERATOR_ACTOR}), and signed by that redactor when it must sign then (a signature
 * rule: such a redaction authorizes no erasure). Each break is a `RECORD_RULE_VIOLATION` at the redaction's seq,
 * `table: 'event_fields'` (the rows it let go), `target` the event it names.
 *
 * The database lets a field's row go under any redaction event naming it, and the runtime
 * role can append one: this is what tells such an erasure from one the server made.
 *
 * Fed by the caller that streams the log's events anyway (`verifyChain`), so the log is not
 * read a second time to find its redactions: `add` every event in seq order (redactions are
 * kept, they are rare; anything else costs a comparison), then `failures()` once the stream
 * is done.
 */
export function createRedactionRuleCheck(database: Database, log: string) {
  const redactions: RedactionEventRow[] = [];
  let latestAt: string | null = null;
  let latest = Number.NEGATIVE_INFINITY;
  return {
    add(event: StoredEvent): void {
      // A batch's events share one time: an equal string needs no parsing.
      if (event.at !== latestAt) {
        const time = Date.parse(event.at);
        if (time > latest) {
          latest = time;
          latestAt = event.at;
        }
      }
      if (event.kind !== REDACTION_KIND) return;
      const { seq, entity, actor, at, payload } = event;
      const judgedAt = Number.isNaN(Date.parse(at)) ? Number.NaN : latest;
      redactions.push({ seq, entity, actor, at, judgedAt, payload, commitment: event.commitment ?? null });
    },
    async *failures(): AsyncGenerator<ChainFailure> {
      const state: RedactionCheckState = { erased: new Map() };
      for (let at = 0; at < redactions.length; at += 1_000) {
        yield* redactionFailures(database.db, log, redactions.slice(at, at + 1_000), state);
      }
    },
  };
}

/** What the rules carry from one page of redactions to the next. */
interface RedactionCheckState {
  keys?: KeyHistory;
  /** Fields already erased, per target seq: a second erasure of one is refused. */
  erased: Map<number, Set<string>>;
}

/** The rules over one page of redaction events, in seq order. */
async function* redactionFailures(
  db: Db,
  log: string,
  page: readonly RedactionEventRow[],
  state: RedactionCheckState,
): AsyncGenerator<ChainFailure> {
  if (page.length === 0) return;
  state.keys ??= (await loadKeyHistory(db)).history;
  const { keys, erased } = state;
  const targets = await targetsOf(db, log, page);
  const content = await contentOf(db, log, [...targets.keys()]);
  for (const event of page) {
    const fail = (rule: RedactionRule | SignatureRule, message: string, target?: number): ChainFailure => ({
      seq: event.seq,
      code: 'RECORD_RULE_VIOLATION',
      rule,
      table: 'event_fields',
      id: event.entity,
      ...(target === undefined ? {} : { target }),
      message: `${REDACTION_KIND} ${event.seq}: ${message}`,
    });
    const redaction = wellFormed(event);
    if (typeof redaction === 'string') {
      yield fail('REDACTION_INVALID', redaction);
      continue;
    }
    const targetSeq = redaction.target.seq;
    const target = targets.get(targetSeq);
    if (target === undefined || targetSeq >= event.seq || target.hash !== redaction.target.hash) {
      yield fail(
        'EVENT_NOT_FOUND',
        `names event ${targetSeq} with hash ${redaction.target.hash}, which no earlier event of the log is`,
        targetSeq,
      );
      continue;
    }
    const hashes = committedFieldHashes(target.commitment, target.payload);
    if (hashes === null) {
      yield fail(
        'EVENT_NOT_REDACTABLE',
        `erases fields of event ${targetSeq}, which commits to its whole payload`,
        targetSeq,
      );
      continue;
    }
    const unknown = redaction.fields.filter((name) => !Object.hasOwn(hashes, name));
    if (unknown.length > 0) {
      yield fail('FIELD_NOT_FOUND', `event ${targetSeq} has no field ${unknown.join(', ')}`, targetSeq);
    }
    // Read after the stream, so a redaction committed while it ran has deleted its rows by
    // now (in its own transaction, as the server always does): content named by a redaction
    // the stream saw was never deleted, or was put back.
    const kept = redaction.fields.filter(
      (name) => Object.hasOwn(hashes, name) && content.get(targetSeq)?.has(name) === true,
    );
    if (kept.length > 0) {
      yield {
        seq: targetSeq,
        code: 'REDACTION_NOT_APPLIED',
        table: 'event_fields',
        fields: kept,
        message: `field ${kept.join(', ')} of event ${targetSeq} still has content, though ${REDACTION_KIND} ${event.seq} erased it: it was never deleted, or was put back`,
      };
    }
    const done = erased.get(targetSeq) ?? new Set<string>();
    const again = redaction.fields.filter((name) => done.has(name));
    if (again.length > 0) {
      yield fail(
        'FIELD_ALREADY_REDACTED',
        `field ${again.join(', ')} of event ${targetSeq} was erased by an earlier redaction`,
        targetSeq,
      );
    }
    for (const name of redaction.fields) done.add(name);
    erased.set(targetSeq, done);
    if (sameIdentity(event.actor, target.actor)) {
      yield fail(
        'SELF_REDACTION',
        `${event.actor} erased fields of event ${targetSeq}, which ${target.actor} wrote`,
        targetSeq,
      );
    }
    const authority = authorityOf(keys, event.actor, log, event.judgedAt);
    if (authority !== null) {
      yield fail(
        authority.rule,
        `${event.actor} ${authority.why} at ${timeText(event.at, event.judgedAt)}`,
        targetSeq,
      );
      continue;
    }
    const unsigned = signatureViolation(keys, log, event, redaction);
    if (unsigned !== null) {
      yield fail(unsigned.rule, `${unsigned.why}: it authorizes no erasure`, targetSeq);
    }
  }
}

/**
 * Why a redaction by a key holder does not carry its redactor's signature when it must (the
 * redactor holds an enrolled signing key then, or every author must sign): signed as
 * {@link REDACT_ACTION} over the request (`fields`, `reason`, the path's `seq`) this payload
 * records. Null when it holds; the operator's CLI signs nothing.
 */
function signatureViolation(
  keys: KeyHistory,
  log: string,
  event: RedactionEventRow,
  redaction: { target: { seq: number }; fields: string[]; reason: string },
): SignatureViolation | null {
  if (event.actor === OPERATOR_ACTOR) return null;
  const { signature } = JSON.parse(event.payload) as { signature?: DsseEnvelope };
  return keys.signingKeys.judge({
    log,
    action: REDACT_ACTION,
    actor: event.actor,
    at: event.judgedAt,
    signature,
    claimsMatch: (claims) => redactsAsSigned(claims, redaction),
  });
}

/** True when the signed request (`{fields, reason, seq}`) asks for exactly this redaction. */
function redactsAsSigned(
  claims: unknown,
  redaction: { target: { seq: number }; fields: string[]; reason: string },
): boolean {
  if (typeof claims !== 'object' || claims === null || Array.isArray(claims)) return false;
  const { fields, reason, seq, ...rest } = claims as Record<string, unknown>;
  if (Object.keys(rest).length > 0 || !Array.isArray(fields)) return false;
  // The server sorts the names (and refuses a repeated one).
  const sorted = [...fields].sort();
  return (
    seq === redaction.target.seq &&
    reason === redaction.reason &&
    canonicalJson(sorted) === canonicalJson(redaction.fields)
  );
}

/** The redaction an event records, or why the server would not have written it. */
function wellFormed(event: {
  seq: number;
  entity: string;
  payload: string;
  commitment: string | null;
}): { target: { seq: number; hash: string }; fields: string[]; reason: string } | string {
  if (event.commitment !== null) return `is written under commitment ${event.commitment}`;
  const redaction = parseRedaction(event.payload);
  if (redaction === null) return 'its payload is not a redaction';
  const payload = JSON.parse(event.payload) as Record<string, unknown>;
  const extra = Object.keys(payload).filter((k) => !['target', 'fields', 'reason', 'signature'].includes(k));
  const extraTarget = Object.keys(redaction.target).filter((k) => k !== 'seq' && k !== 'hash');
  if (extra.length > 0 || extraTarget.length > 0) return 'its payload holds members a redaction has not';
  const { fields, reason, target } = redaction;
  if (target.seq < 1) return `names event ${target.seq}`;
  if (event.entity !== `event/${target.seq}`) return `is about ${event.entity}, not event/${target.seq}`;
  if (fields.length === 0 || fields.some((name) => name.length === 0)) return 'names no field';
  // The server sorts the names and refuses a repeated one.
  if (fields.some((name, i) => i > 0 && fields[i - 1]! >= name)) return 'names fields unsorted or twice';
  const trimmed = reason.trim().length;
  if (trimmed === 0 || trimmed > MAX_REASON) return `a reason of 1 to ${MAX_REASON} characters is required`;
  return { target, fields, reason };
}

/** Why `actor` could not redact in `log` at `at` (ms), or null when it could. */
function authorityOf(
  keys: KeyHistory,
  actor: string,
  log: string,
  at: number,
): { rule: 'ROLE_FORBIDDEN' | 'LOG_FORBIDDEN'; why: string } | null {
  if (actor === OPERATOR_ACTOR) return null;
  const redactorKeys = keys.keysOf(actor).filter((key) => key.roles.includes(REDACTOR_ROLE));
  if (redactorKeys.length === 0) {
    return { rule: 'ROLE_FORBIDDEN', why: `held no key with the ${REDACTOR_ROLE} role` };
  }
  const forLog = redactorKeys.filter((key) => key.logs === null || key.logs.includes(log));
  if (forLog.length === 0) {
    return { rule: 'LOG_FORBIDDEN', why: `held no ${REDACTOR_ROLE} key for log ${log}` };
  }
  if (Number.isNaN(at) || !forLog.some((key) => key.createdAt <= at && at < key.endsAt)) {
    return {
      rule: 'ROLE_FORBIDDEN',
      why: `held no live ${REDACTOR_ROLE} key (not yet issued, revoked or expired)`,
    };
  }
  return null;
}

/** The names of the fields with content in `event_fields`, by seq, of the events `seqs` (one query). */
async function contentOf(db: Db, log: string, seqs: readonly number[]): Promise<Map<number, Set<string>>> {
  const present = new Map<number, Set<string>>();
  if (seqs.length === 0) return present;
  const rows = await db
    .select({ seq: eventFields.seq, name: eventFields.name })
    .from(eventFields)
    .where(and(eq(eventFields.logId, log), anyOf(eventFields.seq, seqs, 'bigint')));
  for (const { seq, name } of rows) {
    const names = present.get(Number(seq)) ?? new Set<string>();
    names.add(name);
    present.set(Number(seq), names);
  }
  return present;
}

/** The events a page of redactions names, by seq (one query). */
async function targetsOf(
  db: Db,
  log: string,
  page: readonly { payload: string }[],
): Promise<Map<number, { hash: string; actor: string; payload: string; commitment: string | null }>> {
  const seqs = [
    ...new Set(page.map((event) => parseRedaction(event.payload)?.target.seq).filter(Number.isSafeInteger)),
  ] as number[];
  if (seqs.length === 0) return new Map();
  const rows = await db
    .select({
      seq: auditEvents.seq,
      hash: auditEvents.hash,
      actor: auditEvents.actor,
      payload: auditEvents.payload,
      commitment: auditEvents.commitment,
    })
    .from(auditEvents)
    .where(and(eq(auditEvents.logId, log), anyOf(auditEvents.seq, seqs, 'bigint')));
  return new Map(rows.map(({ seq, ...row }) => [seq, row]));
}
