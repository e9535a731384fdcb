import { canonicalJson, payloadHashOf, sha256Hex } from '@vouch/audit';

/** The log that records key creation and revocation (and nothing a caller controls). */
export const SYSTEM_LOG = 'system';
export const KEY_CREATED = 'api_key.created';
export const KEY_REVOKED = 'api_key.revoked';
/**
 * A revocation that takes effect later (a rotation's grace period): the event alone, no row.
 * It only takes power away, so the event is all the proof it needs: the chain covers it.
 */
export const KEY_EXPIRES = 'api_key.expires';
/**
 * The operator's binding of a key issued before `api_key.created` carried a key commitment
 * (before migration 0005) to the hash its row holds now (`vouch keys adopt`): the event
 * alone, no row. Only the operator writes one (migration 0018 refuses its actor to anyone
 * but the tables' owner).
 */
export const KEY_ADOPTED = 'api_key.adopted';

/**
 * The actor of what `vouch` does from the command line (`vouch redact`, `vouch keys`): the
 * operator who can open the database as its owner. The same string as the CLI's `CLI_ACTOR`.
 * In the `system` log, only the tables' owner may write an event in its name (migration 0018).
 */
export const OPERATOR_ACTOR = 'system:cli';

/** The actor of the first key, which the server issues itself on an empty database. */
export const BOOTSTRAP_ACTOR = 'system:bootstrap';

/** A key row as the ledger stores it (no secret; the hash only in {@link KeyRow}). */
export interface ApiKeyRecord {
  id: string;
  identity: string;
  roles: string[];
  scopes: string[];
  environments: string[] | null;
  logs: string[] | null;
  createdBy: string;
  createdAt: string;
  revokedAt: string | null;
  revokedBy: string | null;
  /** When the key stops authenticating, from its `api_key.expires` event (a rotation's grace); null: never. */
  expiresAt: string | null;
}

/** What a key row holds, hash included: the input of the proofs below. */
export type KeyRow = Omit<ApiKeyRecord, 'revokedAt' | 'revokedBy' | 'expiresAt'> & { keyHash: string };

/** What a revocation row holds. */
export interface RevocationRow {
  keyId: string;
  revokedBy: string;
  revokedAt: string;
}

/** The event a row is proven against (the columns of `audit_events` that matter here). */
export interface BindingEvent {
  kind: string;
  entityId: string;
  recordedAt: string;
  payload: string;
  payloadHash: string;
}

// Domain-separated, so the commitment cannot be confused with a hash of anything else.
const COMMITMENT_DOMAIN = 'vouch/api-key-commitment/v1\n';

/**
 * The commitment to a key hash that the `api_key.created` event carries: SHA-256 of a
 * domain-separated string of it. The ledger (and every export of the system log) holds no
 * key hash, yet a row whose `key_hash` was swapped no longer matches its event.
 */
export function keyHashCommitment(keyHash: string): string {
  return sha256Hex(`${COMMITMENT_DOMAIN}${keyHash}`);
}

/** The payload of the `api_key.created` event of a key row: everything the row holds but its time. */
export function keyCreatedPayload(row: KeyRow) {
  return {
    id: row.id,
    identity: row.identity,
    roles: row.roles,
    scopes: row.scopes,
    environments: row.environments,
    logs: row.logs,
    created_by: row.createdBy,
    key_commitment: keyHashCommitment(row.keyHash),
  };
}

/** The payload of the `api_key.adopted` event that binds legacy key `keyId` to `keyHash`. */
export function keyAdoptedPayload(input: { keyId: string; keyHash: string; adoptedBy: string }) {
  return { id: input.keyId, key_commitment: keyHashCommitment(input.keyHash), adopted_by: input.adoptedBy };
}

/** The payload of the `api_key.revoked` event of a revocation row. */
export function keyRevokedPayload(row: RevocationRow) {
  return { id: row.keyId, revoked_by: row.revokedBy };
}

/**
 * How a key row stands against its event:
 * - `proven`: the event is the row's `api_key.created`, at the row's time, and the payload
 *   hash in the chain is the hash of the payload the row rebuilds (key commitment included);
 *   or the event was written before keys carried a commitment and the operator's
 *   `api_key.adopted` event commits to the row's key hash;
 * - `unproven`: an event written before keys carried a commitment, not adopted: everything
 *   but the key hash is proven (adopt such keys, see docs/chain.md);
 * - `no_event` / `mismatch`: the row authenticates nothing (also a legacy row whose
 *   adoption commits to another key hash).
 */
