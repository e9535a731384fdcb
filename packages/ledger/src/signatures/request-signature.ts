import { type AuthorKey, attachSignature, authorStatement, type DsseEnvelope } from '@vouch/audit';
import { desc, eq } from 'drizzle-orm';
import type { Database, Db } from '../database';
import { LedgerError } from '../errors';
import { SYSTEM_LOG } from '../keys/api-key-events';
import { createKeyHistory, type KeyHistory } from '../keys/key-history';
import { readKeyEvents } from '../keys/load-key-history';
import type { RecordContext } from '../records/record-context';
import { auditEvents } from '../schema/core';
import { serverEnvelope } from './server-signer';

const built = new WeakMap<object, Promise<{ head: number; history: KeyHistory }>>();

/**
 * The key history (API keys and signing keys) at the `system` log's head, read through `db`
 * and kept under `owner` (one per database or ledger) until that head moves: one probe of the
 * head per call while no key event is written.
 */
export async function keyHistoryThrough(db: Db, owner: object): Promise<KeyHistory> {
  const [row] = await db
    .select({ seq: auditEvents.seq })
    .from(auditEvents)
    .where(eq(auditEvents.logId, SYSTEM_LOG))
    .orderBy(desc(auditEvents.seq))
    .limit(1);
  const head = row === undefined ? 0 : Number(row.seq);
  const cached = await built.get(owner)?.catch(() => null);
  if (cached && cached.head === head) return cached.history;
  const building = readKeyEvents(db, head).then((events) => {
    const history = createKeyHistory();
    for (const event of events) history.add(event);
    return { head, history };
  });
  built.set(owner, building);
  return (await building).history;
}

/** The key history at the `system` log's head (see {@link keyHistoryThrough}). */
export function currentKeyHistory(database: Database): Promise<KeyHistory> {
  return keyHistoryThrough(database.db, database);
}

/**
 * The author signature a request carries (`caller.signature`, the `Vouch-Signature` header)
 * as the envelope the record keeps: the statement is rebuilt from the request (`claims`, the
 * log, the action, the caller's identity), so it verifies only for exactly this request.
 * Refused with `SIGNATURE_INVALID` unless it verifies with a live enrolled key of the caller;
 * with `SIGNATURE_REQUIRED` when there is none and the caller must sign. Undefined: unsigned,
 * and allowed to be.
 */
export async function signatureOfRequest(
  database: Database,
  ctx: RecordContext,
  action: string,
  claims: unknown,
  now: string,
): Promise<DsseEnvelope | undefined> {
  const history = await currentKeyHistory(database);
  const { identity, signature: detached } = ctx.caller;
  const envelope = detached
    ? attachSignature(authorStatement(ctx.log, action, identity, claims), detached)
    : undefined;
  const violation = history.signingKeys.judge({
    log: ctx.log,
    action,
    actor: identity,
    at: Date.parse(now),
    signature: envelope,
    claimsMatch: () => true,
  });
  if (violation === null) return envelope;
  if (violation.rule === 'SIGNATURE_MISSING') {
    throw new LedgerError(
      'SIGNATURE_REQUIRED',
      `${identity} holds an enrolled signing key (or every author must sign): sign the request (Vouch-Signature)`,
      { details: { action } },
    );
  }
  throw new LedgerError('SIGNATURE_INVALID', `the request's signature does not hold: ${violation.why}`, {
    details: { action, rule: violation.rule },
  });
}

/** A statement the server signs as one of its own identities. */
export interface ServerStatement {
  log: string;
  action: string;
  actor: string;
  claims: unknown;
}

/**
 * The server's signer for records it writes as `actor` (a `vouch:` identity): a function that
 * signs a statement with `key`, when that key is enrolled and live for `vouch:server` at `now`;
 * undefined otherwise (a key nobody enrolled makes signatures nobody can check, so the record is
 * written unsigned). Asked before a record transaction, so signing inside it reads nothing.
 */
export async function serverSignerOf(
  database: Database,
  key: AuthorKey | undefined,
  actor: string,
  now: string,
): Promise<((statement: ServerStatement) => DsseEnvelope) | undefined> {
  if (key === undefined) return undefined;
  const history = await currentKeyHistory(database);
  const live = history.signingKeys.liveKeysOf(actor, Date.parse(now));
  if (!live.some((k) => k.keyId === key.keyId)) return undefined;
  return (statement) => serverEnvelope(key, statement);
}
