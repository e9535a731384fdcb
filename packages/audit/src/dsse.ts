// DSSE (Dead Simple Signing Envelope, https://github.com/secure-systems-lab/dsse), the
// envelope in-toto and Sigstore sign with, over Ed25519 keys. Written out here rather than
// taken from @sigstore/core, whose verification needs Node's crypto: this runs in browsers.
import { ed25519 } from '@noble/curves/ed25519.js';
import { decodeBase64, encodeBase64 } from './base64';

/** One signature of an envelope: the signer's key id and the signature, base64. */
export interface DsseSignature {
  keyid: string;
  sig: string;
}

/** A DSSE envelope (JSON form): the payload is base64 of the exact bytes signed. */
export interface DsseEnvelope {
  payloadType: string;
  payload: string;
  signatures: DsseSignature[];
}

const encoder = new TextEncoder();

/** `PAE(type, body) = "DSSEv1" SP LEN(type) SP type SP LEN(body) SP body` (lengths in bytes, decimal). */
export function preAuthEncoding(payloadType: string, payload: Uint8Array): Uint8Array {
  const type = encoder.encode(payloadType);
  const head = encoder.encode(`DSSEv1 ${type.length} `);
  const middle = encoder.encode(` ${payload.length} `);
  const out = new Uint8Array(head.length + type.length + middle.length + payload.length);
  out.set(head, 0);
  out.set(type, head.length);
  out.set(middle, head.length + type.length);
  out.set(payload, head.length + type.length + middle.length);
  return out;
}

/** Sign `payload` as `payloadType` with an Ed25519 seed (32 bytes): one signature, `keyid`. */
export function signDsse(
  payloadType: string,
  payload: Uint8Array,
  key: { keyId: string; seed: Uint8Array },
): DsseEnvelope {
  const sig = ed25519.sign(preAuthEncoding(payloadType, payload), key.seed);
  return {
    payloadType,
    payload: encodeBase64(payload),
    signatures: [{ keyid: key.keyId, sig: encodeBase64(sig) }],
  };
}

/** Why an envelope does not hold. */
export type DsseFailure = 'MALFORMED' | 'UNKNOWN_KEY' | 'BAD_SIGNATURE';

/**
 * The payload bytes of `envelope` when it carries exactly one signature, by a key `publicKeyOf`
 * knows, that verifies (RFC 8032, no malleable encodings); else why not.
 */
export function verifyDsse(
  envelope: unknown,
  publicKeyOf: (keyId: string) => Uint8Array | undefined,
):
  | { ok: true; payloadType: string; payload: Uint8Array; keyId: string }
  | { ok: false; failure: DsseFailure } {
  if (!isEnvelope(envelope)) return { ok: false, failure: 'MALFORMED' };
  const [signature] = envelope.signatures;
  const payload = decodeBase64(envelope.payload);
  const sig = decodeBase64(signature!.sig);
  if (payload === undefined || sig === undefined) return { ok: false, failure: 'MALFORMED' };
  const publicKey = publicKeyOf(signature!.keyid);
  if (!publicKey) return { ok: false, failure: 'UNKNOWN_KEY' };
  const message = preAuthEncoding(envelope.payloadType, payload);
  const good = sig.length === 64 && ed25519.verify(sig, message, publicKey, { zip215: false });
  return good
    ? { ok: true, payloadType: envelope.payloadType, payload, keyId: signature!.keyid }
    : { ok: false, failure: 'BAD_SIGNATURE' };
}

function isEnvelope(value: unknown): value is DsseEnvelope {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false;
  const v = value as Record<string, unknown>;
  if (typeof v.payloadType !== 'string' || typeof v.payload !== 'string') return false;
  if (!Array.isArray(v.signatures) || v.signatures.length !== 1) return false;
  const [s] = v.signatures as unknown[];
  if (typeof s !== 'object' || s === null) return false;
  const { keyid, sig } = s as Record<string, unknown>;
  return typeof keyid === 'string' && typeof sig === 'string' && Object.keys(v).length === 3;
}
