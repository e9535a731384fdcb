import { decodeBase64, encodeBase64 } from './base64';
import { AuditError } from './errors';
import {
  isValidKeyName,
  type NoteSigner,
  type NoteVerifier,
  parseVerifierKey,
  readUint32,
} from './note-keys';

// C2SP signed notes (c2sp.org/signed-note), as golang.org/x/mod/sumdb/note writes them:
//
//   <text, ending in \n>
//   \n
//   — <key name> <base64(4-byte big-endian key ID || signature)>\n   (one or more)
//
// The signature covers the UTF-8 bytes of the text including its final newline, not the
// blank line. A note must be valid Unicode with no control characters but newline.

/** Most signatures a note may carry (the spec asks for at least 16; Go stops at 100). */
export const MAX_NOTE_SIGNATURES = 100;

const SIGNATURE_PREFIX = '\u2014 ';
// With the u flag only a lone surrogate matches: the JavaScript face of invalid UTF-8.
const LONE_SURROGATE = /\p{Surrogate}/u;

/** One signature line of a note. */
export interface NoteSignature {
  keyName: string;
  keyId: number;
  /** The signature bytes after the 4-byte key ID. */
  signature: Uint8Array;
}

/** Why a note or checkpoint was not accepted. */
export type NoteFailureCode =
  /** The text is not a signed note (or, for a checkpoint, not a checkpoint body). */
  | 'MALFORMED_CHECKPOINT'
  /** A signature by a trusted key does not verify: the note was altered or forged. */
  | 'SIGNATURE_INVALID'
  /** No signature is by a trusted key: nothing vouches for the text. */
  | 'NO_TRUSTED_SIGNATURE';

/** The result of opening a note: the text only when a trusted key vouches for it. */
export type OpenedNote =
  | {
      ok: true;
      /** The signed text, ending in a newline. */
      text: string;
      /** Signatures that verified under a trusted key (one per key). */
      verifiedBy: NoteSignature[];
      /** Signatures by keys the caller does not know, ignored as c2sp.org/signed-note requires. */
      unverified: NoteSignature[];
    }
  | { ok: false; code: NoteFailureCode; message: string; keyName?: string; keyId?: number };

/**
 * Sign `text` (which must end in a newline) with every signer, in order, and return the note.
 * Throws `AuditError` `MALFORMED_CHECKPOINT` for text a note cannot carry.
 */
export function signNote(text: string, signers: readonly NoteSigner[]): string {
  requireNoteText(text);
  if (signers.length === 0) malformed('a note needs at least one signer');
  const message = new TextEncoder().encode(text);
  const lines = signers.map((signer) => {
    const signature = signer.sign(message);
    const bytes = new Uint8Array(4 + signature.length);
    new DataView(bytes.buffer).setUint32(0, signer.keyId);
    bytes.set(signature, 4);
    return `${SIGNATURE_PREFIX}${signer.name} ${encodeBase64(bytes)}\n`;
  });
  return `${text}\n${lines.join('')}`;
}

/**
 * Parse a signed note and check its signatures against the trusted `verifiers` (objects
 * from `parseVerifierKey`, or verifier key texts). Never throws for the note's content: a
 * note arrives from outside, so every way it can fail is a result the caller must look at.
 *
 * - signatures by unknown keys are ignored (which is what allows key rotation and witnesses);
 * - a signature by a trusted key that does not verify rejects the whole note;
 * - at least one signature must verify under a trusted key.
 */
