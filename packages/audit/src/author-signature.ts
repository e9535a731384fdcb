// Author signatures: a record that speaks for someone carries that someone's own signature,
// a DSSE envelope over an author statement (docs/chain.md, "Records signed by their authors").
// The statement names the log, the kind of record, the signer's identity and the claims: the
// request the author sent, as canonical JSON (erasable members as their SHA-256 only).
import { ed25519 } from '@noble/curves/ed25519.js';
import { decodeBase64, encodeBase64 } from './base64';
import { canonicalJson } from './canonical-json';
import { type DsseEnvelope, signDsse, verifyDsse } from './dsse';
import { sameIdentity } from './identity';
import { sha256Hex } from './sha256';

/** The DSSE payload type of an author statement. */
export const AUTHOR_STATEMENT_TYPE = 'application/vnd.vouch.author-statement+json';
/** The `_type` member of an author statement. */
export const AUTHOR_STATEMENT_V1 = 'https://vouch.dev/author-statement/v1';

/** What an author signs. */
export interface AuthorStatement {
  _type: typeof AUTHOR_STATEMENT_V1;
  /** The log the record goes to. */
  log: string;
  /** What the author does (`approval.approve`, `api_key.create`): one name per request. */
  action: string;
  /** The signer's identity, as its API key names it. */
  signer: string;
  /** The request, as canonical JSON: what the author asked for. */
  claims: unknown;
}

/** An Ed25519 key pair an author signs with; `keyId` is the SHA-256 of the public key, hex. */
export interface AuthorKey {
  keyId: string;
  publicKey: Uint8Array;
  seed: Uint8Array;
}

const PRIVATE_PREFIX = 'vouch-author-key-v1:';
const PUBLIC_PREFIX = 'ed25519:';

/** The key id of an Ed25519 public key: SHA-256 of its 32 bytes, lowercase hex. */
export function authorKeyId(publicKey: Uint8Array): string {
  return sha256Hex(publicKey);
}

/** A new author key. */
export function generateAuthorKey(): AuthorKey {
  return authorKeyFromSeed(ed25519.utils.randomSecretKey());
}

/** The author key of a 32-byte Ed25519 seed. */
export function authorKeyFromSeed(seed: Uint8Array): AuthorKey {
  if (seed.length !== 32) throw new TypeError('an Ed25519 seed is 32 bytes');
  const publicKey = ed25519.getPublicKey(seed);
  return { keyId: authorKeyId(publicKey), publicKey, seed };
}

/** The text form of a private author key (what a key file or `VOUCH_SIGNING_KEY` holds). */
export function formatAuthorPrivateKey(key: AuthorKey): string {
  return `${PRIVATE_PREFIX}${encodeBase64(key.seed)}`;
}

/** Parse {@link formatAuthorPrivateKey}'s text; throws a TypeError naming what is wrong. */
export function parseAuthorPrivateKey(text: string): AuthorKey {
  const trimmed = text.trim();
  if (!trimmed.startsWith(PRIVATE_PREFIX)) throw new TypeError(`an author key starts with ${PRIVATE_PREFIX}`);
  const seed = decodeBase64(trimmed.slice(PRIVATE_PREFIX.length));
  if (!seed || seed.length !== 32) throw new TypeError('an author key holds 32 bytes of base64');
  return authorKeyFromSeed(seed);
}

/** The text form of a public author key: `ed25519:<base64>`. */
export function formatAuthorPublicKey(publicKey: Uint8Array): string {
  return `${PUBLIC_PREFIX}${encodeBase64(publicKey)}`;
}

/** The 32 bytes of `ed25519:<base64>`, or undefined unless it is a valid Ed25519 point. */
export function parseAuthorPublicKey(text: unknown): Uint8Array | undefined {
  if (typeof text !== 'string' || !text.startsWith(PUBLIC_PREFIX)) return undefined;
  const key = decodeBase64(text.slice(PUBLIC_PREFIX.length));
  if (!key || key.length !== 32 || !ed25519.utils.isValidPublicKey(key, false)) return undefined;
  return key;
}

/** The statement an author signs for `claims` sent to `log` to do `action`. */
export function authorStatement(
  log: string,
  action: string,
  signer: string,
  claims: unknown,
): AuthorStatement {
  return { _type: AUTHOR_STATEMENT_V1, log, action, signer, claims };
}

/** Sign a statement: a DSSE envelope over its canonical JSON. */
export function signAuthorStatement(statement: AuthorStatement, key: AuthorKey): DsseEnvelope {
  return signDsse(AUTHOR_STATEMENT_TYPE, new TextEncoder().encode(canonicalJson(statement)), key);
}

