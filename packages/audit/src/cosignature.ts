import { ed25519 } from '@noble/curves/ed25519.js';
import { decodeBase64, encodeBase64 } from './base64';
import { AuditError } from './errors';
import { parseNote } from './note';
import { hex8, noteKeyId, requireName, SIGNER_PREFIX, splitKey, withType } from './note-keys';

// Witness cosignatures, c2sp.org/tlog-cosignature `cosignature/v1` (Ed25519):
//
//   signed message:  "cosignature/v1\n" "time <decimal seconds>\n" <the checkpoint's note text>
//   signature line:  — <witness name> base64(4-byte key ID || u64 big-endian time || 64-byte signature)
//   key ID:          SHA-256(<name> || 0x0A || 0x04 || 32-byte public key)[:4]
//   verifier key:    <name>+<8 hex key ID>+base64(0x04 || 32-byte public key)
//
// A cosignature states that, at that time, the largest consistent tree the witness had seen
// of the log named by the origin line has that root. It is an extra signature line on the
// checkpoint note, so a note carrying the log's signature and cosignatures stays a valid
// signed note for tools that know only the log's key (they ignore unknown keys).

/** Signature type byte of a `cosignature/v1` Ed25519 key (c2sp.org/signed-note). */
const COSIGNATURE_V1 = 0x04;
const HEADER = 'cosignature/v1\n';
const SIGNATURE_PREFIX = '\u2014 ';
/** A timestamp must fit an int64 (the spec caps it at 2^63 - 1); JavaScript safe integers do. */
const MAX_TIME = Number.MAX_SAFE_INTEGER;

/** A witness's public key: checks its cosignatures. Build one with `parseCosignerKey`. */
export interface CosignatureVerifier {
  readonly name: string;
  readonly keyId: number;
  readonly publicKey: Uint8Array;
}

/** A witness's private key: makes cosignatures. Build one with `parseCosignerSignerKey`. Keep it secret. */
export interface Cosigner extends CosignatureVerifier {
  /** The signature line (ending in a newline) cosigning `noteText`'s checkpoint at `time` (seconds). */
  cosign(noteText: string, time: number): string;
}

/** One cosignature line of a note, read but not yet checked. */
export interface Cosignature {
  keyName: string;
  keyId: number;
  /** POSIX seconds the witness cosigned at. */
  time: number;
  signature: Uint8Array;
}

/**
 * Generate a witness key pair (`cosignature/v1`, Ed25519). `signerKey` is the witness's
 * secret; `verifierKey` is what log clients trust (`vouch verify --witness`).
 *
 * @example
 * const { signerKey, verifierKey } = generateCosignerKeys('witness.example/w1');
 */
export function generateCosignerKeys(name: string): { signerKey: string; verifierKey: string } {
  requireName(name);
  const seed = ed25519.utils.randomSecretKey();
  const publicKey = ed25519.getPublicKey(seed);
  const keyId = hex8(noteKeyId(name, publicKey, COSIGNATURE_V1));
  return {
    signerKey: `${SIGNER_PREFIX}${name}+${keyId}+${encodeBase64(withType(seed, COSIGNATURE_V1))}`,
    verifierKey: `${name}+${keyId}+${encodeBase64(withType(publicKey, COSIGNATURE_V1))}`,
  };
}

/** Parse a witness verifier key (type 0x04); throws `MALFORMED_CHECKPOINT` unless well formed with a matching key ID. */
export function parseCosignerKey(text: string): CosignatureVerifier {
  const [name, keyIdHex, publicKey] = splitKey(text, COSIGNATURE_V1);
  const keyId = noteKeyId(name, publicKey, COSIGNATURE_V1);
  if (hex8(keyId) !== keyIdHex) malformed('witness key ID does not match its name and key');
  if (!ed25519.utils.isValidPublicKey(publicKey, false))
    malformed('witness key is not an Ed25519 public key');
  return { name, keyId, publicKey };
}