export function openNote(noteText: string, verifiers: readonly (NoteVerifier | string)[]): OpenedNote {
  const trusted = verifiers.map((v) => (typeof v === 'string' ? parseVerifierKey(v) : v));
  let parsed: { text: string; signatures: NoteSignature[] };
  try {
    parsed = parseNote(noteText);
  } catch (error) {
    return { ok: false, code: 'MALFORMED_CHECKPOINT', message: (error as Error).message };
  }
  const message = new TextEncoder().encode(parsed.text);
  const verifiedBy: NoteSignature[] = [];
  const unverified: NoteSignature[] = [];
  for (const signature of parsed.signatures) {
    const candidates = trusted.filter((v) => v.name === signature.keyName && v.keyId === signature.keyId);
    if (candidates.length === 0) {
      if (!unverified.some((s) => sameSignature(s, signature))) unverified.push(signature);
      continue;
    }
    // Every signature by a trusted key is checked, including repeats: a forged second
    // signature is evidence of tampering even when the first one is genuine.
    if (!candidates.some((v) => v.verify(message, signature.signature))) {
      return {
        ok: false,
        code: 'SIGNATURE_INVALID',
        message: `signature by trusted key ${signature.keyName} does not verify`,
        keyName: signature.keyName,
        keyId: signature.keyId,
      };
    }
    if (!verifiedBy.some((s) => s.keyName === signature.keyName && s.keyId === signature.keyId)) {
      verifiedBy.push(signature);
    }
  }
  if (verifiedBy.length === 0) {
    return {
      ok: false,
      code: 'NO_TRUSTED_SIGNATURE',
      message: 'no signature on the note is by a trusted key',
    };
  }
  return { ok: true, text: parsed.text, verifiedBy, unverified };
}

/**
 * Split a note into text and signature lines, strictly, without checking any signature;
 * throws `MALFORMED_CHECKPOINT`. Internal: callers outside this package use `openNote`.
 */
export function parseNote(noteText: string): { text: string; signatures: NoteSignature[] } {
  if (!isNoteCharacters(noteText))
    malformed('a note must be valid Unicode without control characters but newline');
  // The text may hold blank lines itself; the signatures follow the last one.
  const split = noteText.lastIndexOf('\n\n');
  if (split < 0) malformed('a note needs a blank line before its signatures');
  const text = noteText.slice(0, split + 1);
  const block = noteText.slice(split + 2);
  if (block === '' || !block.endsWith('\n')) malformed('signature lines must end in a newline');
  const lines = block.slice(0, -1).split('\n');
  if (lines.length > MAX_NOTE_SIGNATURES)
    malformed(`a note may carry at most ${MAX_NOTE_SIGNATURES} signatures`);
  const signatures = lines.map((line) => {
    if (!line.startsWith(SIGNATURE_PREFIX)) malformed('a signature line starts with an em dash and a space');
    const rest = line.slice(SIGNATURE_PREFIX.length);
    const space = rest.indexOf(' ');
    const keyName = space < 0 ? rest : rest.slice(0, space);
    const bytes = space < 0 ? undefined : decodeBase64(rest.slice(space + 1));
    if (!isValidKeyName(keyName) || bytes === undefined || bytes.length < 5) {
      malformed('a signature line is "— <key name> <base64 key ID and signature>"');
    }
    return { keyName, keyId: readUint32(bytes, 0), signature: bytes.slice(4) };
  });
  return { text, signatures };
}

function requireNoteText(text: string): void {
  if (!text.endsWith('\n') || !isNoteCharacters(text)) {
    malformed('note text must end in a newline and hold no control characters but newline');
  }
}

/** Valid Unicode with no ASCII control character but newline (c2sp.org/signed-note "Format"). */
function isNoteCharacters(text: string): boolean {
  if (LONE_SURROGATE.test(text)) return false;
  for (let i = 0; i < text.length; i++) {
    const unit = text.charCodeAt(i);
    if (unit < 0x20 && unit !== 0x0a) return false;
  }
  return true;
}

function sameSignature(a: NoteSignature, b: NoteSignature): boolean {
  return (
    a.keyName === b.keyName &&
    a.keyId === b.keyId &&
    a.signature.length === b.signature.length &&
    a.signature.every((byte, i) => byte === b.signature[i])
  );
}

function malformed(message: string): never {
  throw new AuditError('MALFORMED_CHECKPOINT', message);
}