/**
 * The detached form sent beside a request (the `Vouch-Signature` header): the key id and the
 * signature; the receiver rebuilds the statement from the request and the envelope from both.
 */
export function detachedSignature(envelope: DsseEnvelope): string {
  const [signature] = envelope.signatures;
  return `keyid=${signature!.keyid}; sig=${signature!.sig}`;
}

/** Parse a detached signature; undefined unless it is exactly `keyid=<hex>; sig=<base64>`. */
export function parseDetachedSignature(text: string): { keyid: string; sig: string } | undefined {
  const match = /^keyid=([0-9a-f]{64}); sig=([A-Za-z0-9+/]{86}==)$/.exec(text.trim());
  return match ? { keyid: match[1]!, sig: match[2]! } : undefined;
}

/** The envelope of a detached signature over `statement`. */
export function attachSignature(
  statement: AuthorStatement,
  detached: { keyid: string; sig: string },
): DsseEnvelope {
  return {
    payloadType: AUTHOR_STATEMENT_TYPE,
    payload: encodeBase64(new TextEncoder().encode(canonicalJson(statement))),
    signatures: [{ keyid: detached.keyid, sig: detached.sig }],
  };
}

/** Why an author signature does not speak for a record. */
export type AuthorSignatureFailure =
  /** Not a DSSE envelope of one signature over an author statement. */
  | 'SIGNATURE_MALFORMED'
  /** The key id names no key enrolled for the signer (none, revoked, or not yet enrolled). */
  | 'SIGNER_KEY_UNKNOWN'
  /** The signature does not verify. */
  | 'SIGNATURE_INVALID'
  /** The statement is for another log, action or signer than the record it is attached to. */
  | 'SIGNATURE_MISMATCH';

/**
 * Open an author signature attached to a record of `action` in `log` written as `actor`: the
 * statement, when the envelope verifies with the key `publicKeyOf` gives for its key id and
 * the statement names exactly this log, action and actor; else why not. Whether the claims
 * match the record is the caller's to check (they are per action).
 */
export function openAuthorSignature(
  envelope: unknown,
  expected: { log: string; action: string; actor: string },
  publicKeyOf: (keyId: string) => Uint8Array | undefined,
): { ok: true; statement: AuthorStatement; keyId: string } | { ok: false; failure: AuthorSignatureFailure } {
  const opened = verifyDsse(envelope, publicKeyOf);
  if (!opened.ok) {
    return {
      ok: false,
      failure:
        opened.failure === 'MALFORMED'
          ? 'SIGNATURE_MALFORMED'
          : opened.failure === 'UNKNOWN_KEY'
            ? 'SIGNER_KEY_UNKNOWN'
            : 'SIGNATURE_INVALID',
    };
  }
  if (opened.payloadType !== AUTHOR_STATEMENT_TYPE) return { ok: false, failure: 'SIGNATURE_MALFORMED' };
  let statement: unknown;
  try {
    statement = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(opened.payload));
  } catch {
    return { ok: false, failure: 'SIGNATURE_MALFORMED' };
  }
  if (!isStatement(statement)) return { ok: false, failure: 'SIGNATURE_MALFORMED' };
  if (
    statement.log !== expected.log ||
    statement.action !== expected.action ||
    !sameIdentity(statement.signer, expected.actor)
  ) {
    return { ok: false, failure: 'SIGNATURE_MISMATCH' };
  }
  return { ok: true, statement, keyId: opened.keyId };
}

function isStatement(value: unknown): value is AuthorStatement {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false;
  const v = value as Record<string, unknown>;
  return (
    v._type === AUTHOR_STATEMENT_V1 &&
    typeof v.log === 'string' &&
    typeof v.action === 'string' &&
    typeof v.signer === 'string' &&
    Object.hasOwn(v, 'claims') &&
    Object.keys(v).length === 5
  );
}

/** The statement an envelope carries, NOT verified: only to choose which rule to verify it by. */
export function readAuthorStatementUnverified(envelope: unknown): AuthorStatement | undefined {
  if (typeof envelope !== 'object' || envelope === null) return undefined;
  const payload = decodeBase64(String((envelope as { payload?: unknown }).payload ?? ''));
  if (!payload) return undefined;
  try {
    const statement: unknown = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(payload));
    return isStatement(statement) ? statement : undefined;
  } catch {
    return undefined;
  }
}
