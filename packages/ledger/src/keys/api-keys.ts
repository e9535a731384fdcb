import type { DsseEnvelope } from '@vouch/audit';
import { and, asc, count, eq, sql } from 'drizzle-orm';
import { type Database, type Db, rowsOf } from '../database';
import { LedgerError } from '../errors';
import { identitiesCollide } from '../identity/identity';
import type { IntegrityAlarm } from '../integrity-alarm';
import type { Ledger } from '../ledger';
import { apiKeyRevocations, apiKeys, auditEvents } from '../schema/core';
import {
  type AdoptionEvent,
  type ApiKeyRecord,
  expiryOf,
  KEY_ADOPTED,
  KEY_CREATED,
  KEY_EXPIRES,
  KEY_REVOKED,
  type KeyProof,
  type KeyRow,
  keyCreatedPayload,
  keyExpiresPayload,
  keyRevokedPayload,
  OPERATOR_ACTOR,
  proveKeyRow,
  SYSTEM_LOG,
  signatureColumn,
} from './api-key-events';
import { forbiddenKeyIds } from './forbidden-keys';
import { KEY_REVOKED_CHANNEL } from './key-revocation-feed';

/**
 * What to issue a key for; the caller made the secret and passes only its hash. `signature`:
 * the issuing admin's author signature over the request (`api_key.create`), kept in the row
 * and the event's payload.
 */
export type IssueApiKeyInput = Omit<KeyRow, 'createdAt' | 'signature'> & { signature?: DsseEnvelope };

/** A key found by its hash, with how its row stands against its event. */
export interface FoundApiKey {
  key: ApiKeyRecord;
  keyHash: string;
  /**
   * How the row stands against its event (`KeyProof`), or `forbidden`: row and event agree,
   * but the event's actor could not issue keys then (`KEY_ISSUER_FORBIDDEN`,
   * `KEY_REACH_FORBIDDEN`): the key authenticates nothing.
   */
  proof: KeyProof | 'forbidden';
}

/**
 * Issue a key: its `api_key.created` event first, then the row bound to it (`event_seq`), in
 * one system-log transaction. Refuses (`IDENTITY_COLLISION`, nothing written) an identity
 * that is spelled differently from an existing key's but equal to it in canonical form or
 * confusable with it. With `onlyIfNone`, issues nothing (and returns null) when any key
 * exists: the check runs under the system log's lock, so two processes issue one key.
 */
export function issueApiKey(
  ledger: Ledger,
  input: IssueApiKeyInput,
  options: { onlyIfNone?: boolean } = {},
): Promise<ApiKeyRecord | null> {
  return ledger.transact(SYSTEM_LOG, async (tx) => {
    if (options.onlyIfNone && (await countApiKeys(tx.db)) > 0) return null;
    const identities = await tx.db.selectDistinct({ identity: apiKeys.identity }).from(apiKeys);
    const collision = identities.find(({ identity }) => identitiesCollide(input.identity, identity));
    if (collision) {
      throw new LedgerError(
        'IDENTITY_COLLISION',
        `identity ${input.identity} can be mistaken for the existing identity ${collision.identity}: use that exact spelling, or another identity`,
        { details: { identity: input.identity, existing: collision.identity } },
      );
    }
    const { signature, ...rest } = input;
    const row: KeyRow = {
      ...rest,
      roles: [...new Set(input.roles)],
      scopes: [...new Set(input.scopes)],
      createdAt: tx.now,
      signature: signatureColumn(signature),
    };
    const event = await tx.append({
      kind: KEY_CREATED,
      entity: row.id,
      actor: row.createdBy,
      payload: keyCreatedPayload(row),
    });
    await tx.db.insert(apiKeys).values({ ...row, createdAt: event.at, eventSeq: event.seq });
    return toRecord({ ...row, createdAt: event.at }, null);
  });
}

