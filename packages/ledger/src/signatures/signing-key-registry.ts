import {
  type AuthorSignatureFailure,
  canonicalJson,
  type DsseEnvelope,
  openAuthorSignature,
  parseAuthorPublicKey,
} from '@vouch/audit';
import { BOOTSTRAP_ACTOR, OPERATOR_ACTOR, SYSTEM_LOG } from '../keys/api-key-events';
import type { KeyEvent, KeyWindow } from '../keys/key-history';
import {
  type CodeEnrolment,
  createEnrolmentCodes,
  ENROLMENT_CODE_ACTION,
  enrolmentCodeCommitment,
  SIGNING_KEY_ENROLMENT_CODE,
} from './enrolment-codes';
import { isServerIdentity, signsFor } from './server-signer';
import {
  ENROLL_ACTION,
  REVOKE_SIGNING_KEY_ACTION,
  SIGNATURES_REQUIRED,
  SIGNING_KEY_ENROLLED,
  SIGNING_KEY_REVOKED,
  signingKeyPayload,
} from './signing-key-events';

/** Why a signed action (or its absent signature) does not speak for its actor. */
export type SignatureRule =
  | AuthorSignatureFailure
  /** The actor must sign (it holds an enrolled key, or every author must) and did not. */
  | 'SIGNATURE_MISSING'
  /** The signed claims are not what the record says (another request, another answer). */
  | 'SIGNATURE_CLAIMS_MISMATCH'
  /** The envelope was already used by another record of the log: a replay. */
  | 'SIGNATURE_REPLAYED'
  /** The enrolment or revocation of a signing key by someone who could not. */
  | 'SIGNING_KEY_ENROLLER_FORBIDDEN';

export interface SignatureViolation {
  rule: SignatureRule;
  why: string;
}

export interface EnrolledWindow {
  keyId: string;
  identity: string;
  publicKey: Uint8Array;
  from: number;
  until: number;
}

/** What a signed action says, for {@link SigningKeyRegistry.judge}. */
export interface SignedAction {
  log: string;
  action: string;
  actor: string;
  /** The time it is judged at (ms). */
  at: number;
  signature: DsseEnvelope | undefined;
  /** True when the signed claims are what the record says. */
  claimsMatch: (claims: unknown) => boolean;
}

/**
 * The authors' signing keys, built from the `system` log's `signing_key.*` events in seq
 * order beside the API key history (who may enrol a key for someone: the operator, the first
 * start while none is enrolled, or an identity holding a live admin key, signing as itself
 * once it has a signing key; or the identity itself, with a one-time code such an enroller
 * issued for it: `enrolment-codes.ts`), and the rule every signed record is judged by: an actor that
 * holds a live enrolled key, or any actor once `signatures.required` is recorded, must sign,
 * and a signature present must verify with a key of the actor live at the time.
 */