/** Parse a witness signer key (`PRIVATE+KEY+<name>+<id>+base64(0x04 || seed)`). */
export function parseCosignerSignerKey(text: string): Cosigner {
  if (!text.startsWith(SIGNER_PREFIX)) malformed(`signer key must start with ${SIGNER_PREFIX}`);
  const [name, keyIdHex, seed] = splitKey(text.slice(SIGNER_PREFIX.length), COSIGNATURE_V1);
  const publicKey = ed25519.getPublicKey(seed);
  const keyId = noteKeyId(name, publicKey, COSIGNATURE_V1);
  if (hex8(keyId) !== keyIdHex) malformed('witness signer key ID does not match its name and key');
  return {
    name,
    keyId,
    publicKey,
    cosign(noteText, time) {
      const text = noteTextOf(noteText);
      requireTime(time);
      const signature = ed25519.sign(cosignedMessage(text, time), seed);
      const bytes = new Uint8Array(4 + 8 + 64);
      writeUint(bytes, 0, keyId, 4);
      writeUint(bytes, 4, time, 8);
      bytes.set(signature, 12);
      return `${SIGNATURE_PREFIX}${name} ${encodeBase64(bytes)}\n`;
    },
  };
}

/** The verifier key text of a cosigner (what to publish). */
export function formatCosignerKey(cosigner: CosignatureVerifier): string {
  return `${cosigner.name}+${hex8(cosigner.keyId)}+${encodeBase64(withType(cosigner.publicKey, COSIGNATURE_V1))}`;
}

/** The bytes a `cosignature/v1` signs: the header, the time line, then the checkpoint text. */
export function cosignedMessage(checkpointText: string, time: number): Uint8Array {
  return new TextEncoder().encode(`${HEADER}time ${time}\n${checkpointText}`);
}

/** The result of {@link verifyCosignatures}. */
export interface CosignatureCheck {
  /** True when at least `threshold` distinct trusted witnesses cosigned the checkpoint validly. */
  ok: boolean;
  /** The trusted witnesses whose cosignature verified, one entry per witness key. */
  cosignedBy: { name: string; keyId: number; time: number }[];
  /** Lines under a trusted witness's name and key ID that do not verify: altered, or for another checkpoint. */
  invalid: { name: string; keyId: number }[];
  threshold: number;
  message: string;
}

/**
 * Count the valid cosignatures on a checkpoint note by the `witnesses` you trust. Lines by
 * other keys (the log's own signature among them) are ignored; a line that claims a trusted
 * witness's name and key ID but does not verify is listed in `invalid` and counts for
 * nothing. Each witness key counts once. This does not check the log's own signature: open
 * the note with `openCheckpoint` for that. Throws `MALFORMED_CHECKPOINT` when the note does
 * not parse or `threshold` is not a whole number from 1 to the number of witnesses.
 *
 * @example
 * const check = verifyCosignatures(note, { witnesses: [w1, w2, w3], threshold: 2 });
 * if (!check.ok) refuse(check.message);
 */
export function verifyCosignatures(
  noteText: string,
  options: { witnesses: readonly (CosignatureVerifier | string)[]; threshold: number },
): CosignatureCheck {
  const witnesses = options.witnesses.map((w) => (typeof w === 'string' ? parseCosignerKey(w) : w));
  const { threshold } = options;
  if (!Number.isSafeInteger(threshold) || threshold < 1 || threshold > witnesses.length) {
    malformed(`the threshold must be a whole number from 1 to the ${witnesses.length} witness keys given`);
  }
  const { text, signatures } = parseNote(noteText);
  const cosignedBy: CosignatureCheck['cosignedBy'] = [];
  const invalid: CosignatureCheck['invalid'] = [];
  for (const line of signatures) {
    const witness = witnesses.find((w) => w.name === line.keyName && w.keyId === line.keyId);
    if (witness === undefined) continue;
    if (cosignedBy.some((c) => c.name === witness.name && c.keyId === witness.keyId)) continue;
    const cosignature = readCosignature(line.signature);
    const valid =
      cosignature !== undefined &&
      ed25519.verify(cosignature.signature, cosignedMessage(text, cosignature.time), witness.publicKey, {
        zip215: false,
      });
    if (valid) cosignedBy.push({ name: witness.name, keyId: witness.keyId, time: cosignature.time });
    else if (!invalid.some((i) => i.name === witness.name && i.keyId === witness.keyId))
      invalid.push({ name: witness.name, keyId: witness.keyId });
  }
  // A witness whose genuine line came after an invalid one is not invalid.
  const stillInvalid = invalid.filter(
    (i) => !cosignedBy.some((c) => c.name === i.name && c.keyId === i.keyId),
  );
  const ok = cosignedBy.length >= threshold;
  const names = cosignedBy.map((c) => c.name).join(', ') || 'none';
  return {
    ok,
    cosignedBy,
    invalid: stillInvalid,
    threshold,
    message: ok
      ? `cosigned by ${cosignedBy.length} of the witnesses you trust (${names}), threshold ${threshold}`
      : `the checkpoint carries valid cosignatures by ${cosignedBy.length} of the witnesses you trust (${names}), fewer than the threshold ${threshold}${stillInvalid.length ? `; ${stillInvalid.length} did not verify` : ''}`,
  };
}