/**
 * Revoke a key by adding its revocation row and `api_key.revoked` event (idempotent: an
 * already revoked key is returned as it is). Null for an unknown id. `signature`: the
 * revoking admin's author signature (`api_key.revoke`), kept in the row and the payload.
 */
export function revokeApiKey(
  ledger: Ledger,
  id: string,
  by: string,
  signature?: DsseEnvelope,
): Promise<ApiKeyRecord | null> {
  return ledger.transact(SYSTEM_LOG, async (tx) => {
    const [found] = await listApiKeysWhere(tx.db, eq(apiKeys.id, id));
    if (!found || found.revokedAt !== null) return found ?? null;
    const row = { keyId: id, revokedBy: by, revokedAt: tx.now, signature: signatureColumn(signature) };
    const event = await tx.append({
      kind: KEY_REVOKED,
      entity: id,
      actor: by,
      payload: keyRevokedPayload(row),
    });
    await tx.db.insert(apiKeyRevocations).values({ ...row, eventSeq: event.seq, revokedAt: event.at });
    return { ...found, revokedAt: event.at, revokedBy: by };
  });
}

/**
 * End a key `graceSeconds` after now (the system log batch's time): an `api_key.expires`
 * event, which the key lookup reads beside the key's row. Until then the key works; from
 * then on it authenticates nothing. The first deadline set stands (asking again returns the
 * key as it is), and a revoked key is returned as it is. Null for an unknown id. Every
 * process's key cache forgets the key at the commit (the revocation channel).
 */
export function scheduleApiKeyExpiry(
  ledger: Ledger,
  id: string,
  options: { graceSeconds: number; by: string },
): Promise<ApiKeyRecord | null> {
  return ledger.transact(SYSTEM_LOG, async (tx) => {
    const [found] = await listApiKeysWhere(tx.db, eq(apiKeys.id, id));
    if (!found || found.revokedAt !== null || found.expiresAt !== null) return found ?? null;
    const expiresAt = new Date(Date.parse(tx.now) + options.graceSeconds * 1000).toISOString();
    await tx.append({
      kind: KEY_EXPIRES,
      entity: id,
      actor: options.by,
      payload: keyExpiresPayload({ keyId: id, expiresAt, setBy: options.by }),
    });
    await tx.db.execute(sql`select pg_notify(${KEY_REVOKED_CHANNEL}, ${id})`);
    return { ...found, expiresAt };
  });
}

/** Every key, oldest first, with its revocation. */
export function listApiKeys(db: Db): Promise<ApiKeyRecord[]> {
  return listApiKeysWhere(db);
}

/** How many keys exist (revoked ones included). */
export async function countApiKeys(db: Db): Promise<number> {
  const [row] = await db.select({ n: count() }).from(apiKeys);
  return row?.n ?? 0;
}

/**
 * The keys whose hashes are `hashes`, in one query that also reads each row's event and
 * revocation, so a request is authenticated by a row proven against the chain in the same
 * round trip (see {@link proveKeyRow}). Keyed by hash; an unknown hash is absent. A row
 * that fails its proof (`no_event`, `mismatch`: inserted or edited behind the ledger's
 * back) is returned for the caller to refuse, and raises `alarm` (`KEY_MISMATCH`): a
 * forged key is damage for an operator to see, not only one refused request. So is a row
 * and event that agree but that no one who could issue keys wrote (`forbidden`: the
 * key-authority rule, see {@link forbiddenKeyIds}), such as a key the runtime role appended.
 *
 * A key is revoked by its revocation row or by its `api_key.revoked` event: a row deleted
 * behind the ledger's back must not bring a revoked key back to life (the event is found
 * through the `(log_id, entity_id)` index).
 */