export function createSigningKeyRegistry(keys: { keysOf(identity: string): readonly KeyWindow[] }) {
  const byId = new Map<string, EnrolledWindow>();
  const codes = createEnrolmentCodes();
  let enrolled = 0;
  let requiredSince = Number.POSITIVE_INFINITY;

  /** The keys that sign for `identity` at `at`: its own, or the server's for a `vouch:` identity. */
  const liveKeysOf = (identity: string, at: number) =>
    [...byId.values()].filter((k) => signsFor(k.identity, identity) && k.from <= at && at < k.until);
  // The server's own identities sign once its key is enrolled: `signatures.required` asks
  // authors, and a server without a key (Postgres without a log key) would break it itself.
  const mustSign = (identity: string, at: number) =>
    (at >= requiredSince && !isServerIdentity(identity)) || liveKeysOf(identity, at).length > 0;

  const judge = (signed: SignedAction): SignatureViolation | null => {
    if (signed.signature === undefined) {
      return mustSign(signed.actor, signed.at)
        ? { rule: 'SIGNATURE_MISSING', why: `${signed.actor} must sign ${signed.action}, and did not` }
        : null;
    }
    const live = liveKeysOf(signed.actor, signed.at);
    const opened = openAuthorSignature(
      signed.signature,
      { log: signed.log, action: signed.action, actor: signed.actor },
      (keyId) => live.find((k) => k.keyId === keyId)?.publicKey,
    );
    if (!opened.ok) return { rule: opened.failure, why: failureText(opened.failure, signed) };
    if (!signed.claimsMatch(opened.statement.claims)) {
      return {
        rule: 'SIGNATURE_CLAIMS_MISMATCH',
        why: `what ${signed.actor} signed is not what the record says`,
      };
    }
    return null;
  };

  const adminAt = (identity: string, at: number) =>
    keys.keysOf(identity).some((k) => k.roles.includes('admin') && k.createdAt <= at && at < k.endsAt);

  const enrolment = (event: KeyEvent, at: number): SignatureViolation | null => {
    const payload = signingKeyPayload(event);
    const violation = enrolmentViolation(event, at, payload);
    // A revealed code is spent whether or not its enrolment holds: anyone can read it now.
    if (typeof payload?.code === 'string') codes.use(enrolmentCodeCommitment(payload.code));
    return violation;
  };

  const enrolmentViolation = (
    event: KeyEvent,
    at: number,
    payload: Record<string, unknown> | null,
  ): SignatureViolation | null => {
    const publicKey = parseAuthorPublicKey(payload?.public_key);
    if (!payload || !publicKey || typeof payload.identity !== 'string' || payload.key_id !== event.entity) {
      return {
        rule: 'SIGNATURE_MALFORMED',
        why: 'an enrolment names a key id, an identity and its Ed25519 key',
      };
    }
    const violation = Object.hasOwn(payload, 'code_commitment')
      ? selfEnrolmentViolation(event, at, payload, { identity: payload.identity, publicKey })
      : enrollerViolation(event, at, payload, { identity: payload.identity, public_key: payload.public_key });
    if (violation === null && !byId.has(event.entity)) {
      byId.set(event.entity, {
        keyId: event.entity,
        identity: payload.identity,
        publicKey,
        from: at,
        until: Infinity,
      });
      enrolled++;
    }
    return violation;
  };

  /** A key enrolled by its own identity with a one-time code: the code's rule, and nothing else. */
  const selfEnrolmentViolation = (
    event: KeyEvent,
    at: number,
    payload: Record<string, unknown>,
    key: { identity: string; publicKey: Uint8Array },
  ): SignatureViolation | null => {
    const enrolment: CodeEnrolment = {
      identity: key.identity,
      public_key: String(payload.public_key),
      publicKey: key.publicKey,
      code: payload.code,
      code_commitment: payload.code_commitment,
      proof: payload.proof,
    };
    const refused = codes.refusal(enrolment, at);
    if (
      payload.enrolled_by !== event.actor ||
      key.identity !== event.actor ||
      isServerIdentity(key.identity)
    ) {
      return {
        rule: 'SIGNING_KEY_ENROLLER_FORBIDDEN',
        why: `a key enrolled by code is enrolled by its own identity, not ${event.actor} for ${key.identity}`,
      };
    }
    return refused && { rule: 'SIGNING_KEY_ENROLLER_FORBIDDEN', why: refused.why };
  };

  const codeIssue = (event: KeyEvent, at: number): SignatureViolation | null => {
    const payload = signingKeyPayload(event);
    if (!payload || typeof payload.identity !== 'string' || payload.code_commitment !== event.entity) {
      return {
        rule: 'SIGNATURE_MALFORMED',
        why: 'an enrolment code names an identity and its commitment, the event entity',
      };
    }
    const signature = payload.signature as DsseEnvelope | undefined;
    if (codes.replayed(signature)) {
      return { rule: 'SIGNATURE_REPLAYED', why: 'the signed request already issued another code' };
    }
    const claims = {
      identity: payload.identity,
      ...(payload.note === undefined ? {} : { note: payload.note }),
    };
    const violation = enrollerViolation(event, at, payload, claims);
    if (violation === null) codes.issue(payload, at, signature);
    return violation;
  };

  const enrollerViolation = (
    event: KeyEvent,
    at: number,
    payload: Record<string, unknown>,
    claims: Record<string, unknown>,
  ): SignatureViolation | null => {
    const namedBy =
      event.kind === SIGNING_KEY_ENROLLED
        ? payload.enrolled_by
        : event.kind === SIGNING_KEY_ENROLMENT_CODE
          ? payload.issued_by
          : payload.revoked_by;
    if (namedBy !== event.actor) {
      return {
        rule: 'SIGNING_KEY_ENROLLER_FORBIDDEN',
        why: `names ${String(namedBy)}, but its actor is ${event.actor}`,
      };
    }
    if (event.actor === OPERATOR_ACTOR) return null;
    if (event.actor === BOOTSTRAP_ACTOR && event.kind === SIGNING_KEY_ENROLLED && enrolled === 0) return null;
    if (event.kind === SIGNING_KEY_ENROLLED && isServerIdentity(String(payload.identity))) {
      // The server's key is the operator's (or the first start's) to enrol: an admin who could
      // enrol one could sign what the server alone may write.
      return {
        rule: 'SIGNING_KEY_ENROLLER_FORBIDDEN',
        why: `a key for ${String(payload.identity)} is enrolled by the operator or the first start, not ${event.actor}`,
      };
    }
    if (!adminAt(event.actor, at)) {
      return { rule: 'SIGNING_KEY_ENROLLER_FORBIDDEN', why: `${event.actor} held no live admin key then` };
    }
    const action =
      {
        [SIGNING_KEY_ENROLLED]: ENROLL_ACTION,
        [SIGNING_KEY_ENROLMENT_CODE]: ENROLMENT_CODE_ACTION,
      }[event.kind] ?? REVOKE_SIGNING_KEY_ACTION;
    const signature = payload.signature as DsseEnvelope | undefined;
    return judge({
      log: SYSTEM_LOG,
      action,
      actor: event.actor,
      at,
      signature,
      claimsMatch: (signed) => canonicalJson(signed) === canonicalJson(claims),
    });
  };

  return {
    judge,
    mustSign,
    /** The enrolled keys of `identity` live at `at`. */
    liveKeysOf,
    /** Every key ever enrolled, in enrolment order. */
    all: () => [...byId.values()],
    /** No key was ever enrolled and signatures were never required: nobody must sign, ever. */
    isEmpty: () => byId.size === 0 && requiredSince === Number.POSITIVE_INFINITY,
    /** Why a self-enrolment by code at `at` would not hold (null: it would), for the server to refuse it. */
    codeEnrolmentRefusal: (enrolment: CodeEnrolment, at: number) => codes.refusal(enrolment, at),
    /** Whether an admin's signed request for a code was already used for another. */
    codeRequestReplayed: (signature: DsseEnvelope | undefined) => codes.replayed(signature),
    /** Take one `signing_key.*` / `signatures.required` event (other kinds are ignored). */
    add(event: KeyEvent, at: number): SignatureViolation | null {
      if (event.kind === SIGNING_KEY_ENROLLED) return enrolment(event, at);
      if (event.kind === SIGNING_KEY_ENROLMENT_CODE) return codeIssue(event, at);
      if (event.kind === SIGNING_KEY_REVOKED) {
        const payload = signingKeyPayload(event);
        const key = byId.get(event.entity);
        const violation = payload
          ? enrollerViolation(event, at, payload, { key_id: event.entity })
          : {
              rule: 'SIGNATURE_MALFORMED' as const,
              why: 'a revocation whose payload is not the one its hash covers',
            };
        // An ending applies whoever wrote it: it only takes power away.
        if (key) key.until = Math.min(key.until, at);
        return violation;
      }
      if (event.kind === SIGNATURES_REQUIRED) {
        // Requiring signatures only takes power away, whoever asks: it always applies.
        requiredSince = Math.min(requiredSince, at);
        return null;
      }
      return null;
    },
  };
}

export type SigningKeyRegistry = ReturnType<typeof createSigningKeyRegistry>;

function failureText(failure: AuthorSignatureFailure, signed: SignedAction): string {
  switch (failure) {
    case 'SIGNER_KEY_UNKNOWN':
      return `the signature is by no key of ${signed.actor} live then`;
    case 'SIGNATURE_INVALID':
      return 'the signature does not verify';
    case 'SIGNATURE_MISMATCH':
      return `the signed statement is not for ${signed.action} by ${signed.actor} in ${signed.log}`;
    default:
      return 'the signature is not a DSSE envelope over an author statement';
  }
}
