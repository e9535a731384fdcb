import { type DsseEnvelope, payloadHashOf } from '@vouch/audit';
import { SYSTEM_LOG } from '../keys/api-key-events';
import type { Ledger } from '../ledger';
import { SIGNING_KEY_ENROLMENT_CODE } from './enrolment-codes';

/** An author's public key bound to an identity: the key its signatures are checked with. */
export const SIGNING_KEY_ENROLLED = 'signing_key.enrolled';
/** The end of an enrolled key: it signs nothing from then on (what it signed before stands). */
export const SIGNING_KEY_REVOKED = 'signing_key.revoked';
/** Every signature required from then on, of every author (new installs start so). */
export const SIGNATURES_REQUIRED = 'signatures.required';

export const SIGNING_KEY_EVENT_KINDS: readonly string[] = [
  SIGNING_KEY_ENROLLED,
  SIGNING_KEY_REVOKED,
  SIGNATURES_REQUIRED,
  SIGNING_KEY_ENROLMENT_CODE,
];

/** The actions an admin signs when enrolling or revoking someone's key. */
export const ENROLL_ACTION = 'signing_key.enroll';
export const REVOKE_SIGNING_KEY_ACTION = 'signing_key.revoke';

/** What an enrolment event says. */
export interface EnrolledKey {
  key_id: string;
  identity: string;
  public_key: string;
  enrolled_by: string;
  signature?: DsseEnvelope;
}

/** Append the revocation of an enrolled key. */
export async function revokeSigningKey(
  ledger: Ledger,
  input: { keyId: string; revokedBy: string; signature?: DsseEnvelope },
): Promise<void> {
  await ledger.append({
    log: SYSTEM_LOG,
    kind: SIGNING_KEY_REVOKED,
    entity: input.keyId,
    actor: input.revokedBy,
    payload: {
      key_id: input.keyId,
      revoked_by: input.revokedBy,
      ...(input.signature ? { signature: input.signature } : {}),
    },
  });
}

/** Record that every author must sign from now on (the operator's, or the first start's). */
export async function requireSignatures(ledger: Ledger, by: string): Promise<void> {
  await ledger.append({
    log: SYSTEM_LOG,
    kind: SIGNATURES_REQUIRED,
    entity: 'signatures',
    actor: by,
    payload: { required_by: by },
  });
}

/** The payload of a signing-key event as an object, or null when it is not the one its hash covers. */
export function signingKeyPayload(event: {
  payload: string;
  payload_hash: string;
}): Record<string, unknown> | null {
  if (payloadHashOf(event.payload) !== event.payload_hash) return null;
  try {
    const parsed: unknown = JSON.parse(event.payload);
    return typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed)
      ? (parsed as Record<string, unknown>)
      : null;
  } catch {
    return null;
  }
}