/**
 * The cosignature lines of `lines` (each `— <name> <base64>\n`) that are by a trusted witness
 * and verify over `noteText`'s checkpoint; the rest are dropped. For a log collecting
 * cosignatures: keep only what any client can check.
 */
export function acceptedCosignatures(
  noteText: string,
  lines: readonly string[],
  witnesses: readonly (CosignatureVerifier | string)[],
): { accepted: string[]; refused: { line: string; reason: string }[] } {
  const text = noteTextOf(noteText);
  const trusted = witnesses.map((w) => (typeof w === 'string' ? parseCosignerKey(w) : w));
  const accepted: string[] = [];
  const refused: { line: string; reason: string }[] = [];
  for (const raw of lines) {
    const line = raw.endsWith('\n') ? raw : `${raw}\n`;
    let keyName: string;
    let keyId: number;
    try {
      const parsed = parseNote(`${text}\n${line}`).signatures[0]!;
      keyName = parsed.keyName;
      keyId = parsed.keyId;
    } catch {
      refused.push({ line: raw, reason: 'not a signature line' });
      continue;
    }
    const witness = trusted.find((w) => w.name === keyName && w.keyId === keyId);
    if (witness === undefined) {
      refused.push({ line: raw, reason: `${keyName} is not a trusted witness key` });
      continue;
    }
    const check = verifyCosignatures(`${text}\n${line}`, { witnesses: [witness], threshold: 1 });
    if (!check.ok) refused.push({ line: raw, reason: `the cosignature by ${keyName} does not verify` });
    else if (!accepted.includes(line)) accepted.push(line);
  }
  return { accepted, refused };
}

/** The signed text of a note, or the text itself when it has no signature block yet. */
function noteTextOf(noteText: string): string {
  if (noteText.includes('\n\n')) return parseNote(noteText).text;
  if (!noteText.endsWith('\n')) malformed('a checkpoint text ends in a newline');
  return noteText;
}

function readCosignature(bytes: Uint8Array): Omit<Cosignature, 'keyName' | 'keyId'> | undefined {
  // After the 4-byte key ID (already split off): u64 time, then the 64-byte signature.
  if (bytes.length !== 8 + 64) return undefined;
  let time = 0;
  for (let i = 0; i < 8; i++) time = time * 256 + bytes[i]!;
  if (time > MAX_TIME) return undefined;
  return { time, signature: bytes.slice(8) };
}

function requireTime(time: number): void {
  if (!Number.isSafeInteger(time) || time < 0) malformed('a cosignature time is a whole number of seconds');
}

function writeUint(bytes: Uint8Array, offset: number, value: number, size: number): void {
  let rest = value;
  for (let i = size - 1; i >= 0; i--) {
    bytes[offset + i] = rest % 256;
    rest = Math.floor(rest / 256);
  }
}

function malformed(message: string): never {
  throw new AuditError('MALFORMED_CHECKPOINT', message);
}

/** Decode a cosignature line's base64 (exported for tests and tools that show cosignatures). */
export function decodeCosignatureLine(line: string): Cosignature | undefined {
  if (!line.startsWith(SIGNATURE_PREFIX)) return undefined;
  const rest = line.slice(SIGNATURE_PREFIX.length).replace(/\n$/, '');
  const space = rest.indexOf(' ');
  if (space < 0) return undefined;
  const bytes = decodeBase64(rest.slice(space + 1));
  if (bytes === undefined || bytes.length !== 4 + 8 + 64) return undefined;
  const body = readCosignature(bytes.slice(4));
  if (body === undefined) return undefined;
  const keyId = bytes[0]! * 2 ** 24 + bytes[1]! * 2 ** 16 + bytes[2]! * 2 ** 8 + bytes[3]!;
  return { keyName: rest.slice(0, space), keyId, ...body };
}