export type KeyProof = 'proven' | 'unproven' | 'no_event' | 'mismatch';

/** An `api_key.adopted` event, with its actor: only the operator's counts. */
export interface AdoptionEvent extends BindingEvent {
  actor: string;
}

/**
 * Prove a key row against the event its `event_seq` names, and for a key issued before the
 * commitment, against its first `api_key.adopted` event by the operator (`adoption`, null
 * when there is none). Recomputes from the row and compares with the chained
 * `payload_hash`, so neither an edited row nor an edited payload text passes (the chain
 * check covers `payload_hash` itself).
 */
export function proveKeyRow(
  row: KeyRow,
  event: BindingEvent | null,
  adoption: AdoptionEvent | null = null,
): KeyProof {
  if (event === null || event.kind !== KEY_CREATED || event.entityId !== row.id) return 'no_event';
  if (event.recordedAt !== row.createdAt) return 'mismatch';
  const payload = keyCreatedPayload(row);
  if (hashOf(payload) === event.payloadHash) return 'proven';
  if (!provesLegacy(payload, event)) return 'mismatch';
  if (adoption === null) return 'unproven';
  return adoptionBinds(row, adoption) ? 'proven' : 'mismatch';
}

/** Before the commitment (and, earlier still, before scopes) the payload held less. */
function provesLegacy(payload: ReturnType<typeof keyCreatedPayload>, event: BindingEvent): boolean {
  const { key_commitment: _, ...legacy } = payload;
  if (hashOf(legacy) === event.payloadHash) return true;
  if (payload.scopes.length > 0) return false;
  const { scopes: __, ...older } = legacy;
  return hashOf(older) === event.payloadHash;
}

/** The operator's adoption of this key, committing to the key hash the row holds. */
function adoptionBinds(row: KeyRow, adoption: AdoptionEvent): boolean {
  if (adoption.kind !== KEY_ADOPTED || adoption.entityId !== row.id || adoption.actor !== OPERATOR_ACTOR) {
    return false;
  }
  const payload = keyAdoptedPayload({ keyId: row.id, keyHash: row.keyHash, adoptedBy: OPERATOR_ACTOR });
  return hashOf(payload) === adoption.payloadHash;
}

/** The payload of the `api_key.expires` event that ends a key at `expiresAt`. */
export function keyExpiresPayload(input: { keyId: string; expiresAt: string; setBy: string }) {
  return { id: input.keyId, expires_at: input.expiresAt, set_by: input.setBy };
}

/**
 * The deadline an `api_key.expires` event sets for key `keyId`. The event only takes power
 * away, so whatever is wrong with it fails closed: a payload that is not the one its chained
 * hash covers, that names another key or holds no time, ends the key at the event's own
 * time (`proof: 'mismatch'`, for the caller to raise the alarm).
 */
export function expiryOf(
  keyId: string,
  event: Omit<BindingEvent, 'kind' | 'entityId'>,
): { expiresAt: string; proof: 'proven' | 'mismatch' } {
  const mismatch = { expiresAt: event.recordedAt, proof: 'mismatch' } as const;
  let payload: unknown;
  try {
    payload = JSON.parse(event.payload);
  } catch {
    return mismatch;
  }
  const { id, expires_at, set_by } = (payload ?? {}) as Record<string, unknown>;
  if (id !== keyId || typeof expires_at !== 'string' || typeof set_by !== 'string') return mismatch;
  if (Number.isNaN(Date.parse(expires_at))) return mismatch;
  if (hashOf(keyExpiresPayload({ keyId, expiresAt: expires_at, setBy: set_by })) !== event.payloadHash) {
    return mismatch;
  }
  return { expiresAt: expires_at, proof: 'proven' };
}

/** Prove a revocation row against its `api_key.revoked` event. */
export function proveRevocationRow(row: RevocationRow, event: BindingEvent | null): KeyProof {
  if (event === null || event.kind !== KEY_REVOKED || event.entityId !== row.keyId) return 'no_event';
  if (event.recordedAt !== row.revokedAt) return 'mismatch';
  return hashOf(keyRevokedPayload(row)) === event.payloadHash ? 'proven' : 'mismatch';
}

function hashOf(payload: unknown): string | null {
  try {
    return payloadHashOf(canonicalJson(payload));
  } catch {
    // A JSON column edited into something canonical JSON refuses cannot match any payload.
    return null;
  }
}