export async function findApiKeysByHash(
  database: Database,
  hashes: readonly string[],
  alarm: IntegrityAlarm,
): Promise<Map<string, FoundApiKey>> {
  const rows = rowsOf<LookupRow>(
    await database.db.execute(sql`
      select k.id, k.event_seq as "eventSeq", k.key_hash as "keyHash", k.identity, k.roles, k.scopes, k.environments, k.logs,
             k.created_by as "createdBy", k.created_at as "createdAt", k.signature,
             e.kind as "eventKind", e.entity_id as "eventEntity", e.recorded_at as "eventAt",
             e.payload as "eventPayload", e.payload_hash as "eventPayloadHash",
             coalesce(r.revoked_at, re.recorded_at) as "revokedAt",
             coalesce(r.revoked_by, re.actor) as "revokedBy",
             xe.recorded_at as "expiryAt", xe.payload as "expiryPayload", xe.payload_hash as "expiryPayloadHash",
             ad.recorded_at as "adoptedAt", ad.payload as "adoptionPayload", ad.payload_hash as "adoptionPayloadHash"
      from ${apiKeys} k
      left join ${auditEvents} e on e.log_id = ${SYSTEM_LOG} and e.seq = k.event_seq
      left join ${apiKeyRevocations} r on r.key_id = k.id
      left join lateral (
        select recorded_at, actor from ${auditEvents}
        where log_id = ${SYSTEM_LOG} and entity_id = k.id and kind = ${KEY_REVOKED}
        order by seq limit 1
      ) re on true
      left join lateral (
        select recorded_at, payload, payload_hash from ${auditEvents}
        where log_id = ${SYSTEM_LOG} and entity_id = k.id and kind = ${KEY_EXPIRES}
        order by seq limit 1
      ) xe on true
      left join lateral (
        select recorded_at, payload, payload_hash from ${auditEvents}
        where log_id = ${SYSTEM_LOG} and entity_id = k.id and kind = ${KEY_ADOPTED} and actor = ${OPERATOR_ACTOR}
        order by seq limit 1
      ) ad on true
      where k.key_hash = any(${sql.param([...new Set(hashes)])}::text[])`),
  );
  const found = new Map<string, FoundApiKey>();
  // One read of the key history for the whole batch (and none for a batch of unknown keys).
  const forbidden = rows.length > 0 ? await forbiddenKeyIds(database) : null;
  for (const row of rows) {
    const keyRow: KeyRow = {
      id: row.id,
      keyHash: row.keyHash,
      identity: row.identity,
      roles: row.roles,
      scopes: row.scopes ?? [],
      environments: row.environments ?? null,
      logs: row.logs ?? null,
      createdBy: row.createdBy,
      createdAt: row.createdAt,
      signature: row.signature,
    };
    const event =
      row.eventKind === null
        ? null
        : {
            kind: row.eventKind,
            entityId: row.eventEntity!,
            recordedAt: row.eventAt!,
            payload: row.eventPayload!,
            payloadHash: row.eventPayloadHash!,
          };
    let proof: FoundApiKey['proof'] = proveKeyRow(keyRow, event, adoptionOf(row));
    if ((proof === 'proven' || proof === 'unproven') && forbidden!.has(row.id)) {
      proof = 'forbidden';
      alarm.raise({
        code: 'KEY_MISMATCH',
        log: SYSTEM_LOG,
        ...(row.eventSeq === null ? {} : { seq: Number(row.eventSeq) }),
        table: 'api_keys',
        message: `api_keys row ${row.id} was issued by ${row.createdBy}, who could not issue it so (${forbidden!.get(row.id)}): the key is refused`,
      });
    }
    if (proof === 'no_event' || proof === 'mismatch') {
      // The key id only: never the secret or its hash.
      alarm.raise({
        code: 'KEY_MISMATCH',
        log: SYSTEM_LOG,
        ...(row.eventSeq === null ? {} : { seq: Number(row.eventSeq) }),
        table: 'api_keys',
        message: `api_keys row ${row.id} fails its chain proof (${proof})`,
      });
    }
    const expiry =
      row.expiryAt === null
        ? null
        : expiryOf(row.id, {
            recordedAt: row.expiryAt,
            payload: row.expiryPayload!,
            payloadHash: row.expiryPayloadHash!,
          });
    if (expiry?.proof === 'mismatch') {
      alarm.raise({
        code: 'KEY_MISMATCH',
        log: SYSTEM_LOG,
        table: 'api_keys',
        message: `the ${KEY_EXPIRES} event of key ${row.id} differs from its chained hash: the key is refused`,
      });
    }
    found.set(row.keyHash, {
      key: toRecord(
        keyRow,
        row.revokedAt === null ? null : { at: row.revokedAt, by: row.revokedBy! },
        expiry?.expiresAt ?? null,
      ),
      keyHash: row.keyHash,
      proof,
    });
  }
  return found;
}

