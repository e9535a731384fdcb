import { canonicalJson } from './canonical-json';
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
}

/** An event as stored and exported: `payload` is the canonical JSON text that was hashed. */
export interface StoredEvent extends EventHeader {
  payload: string;
  hash: string;
}

/** `payload_hash = SHA-256(canonical(payload))`, hashed over already-canonical text. */
export function payloadHashOf(canonicalPayload: string): string {
  return sha256Hex(canonicalPayload);
}

/**
 * `hash = SHA-256(canonical({log, seq, kind, entity, actor, at, payload_hash, prev_hash}))`:
 * every metadata field is inside the hash, so editing any of them breaks the link as surely
 * as editing the payload.
 */
export function eventHashOf(header: EventHeader): string {
  return sha256Hex(
    canonicalJson({
      log: header.log,
      seq: header.seq,
      kind: header.kind,
      entity: header.entity,
      actor: header.actor,
      at: header.at,
      payload_hash: header.payload_hash,
      prev_hash: header.prev_hash,
    }),
  );
}
