import {
  attachSignature,
  authorKeyId,
  authorStatement,
  type DsseEnvelope,
  formatAuthorPublicKey,
} from '@vouch/audit';
import { LedgerError } from '../errors';
import { SYSTEM_LOG } from '../keys/api-key-events';
import type { Ledger } from '../ledger';
import { historyIn, requirePublicKey } from './enrol-signing-key';
import {
  ENROL_BY_CODE_ACTION,
  ENROLMENT_CODE_TTL_MS,
  enrolByCodeClaims,
  enrolmentCodeCommitment,
  newEnrolmentCode,
  SIGNING_KEY_ENROLMENT_CODE,
} from './enrolment-codes';
import { type EnrolledKey, SIGNING_KEY_ENROLLED } from './signing-key-events';

/** A code as issued: the code itself is in this answer only. */
export interface IssuedEnrolmentCode {
  identity: string;
  code: string;
  code_commitment: string;
  expires_at: string;
}

/**
 * Issue a one-time enrolment code for `identity`, by `issuedBy` (the operator, or an admin
 * who signs the request `{identity, note?}` once it holds a signing key): the `system` log
 * records its commitment, never the code. One signed request issues one code
 * (`SIGNATURE_REPLAYED`); the check runs under the system log's lock.
 */
export function issueEnrolmentCode(
  ledger: Ledger,
  input: { identity: string; issuedBy: string; note?: string; signature?: DsseEnvelope },
): Promise<IssuedEnrolmentCode> {
  return ledger.transact(SYSTEM_LOG, async (tx) => {
    if ((await historyIn(tx.db)).signingKeys.codeRequestReplayed(input.signature)) {
      throw new LedgerError(
        'SIGNATURE_REPLAYED',
        'this signed request already issued a code: sign a new one',
        {
          details: { action: SIGNING_KEY_ENROLMENT_CODE },
        },
      );
    }
    const code = newEnrolmentCode();
    const issued = {
      identity: input.identity,
      code_commitment: enrolmentCodeCommitment(code),
      expires_at: new Date(Date.parse(tx.now) + ENROLMENT_CODE_TTL_MS).toISOString(),
    };
    await tx.append({
      kind: SIGNING_KEY_ENROLMENT_CODE,
      entity: issued.code_commitment,
      actor: input.issuedBy,
      payload: {
        ...issued,
        issued_by: input.issuedBy,
        ...(input.note === undefined ? {} : { note: input.note }),
        ...(input.signature ? { signature: input.signature } : {}),
      },
    });
    return { ...issued, code };
  });
}

/**
 * Enrol `publicKey` for `identity` by the identity itself, with a code issued for it and a
 * proof (the new key's detached signature over `{identity, public_key, code_commitment}`,
 * action `signing_key.enrol_by_code`). The event reveals the code (it is spent by then) so
 * anyone can check it against its commitment. Refused, nothing written, unless it holds
 * under the system log's lock: `ENROLMENT_CODE_INVALID`, `…_EXPIRED`, `…_USED`,
 * `ENROLMENT_PROOF_INVALID`, `SIGNING_KEY_ENROLLED`.
 */
export function enrolWithCode(
  ledger: Ledger,
  input: { identity: string; publicKey: string; code: string; proof: { keyid: string; sig: string } },
): Promise<EnrolledKey & { enrolled_at: string }> {
  const key = requirePublicKey(input.publicKey);
  const publicKey = formatAuthorPublicKey(key);
  const commitment = enrolmentCodeCommitment(input.code);
  const claims = enrolByCodeClaims({
    identity: input.identity,
    public_key: publicKey,
    code_commitment: commitment,
  });
  const proof = attachSignature(
    authorStatement(SYSTEM_LOG, ENROL_BY_CODE_ACTION, input.identity, claims),
    input.proof,
  );
  const payload = {
    key_id: authorKeyId(key),
    identity: input.identity,
    public_key: publicKey,
    enrolled_by: input.identity,
    code: input.code,
    code_commitment: commitment,
    proof,
  };
  return ledger.transact(SYSTEM_LOG, async (tx) => {
    const registry = (await historyIn(tx.db)).signingKeys;
    if (registry.all().some((k) => k.keyId === payload.key_id)) {
      throw new LedgerError('SIGNING_KEY_ENROLLED', 'this public key is already enrolled', {
        details: { key_id: payload.key_id },
      });
    }
    const refused = registry.codeEnrolmentRefusal({ ...payload, publicKey: key }, Date.parse(tx.now));
    if (refused) throw new LedgerError(refused.refusal, refused.why, { details: { field: 'code' } });
    const event = await tx.append({
      kind: SIGNING_KEY_ENROLLED,
      entity: payload.key_id,
      actor: input.identity,
      payload,
    });
    return { ...payload, enrolled_at: event.at };
  });
}
