import type { ChainFailure } from '@vouch/audit';
import { and, asc, eq, gt, type SQL } from 'drizzle-orm';
import { anyOf } from '../batched-sql';
import type { Database, Db } from '../database';
import { eventPagesOfKinds } from '../event-store';
import { apiKeyRevocations, apiKeys, auditEvents } from '../schema/core';
import {
  type BindingEvent,
  expiryOf,
  KEY_CREATED,
  KEY_EXPIRES,
  KEY_REVOKED,
  type KeyProof,
  proveKeyRow,
  proveRevocationRow,
  SYSTEM_LOG,
} from './api-key-events';
import { unprovenMessage } from './check-key-authority';
import { firstAdoptions } from './first-adoptions';

/** A key table that disagrees with the `system` log; the shape `verifyChain` reports. */
export interface ApiKeyFailure extends ChainFailure {
  code:
    | 'KEY_WITHOUT_EVENT'
    | 'KEY_MISMATCH'
    | 'KEY_UNPROVEN'
    | 'REVOCATION_WITHOUT_EVENT'
    | 'REVOCATION_MISMATCH';
  table: 'api_keys' | 'api_key_revocations';
  id: string;
}

export interface CheckApiKeyTablesOptions {
  /** Rows (or events) read per query (default 1,000). */
  pageSize?: number;
  /** Run the reads here instead of on the database, e.g. inside a snapshot transaction. */
  executor?: Db;
  signal?: AbortSignal;
}

/**
 * Cross-check the key tables against the `system` log, page by page:
 * - `KEY_WITHOUT_EVENT`: a key row whose `event_seq` names no `api_key.created` event about
 *   it (a row inserted behind the ledger's back); `KEY_MISMATCH`: a key row that does not
 *   rebuild its event's payload (an edited row), or an `api_key.created` event whose row is
 *   gone (also a key issued before the key commitment whose operator's `api_key.adopted`
 *   event commits to another hash); `KEY_UNPROVEN`: a key issued before events committed to
 *   the key hash, and not adopted: all but the hash is proven (`vouch keys adopt`);
 * - `REVOCATION_WITHOUT_EVENT` / `REVOCATION_MISMATCH`: the same for revocation rows and
 *   `api_key.revoked` events; `REVOCATION_MISMATCH` also for an `api_key.expires` event (a
 *   rotation's grace deadline, which has no row) that is malformed or names no key.
 * `seq` is the event the row names (0 when it names none).
 *
 * The payload hashes are trusted only because `verifyChain` checks them in the same run:
 * run this from a verification of the `system` log.
 *
 * @example
 * for await (const failure of checkApiKeyTables(database)) report.failures.push(failure);
 */
export async function* checkApiKeyTables(
  database: Database,
  options: CheckApiKeyTablesOptions = {},
): AsyncGenerator<ApiKeyFailure> {
  const db = options.executor ?? database.db;
  const pageSize = options.pageSize ?? 1_000;
  const codes = {
    api_keys: { no_event: 'KEY_WITHOUT_EVENT', mismatch: 'KEY_MISMATCH', unproven: 'KEY_UNPROVEN' },
    api_key_revocations: {
      no_event: 'REVOCATION_WITHOUT_EVENT',
      mismatch: 'REVOCATION_MISMATCH',
      unproven: 'REVOCATION_MISMATCH',
    },
  } as const;
  const explain: Record<Exclude<KeyProof, 'proven'>, (subject: string) => string> = {
    no_event: (subject) => `${subject} names no event that records it`,
    mismatch: (subject) => `${subject} differs from the payload of its event (or of its adoption)`,
    unproven: unprovenMessage,
  };

  const eventColumns = {
    kind: auditEvents.kind,
    entityId: auditEvents.entityId,
    recordedAt: auditEvents.recordedAt,
    payload: auditEvents.payload,
    payloadHash: auditEvents.payloadHash,
  };
  const eventOf = (seq: PgColumnLike) =>
    and(eq(auditEvents.logId, SYSTEM_LOG), eq(auditEvents.seq, seq as unknown as typeof auditEvents.seq));

  let after = '';
  for (;;) {
    options.signal?.throwIfAborted();
    const page = await db
      .select({ row: apiKeys, event: eventColumns })
      .from(apiKeys)
      .leftJoin(auditEvents, eventOf(apiKeys.eventSeq))
      .where(gt(apiKeys.id, after))
      .orderBy(asc(apiKeys.id))
      .limit(pageSize);
    const adoptions = await firstAdoptions(
      db,
      page.map(({ row }) => row.id),
    );
    for (const { row, event } of page) {
      const proof = proveKeyRow(
        { ...row, scopes: row.scopes ?? [], environments: row.environments ?? null, logs: row.logs ?? null },
        bindingOf(event),
        adoptions.get(row.id) ?? null,
      );
      if (proof === 'proven') continue;
      yield {
        seq: row.eventSeq ?? 0,
        code: codes.api_keys[proof],
        table: 'api_keys',
        id: row.id,
        message: explain[proof](`api_keys row ${row.id}`),
      };
    }
    if (page.length < pageSize) break;
    after = page[page.length - 1]!.row.id;
  }

  after = '';
  for (;;) {
    options.signal?.throwIfAborted();
    const page = await db
      .select({ row: apiKeyRevocations, event: eventColumns })
      .from(apiKeyRevocations)
      .leftJoin(auditEvents, eventOf(apiKeyRevocations.eventSeq))
      .where(gt(apiKeyRevocations.keyId, after))
      .orderBy(asc(apiKeyRevocations.keyId))
      .limit(pageSize);
    for (const { row, event } of page) {
      const proof = proveRevocationRow(row, bindingOf(event));
      if (proof === 'proven') continue;
      yield {
        seq: row.eventSeq ?? 0,
        code: codes.api_key_revocations[proof],
        table: 'api_key_revocations',
        id: row.keyId,
        message: explain[proof](`api_key_revocations row for ${row.keyId}`),
      };
    }
    if (page.length < pageSize) break;
    after = page[page.length - 1]!.row.keyId;
  }

  yield* checkExpiryEvents(db, { pageSize, ...(options.signal ? { signal: options.signal } : {}) });

  // The other direction: a key event whose row is gone.
  for await (const events of eventPagesOfKinds(db, SYSTEM_LOG, [KEY_CREATED, KEY_REVOKED], {
    pageSize,
    ...(options.signal ? { signal: options.signal } : {}),
  })) {
    const seqs = events.map((e) => e.seq);
    const present = new Set<number>();
    for (const seq of await seqsNamed(db, apiKeys.eventSeq, seqs)) present.add(seq);
    for (const seq of await seqsNamed(db, apiKeyRevocations.eventSeq, seqs)) present.add(seq);
    for (const event of events) {
      if (present.has(event.seq)) continue;
      const created = event.kind === KEY_CREATED;
      yield {
        seq: event.seq,
        code: created ? 'KEY_MISMATCH' : 'REVOCATION_MISMATCH',
        table: created ? 'api_keys' : 'api_key_revocations',
        id: event.entity,
        message: `event ${event.seq} records ${event.kind} ${event.entity}, but no ${created ? 'api_keys' : 'api_key_revocations'} row names it`,
      };
    }
  }
}

