import {
  type AuthorKey,
  authorKeyId,
  type DsseEnvelope,
  formatAuthorPublicKey,
  parseAuthorPublicKey,
} from '@vouch/audit';
import type { Db } from '../database';
import { LedgerError } from '../errors';
import { BOOTSTRAP_ACTOR, OPERATOR_ACTOR, SYSTEM_LOG } from '../keys/api-key-events';
import { createKeyHistory, type KeyHistory } from '../keys/key-history';
import { readKeyEvents } from '../keys/load-key-history';
import type { Ledger } from '../ledger';
import { isServerIdentity, SERVER_SIGNER } from './server-signer';
import { type EnrolledKey, SIGNING_KEY_ENROLLED } from './signing-key-events';

/** The key history as `db` sees it (inside a transaction: under the `system` log's lock). */
export async function historyIn(db: Db): Promise<KeyHistory> {
  const history = createKeyHistory();
  for (const event of await readKeyEvents(db)) history.add(event);
  return history;
}

/** The Ed25519 public key `text` names, or `PUBLIC_KEY_INVALID`. */
export function requirePublicKey(text: string): Uint8Array {
  const key = parseAuthorPublicKey(text);
  if (!key) {
    throw new LedgerError(
      'PUBLIC_KEY_INVALID',
      'public_key must be ed25519:<base64 of a 32-byte Ed25519 point>',
      {
        details: { field: 'public_key' },
      },
    );
  }
  return key;
}

/**
 * Append the enrolment of `publicKey` for `identity` to the `system` log, by `enrolledBy`,
 * under the system log's lock. A key enrolled before (live or revoked) is refused with
 * `SIGNING_KEY_ENROLLED` and nothing is written: a revoked key stays revoked.
 */
export async function enrollSigningKey(
  ledger: Ledger,
  input: { identity: string; publicKey: string; enrolledBy: string; signature?: DsseEnvelope },
): Promise<EnrolledKey> {
  const key = parseAuthorPublicKey(input.publicKey);
  if (!key) {
    throw new LedgerError(
      'PUBLIC_KEY_INVALID',
      'public_key must be ed25519:<base64 of a 32-byte Ed25519 point>',
      {
        details: { field: 'public_key' },
      },
    );
  }
  const payload: EnrolledKey = {
    key_id: authorKeyId(key),
    identity: input.identity,
    public_key: formatAuthorPublicKey(key),
    enrolled_by: input.enrolledBy,
    ...(input.signature ? { signature: input.signature } : {}),
  };
  if (isServerIdentity(input.identity) && ![OPERATOR_ACTOR, BOOTSTRAP_ACTOR].includes(input.enrolledBy)) {
    throw new LedgerError(
      'SIGNING_KEY_ENROLLER_FORBIDDEN',
      `a key for ${input.identity} is enrolled by the operator (vouch signing-keys enroll-server), not ${input.enrolledBy}`,
      { details: { field: 'identity' } },
    );
  }
  return ledger.transact(SYSTEM_LOG, async (tx) => {
    const earlier = (await historyIn(tx.db)).signingKeys.all().find((k) => k.keyId === payload.key_id);
    if (earlier) {
      throw new LedgerError(
        'SIGNING_KEY_ENROLLED',
        `key ${payload.key_id} is already enrolled for ${earlier.identity}${Number.isFinite(earlier.until) ? ' (and revoked: enrol a new key)' : ''}`,
        { details: { key_id: payload.key_id } },
      );
    }
    await tx.append({ kind: SIGNING_KEY_ENROLLED, entity: payload.key_id, actor: input.enrolledBy, payload });
    return payload;
  });
}

/** What {@link ensureServerKeyEnrolled} found or did. */
export type ServerKeyState =
  /** The key is enrolled and live: the server signs its own records with it. */
  | 'live'
  /** No key of anyone was enrolled: the first start enrolled the server's. */
  | 'enrolled'
  /** Other keys are enrolled and this one is not (or was revoked): the operator enrols it. */
  | 'not_enrolled';

/**
 * Make sure the server's own key signs: enrolled for `vouch:server` by the first start
 * (`system:bootstrap`) when the `system` log enrols no key yet, under the log's lock so two
 * instances starting at once enrol it once. Otherwise only the operator enrols it
 * (`vouch signing-keys enroll-server`): the runtime role could write a bootstrap enrolment too,
 * which is why one is accepted only before any key exists.
 */
export async function ensureServerKeyEnrolled(ledger: Ledger, key: AuthorKey): Promise<ServerKeyState> {
  return ledger.transact(SYSTEM_LOG, async (tx) => {
    const registry = (await historyIn(tx.db)).signingKeys;
    const now = Date.parse(tx.now);
    if (registry.liveKeysOf(SERVER_SIGNER, now).some((k) => k.keyId === key.keyId)) return 'live';
    if (registry.all().length > 0) return 'not_enrolled';
    const payload: EnrolledKey = {
      key_id: key.keyId,
      identity: SERVER_SIGNER,
      public_key: formatAuthorPublicKey(key.publicKey),
      enrolled_by: BOOTSTRAP_ACTOR,
    };
    await tx.append({ kind: SIGNING_KEY_ENROLLED, entity: key.keyId, actor: BOOTSTRAP_ACTOR, payload });
    return 'enrolled';
  });
}