interface LookupRow {
  id: string;
  eventSeq: number | string | null;
  keyHash: string;
  identity: string;
  roles: string[];
  scopes: string[] | null;
  environments: string[] | null;
  logs: string[] | null;
  createdBy: string;
  createdAt: string;
  signature: string | null;
  eventKind: string | null;
  eventEntity: string | null;
  eventAt: string | null;
  eventPayload: string | null;
  eventPayloadHash: string | null;
  revokedAt: string | null;
  revokedBy: string | null;
  expiryAt: string | null;
  expiryPayload: string | null;
  expiryPayloadHash: string | null;
  adoptedAt: string | null;
  adoptionPayload: string | null;
  adoptionPayloadHash: string | null;
}

/** The operator's first `api_key.adopted` event of the row's key, as the lookup read it. */
function adoptionOf(row: LookupRow): AdoptionEvent | null {
  if (row.adoptedAt === null) return null;
  return {
    kind: KEY_ADOPTED,
    entityId: row.id,
    actor: OPERATOR_ACTOR,
    recordedAt: row.adoptedAt,
    payload: row.adoptionPayload!,
    payloadHash: row.adoptionPayloadHash!,
  };
}

async function listApiKeysWhere(db: Db, where?: ReturnType<typeof eq>): Promise<ApiKeyRecord[]> {
  const query = db
    .select({ key: apiKeys, revocation: apiKeyRevocations })
    .from(apiKeys)
    .leftJoin(apiKeyRevocations, eq(apiKeyRevocations.keyId, apiKeys.id));
  const rows = await (where ? query.where(where) : query).orderBy(asc(apiKeys.createdAt), asc(apiKeys.id));
  const expiries = new Map<string, string>();
  const events = await db
    .select({
      entityId: auditEvents.entityId,
      recordedAt: auditEvents.recordedAt,
      payload: auditEvents.payload,
      payloadHash: auditEvents.payloadHash,
    })
    .from(auditEvents)
    .where(and(eq(auditEvents.logId, SYSTEM_LOG), eq(auditEvents.kind, KEY_EXPIRES)))
    .orderBy(asc(auditEvents.seq));
  for (const event of events) {
    // The first deadline set stands, as in the key lookup.
    if (event.entityId !== null && !expiries.has(event.entityId)) {
      expiries.set(event.entityId, expiryOf(event.entityId, event).expiresAt);
    }
  }
  return rows.map(({ key, revocation }) =>
    toRecord(
      {
        ...key,
        scopes: key.scopes ?? [],
        environments: key.environments ?? null,
        logs: key.logs ?? null,
      },
      revocation ? { at: revocation.revokedAt, by: revocation.revokedBy } : null,
      expiries.get(key.id) ?? null,
    ),
  );
}

function toRecord(
  row: Omit<KeyRow, 'keyHash'> & { keyHash?: string },
  revoked: { at: string; by: string } | null,
  expiresAt: string | null = null,
) {
  return {
    id: row.id,
    identity: row.identity,
    roles: row.roles,
    scopes: row.scopes,
    environments: row.environments,
    logs: row.logs,
    createdBy: row.createdBy,
    createdAt: row.createdAt,
    revokedAt: revoked?.at ?? null,
    revokedBy: revoked?.by ?? null,
    expiresAt,
  } satisfies ApiKeyRecord;
}
