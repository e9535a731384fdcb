import { decodeBase64, encodeBase64 } from './base64';
import { AuditError } from './errors';
import { MERKLE_HASH_SIZE } from './merkle-hash';
import { type NoteSignature, openNote, parseNote, signNote } from './note';
import type { NoteSigner, NoteVerifier } from './note-keys';

// Checkpoints in the c2sp.org/tlog-checkpoint format: a signed note whose text is
//
//   <origin>\n                 who issued it (for Vouch: one origin per log)
//   <tree size>\n              decimal, no leading zeros
//   <base64 root hash>\n       RFC 6962 root of the first <tree size> leaves
//   [<extension line>\n ...]   optional, opaque, non-empty
//
// signed with Ed25519. The key name SHOULD equal the origin.

/** A log's Merkle tree head at a size, as a checkpoint states it. */
export interface Checkpoint {
  origin: string;
  treeSize: number;
  rootHash: Uint8Array;
  /** Extension lines, without newlines; usually none (they are not auditable by monitors). */
  extensions?: readonly string[];
}

/** Why a checkpoint was not accepted. */
export type CheckpointFailureCode =
  | 'MALFORMED_CHECKPOINT'
  | 'SIGNATURE_INVALID'
  | 'NO_TRUSTED_SIGNATURE'
  /** The checkpoint is genuine but for another log than the caller asked about. */
  | 'ORIGIN_MISMATCH';

/** The result of `openCheckpoint`: the checkpoint only when a trusted key vouches for it. */
export type OpenedCheckpoint =
  | {
      ok: true;
      checkpoint: Required<Checkpoint>;
      verifiedBy: NoteSignature[];
      unverified: NoteSignature[];
    }
  | { ok: false; code: CheckpointFailureCode; message: string; keyName?: string; keyId?: number };

const TREE_SIZE = /^(0|[1-9][0-9]*)$/;

/**
 * The checkpoint's note text (what gets signed). Throws `AuditError` `MALFORMED_CHECKPOINT`
 * for values the format cannot carry.
 */
export function formatCheckpoint(checkpoint: Checkpoint): string {
  const { origin, treeSize, rootHash } = checkpoint;
  const extensions = checkpoint.extensions ?? [];
  if (!isLine(origin)) malformed('origin must be a non-empty line');
  if (!Number.isSafeInteger(treeSize) || treeSize < 0)
    malformed('tree size must be a non-negative safe integer');
  if (!(rootHash instanceof Uint8Array) || rootHash.length !== MERKLE_HASH_SIZE) {
    malformed(`root hash must be ${MERKLE_HASH_SIZE} bytes`);
  }
  if (!extensions.every(isLine)) malformed('extension lines must be non-empty lines');
  return [origin, String(treeSize), encodeBase64(rootHash), ...extensions]
    .map((line) => `${line}\n`)
    .join('');
}

/**
 * Sign a checkpoint with one or more keys (several during a key rotation) and return the
 * signed note text.
 *
 * @example
 * const signer = parseSignerKey(signerKeyText); // "PRIVATE+KEY+<origin>+<key id>+<base64>"
 * const note = signCheckpoint({ origin: signer.name, treeSize: 42, rootHash }, [signer]);
 */
export function signCheckpoint(checkpoint: Checkpoint, signers: readonly NoteSigner[]): string {
  return signNote(formatCheckpoint(checkpoint), signers);
}

/**
 * Open a signed checkpoint: parse it strictly and check its signatures against the trusted
 * `verifiers` (see `openNote` for the rules: unknown keys are ignored, a bad signature by a
 * trusted key rejects the note, one good one by a trusted key is required). With `origin`,
 * the checkpoint must also be for that log. Never throws for the note's content.
 *
 * @example
 * const opened = openCheckpoint(noteText, { verifiers: [verifierKeyText], origin: 'vouch.example/log/default' });
 * if (opened.ok) verifyInclusion(leafHash, index, opened.checkpoint.treeSize, proof, opened.checkpoint.rootHash);
 */
export function openCheckpoint(
  noteText: string,
  options: { verifiers: readonly (NoteVerifier | string)[]; origin?: string },
): OpenedCheckpoint {
  const note = openNote(noteText, options.verifiers);
  if (!note.ok) return note;
  const checkpoint = parseCheckpointText(note.text);
  if (checkpoint === undefined) {
    return {
      ok: false,
      code: 'MALFORMED_CHECKPOINT',
      message: 'note text is not origin, tree size and base64 root hash lines',
    };
  }
  if (options.origin !== undefined && checkpoint.origin !== options.origin) {
    return {
      ok: false,
      code: 'ORIGIN_MISMATCH',
      message: `checkpoint is for ${checkpoint.origin}, not ${options.origin}`,
    };
  }
  return { ok: true, checkpoint, verifiedBy: note.verifiedBy, unverified: note.unverified };
}

/**
 * The checkpoint a signed note states, parsed strictly but WITHOUT checking any signature:
 * nothing vouches for the result. Only for comparing a note with what else is stored
 * beside it (a checkpoint row's columns, a root recomputed from the events) when no key
 * is at hand; anything an auditor relies on goes through {@link openCheckpoint}.
 * `undefined` when the text is not a signed note holding a checkpoint.
 */
export function readCheckpointUnverified(noteText: string): Required<Checkpoint> | undefined {
  let text: string;
  try {
    text = parseNote(noteText).text;
  } catch {
    return undefined;
  }
  return parseCheckpointText(text);
}

function parseCheckpointText(text: string): Required<Checkpoint> | undefined {
  // openNote guarantees the text ends in a newline.
  const lines = text.slice(0, -1).split('\n');
  if (lines.length < 3 || !lines.every((line) => line !== '')) return undefined;
  const [origin, size, root, ...extensions] = lines as [string, string, string, ...string[]];
  if (!TREE_SIZE.test(size) || !Number.isSafeInteger(Number(size))) return undefined;
  const rootHash = decodeBase64(root);
  if (rootHash === undefined || rootHash.length !== MERKLE_HASH_SIZE) return undefined;
  return { origin, treeSize: Number(size), rootHash, extensions };
}

function isLine(value: unknown): boolean {
  return typeof value === 'string' && value !== '' && !value.includes('\n');
}

function malformed(message: string): never {
  throw new AuditError('MALFORMED_CHECKPOINT', message);
}