/**
 * Each `api_key.expires` event must set a deadline for a key that exists. Its payload is
 * trusted only as far as `verifyChain` checks its hash; a malformed one ends the key at once
 * at authentication (fail closed), and is reported here.
 */
async function* checkExpiryEvents(
  db: Db,
  options: { pageSize: number; signal?: AbortSignal },
): AsyncGenerator<ApiKeyFailure> {
  let after = 0;
  for (;;) {
    options.signal?.throwIfAborted();
    const page = await db
      .select({
        seq: auditEvents.seq,
        entityId: auditEvents.entityId,
        recordedAt: auditEvents.recordedAt,
        payload: auditEvents.payload,
        payloadHash: auditEvents.payloadHash,
      })
      .from(auditEvents)
      .where(
        and(eq(auditEvents.logId, SYSTEM_LOG), eq(auditEvents.kind, KEY_EXPIRES), gt(auditEvents.seq, after)),
      )
      .orderBy(asc(auditEvents.seq))
      .limit(options.pageSize);
    const ids = [...new Set(page.map((e) => e.entityId).filter((id): id is string => id !== null))];
    const known = new Set(
      ids.length === 0
        ? []
        : (
            await db
              .select({ id: apiKeys.id })
              .from(apiKeys)
              .where(anyOf(apiKeys.id, ids, 'text'))
          ).map((row) => row.id),
    );
    for (const event of page) {
      const id = event.entityId ?? '';
      const why = !known.has(id)
        ? 'names no key'
        : expiryOf(id, event).proof === 'mismatch'
          ? 'is not the deadline its hash covers'
          : null;
      if (why === null) continue;
      yield {
        seq: event.seq,
        code: 'REVOCATION_MISMATCH',
        table: 'api_key_revocations',
        id,
        message: `event ${event.seq} (${KEY_EXPIRES} ${id}) ${why}`,
      };
    }
    if (page.length < options.pageSize) return;
    after = page[page.length - 1]!.seq;
  }
}

type PgColumnLike = typeof apiKeys.eventSeq | typeof apiKeyRevocations.eventSeq;

async function seqsNamed(db: Db, column: PgColumnLike, seqs: number[]): Promise<number[]> {
  const where: SQL = anyOf(column, seqs, 'bigint');
  const rows = await db.select({ seq: column }).from(column.table).where(where);
  return rows.map((r) => r.seq).filter((seq): seq is number => seq !== null);
}

function bindingOf(
  event: {
    kind: string | null;
    entityId: string | null;
    recordedAt: string | null;
    payload: string | null;
    payloadHash: string | null;
  } | null,
): BindingEvent | null {
  if (event === null || event.kind === null) return null;
  return event as BindingEvent;
}
