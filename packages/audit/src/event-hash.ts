import { canonicalJson } from './canonical-json';
import type { FieldOpening } from './payload-fields';
import { sha256Hex } from './sha256';

/**
 * `prev_hash` of the first event of every log: 64 zero hex digits, so the first link
 * is checked with the same rule as every other.
 */
export const GENESIS_PREV_HASH = '0'.repeat(64);

/** The metadata an event hash commits to, besides its payload hash. */
export interface EventHeader {
  log: string;
  seq: number;
  kind: string;
  entity: string;
  actor: string;
  /** ISO 8601 UTC with milliseconds, exactly as stored (`2026-11-30T05:09:06.123Z`). */
  at: string;
  payload_hash: string;
  prev_hash: string;
  /**
   * The payload commitment, when it is not the whole-payload rule: `fields/1` (see
   * `FIELDS_COMMITMENT`). Absent (or null, as a database column reads) for every event
   * written before it existed, whose hash is then exactly the eight-member form.
   */
  commitment?: string | null;
}

/** An event as stored and exported: `payload` is the canonical JSON text that was hashed. */
export interface StoredEvent extends EventHeader {
  payload: string;
  hash: string;
  /**
   * A `fields/1` event's content, kept apart from the chain: an opening per field that was
   * not erased. Absent when the reader did not fetch the content (then only the commitment
   * is checked); `{}` when every field was erased.
   */
  fields?: Record<string, FieldOpening>;
}

/** `payload_hash = SHA-256(canonical(payload))`, hashed over already-canonical text. */
export function payloadHashOf(canonicalPayload: string): string {
  return sha256Hex(canonicalPayload);
}

/**
 * `hash = SHA-256(canonical({log, seq, kind, entity, actor, at, payload_hash, prev_hash}))`:
 * every metadata field is inside the hash, so editing any of them breaks the link as surely
 * as editing the payload. An event with a `commitment` hashes it as a ninth member.
 */
export function eventHashOf(header: EventHeader): string {
  return eventHashKnowing(header, false);
}

/**
 * {@link eventHashOf}, told whether the caller already knows `payload_hash` and `prev_hash`
 * are hex (each equal to a digest it computed): then they need no check for escapes. For
 * the chain checker, which learns exactly that on every intact event.
 */
export function eventHashKnowing(header: EventHeader, hashesAreHex: boolean): string {
  const { actor, at, entity, kind, log, payload_hash, prev_hash, seq, commitment } = header;
  const committed = commitment !== undefined && commitment !== null;
  // Fast path, taken for every event the ledger writes and an auditor checks: the members
  // with keys already in RFC 8785 order (UTF-16 code units; `commitment` sorts between `at`
  // and `entity`), strings through JSON.stringify and the number through String. For
  // well-formed strings and finite numbers these are exactly RFC 8785's serializations
  // (§3.2.2.2 and §3.2.2.3 defer to ECMAScript), so the bytes equal canonicalJson's without
  // its generic walk. A lone surrogate is the one thing JSON.stringify writes as `\udXXX`
  // where canonicalJson refuses it; anything unusual takes the generic path, which keeps
  // its result or error.
  if (
    typeof actor === 'string' &&
    typeof at === 'string' &&
    typeof entity === 'string' &&
    typeof kind === 'string' &&
    typeof log === 'string' &&
    typeof payload_hash === 'string' &&
    typeof prev_hash === 'string' &&
    typeof seq === 'number' &&
    Number.isFinite(seq) &&
    (!committed || typeof commitment === 'string')
  ) {
    // Strings JSON.stringify would write as they are, between quotes (the usual case: ids,
    // kinds, times, hex), are quoted without it: seven calls were most of this path's time.
    if (
      isPlainJsonString(actor) &&
      isPlainJsonString(at) &&
      isPlainJsonString(entity) &&
      isPlainJsonString(kind) &&
      isPlainJsonString(log) &&
      (hashesAreHex || (isPlainJsonString(payload_hash) && isPlainJsonString(prev_hash))) &&
      (!committed || isPlainJsonString(commitment))
    ) {
      const commitmentMember = committed ? `"commitment":"${commitment}",` : '';
      return sha256Hex(
        `{"actor":"${actor}","at":"${at}",${commitmentMember}"entity":"${entity}","kind":"${kind}","log":"${log}","payload_hash":"${payload_hash}","prev_hash":"${prev_hash}","seq":${seq}}`,
      );
    }
    const text = `{"actor":${JSON.stringify(actor)},"at":${JSON.stringify(at)},${committed ? `"commitment":${JSON.stringify(commitment)},` : ''}"entity":${JSON.stringify(entity)},"kind":${JSON.stringify(kind)},"log":${JSON.stringify(log)},"payload_hash":${JSON.stringify(payload_hash)},"prev_hash":${JSON.stringify(prev_hash)},"seq":${seq}}`;
    if (!text.includes('\\ud')) return sha256Hex(text);
  }
  if (committed) {
    // A ninth member, so the commitment rule an event was written under is as fixed as its seq.
    return sha256Hex(
      canonicalJson({ log, seq, kind, entity, actor, at, commitment, payload_hash, prev_hash }),
    );
  }
  return sha256Hex(canonicalJson({ log, seq, kind, entity, actor, at, payload_hash, prev_hash }));
}

/**
 * True when `JSON.stringify(text)` is `text` between quotes: no `"`, no backslash, no
 * control character and no surrogate (a paired one is written as it is too, but is rare
 * enough to leave to JSON.stringify).
 */
function isPlainJsonString(text: string): boolean {
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if (code < 0x20 || code === 0x22 || code === 0x5c || (code >= 0xd800 && code <= 0xdfff)) return false;
  }
  return true;
}
