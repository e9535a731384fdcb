import { eventHashOf, GENESIS_PREV_HASH, payloadHashOf, type StoredEvent } from './event-hash';
import { sha256Hex } from './sha256';

/** Why a chain check failed, one code per kind of damage. */
export type ChainFailureCode =
  /** The stored payload does not hash to its `payload_hash`: the payload was edited. */
  | 'PAYLOAD_HASH_MISMATCH'
  /** The event's metadata does not hash to its `hash`: seq, kind, entity, actor, time or a hash was edited. */
  | 'HASH_MISMATCH'
  /** `prev_hash` is not the hash of the event before: a row was inserted, replaced or reordered. */
  | 'PREV_HASH_MISMATCH'
  /** A seq is missing (or repeated, or the log does not start at 1): a row was deleted. */
  | 'SEQ_GAP'
  /** The log ends before, or disagrees with, the head the auditor trusts. */
  | 'TRUNCATED'
  /** A record table holds a row that no event accounts for. */
  | 'RECORD_WITHOUT_EVENT'
  /** A record row's content differs from the payload of its event. */
  | 'RECORD_MISMATCH'
  /** An event row names another log than the one being verified. */
  | 'LOG_MISMATCH';

/** One break in the chain, located by `seq`. */
export interface ChainFailure {
  seq: number;
  code: ChainFailureCode;
  message: string;
  [detail: string]: unknown;
}

/** The head of a log: its last seq and that event's hash. */
export interface ChainHead {
  seq: number;
  hash: string;
}

/** Everything an auditor needs to act on: every break, not just the first. */
export interface ChainReport {
  ok: boolean;
  log: string;
  checked: number;
  head: ChainHead | null;
  failures: ChainFailure[];
  /** How many failures were counted past `maxFailures` and not kept. */
  failuresOmitted?: number;
}

export interface VerifyEventsOptions {
  log: string;
  /** A head the auditor trusts from earlier: the log must still contain it. */
  expectHead?: ChainHead;
  /** Called every `progressEvery` events (default 10,000) and once at the end. */
  onProgress?: (checked: number) => void;
  progressEvery?: number;
  /** Stop early (the report says how far it got). */
  signal?: AbortSignal;
  /** Cap on failures kept in memory; the count goes on past it (default 10,000). */
  maxFailures?: number;
}

/**
 * Check a log's events in seq order with constant memory: every payload hash, every event
 * hash and every link. It keeps going after a break so the report lists all of them.
 *
 * The hashes are recomputed from the stored bytes (`payload` is the canonical text that was
 * hashed), so nothing a database round trip could change is trusted.
 *
 * @example
 * const report = await verifyEvents(streamOfEvents, { log: 'default' });
 * if (!report.ok) for (const f of report.failures) console.error(f.seq, f.code);
 */
export async function verifyEvents(
  events: AsyncIterable<StoredEvent> | Iterable<StoredEvent>,
  options: VerifyEventsOptions,
): Promise<ChainReport> {
  const checker = createChainChecker(options);
  for await (const event of events) {
    options.signal?.throwIfAborted();
    checker.check(event);
  }
  return checker.finish();
}

/** The incremental form of {@link verifyEvents}, for callers that drive the loop themselves. */
export interface ChainChecker {
  check(event: StoredEvent): void;
  finish(): ChainReport;
  readonly checked: number;
}

/** Create an incremental chain checker (see {@link verifyEvents}). */
export function createChainChecker(options: VerifyEventsOptions): ChainChecker {
  const progressEvery = options.progressEvery ?? 10_000;
  const maxFailures = options.maxFailures ?? 10_000;
  const failures: ChainFailure[] = [];
  let failureCount = 0;
  let checked = 0;
  let previous: ChainHead | null = null;
  let expectedHeadSeen = false;

  const fail = (failure: ChainFailure) => {
    failureCount++;
    if (failures.length < maxFailures) failures.push(failure);
  };

  return {
    get checked() {
      return checked;
    },
    check(event) {
      const { seq } = event;
      if (event.log !== options.log) {
        fail({ seq, code: 'LOG_MISMATCH', message: `event belongs to log ${event.log}, not ${options.log}` });
      }
      const expectedSeq = previous === null ? 1 : previous.seq + 1;
      if (seq !== expectedSeq) {
        fail({
          seq,
          code: 'SEQ_GAP',
          message:
            seq > expectedSeq
              ? `seq ${expectedSeq}..${seq - 1} missing: events were deleted`
              : `seq ${seq} follows ${expectedSeq - 1}: events repeated or out of order`,
          expected: expectedSeq,
        });
      }
      const actualPayloadHash = payloadHashOf(event.payload);
      if (actualPayloadHash !== event.payload_hash) {
        fail({
          seq,
          code: 'PAYLOAD_HASH_MISMATCH',
          message: 'payload does not match payload_hash: the payload was edited',
          expected: event.payload_hash,
          actual: actualPayloadHash,
        });
      }
      const actualHash = headerHashOf(event);
      if (actualHash !== event.hash) {
        fail({
          seq,
          code: 'HASH_MISMATCH',
          message: 'metadata does not match hash: a field of this event was edited',
          expected: event.hash,
          actual: actualHash,
        });
      }
      const expectedPrev = previous === null ? GENESIS_PREV_HASH : previous.hash;
      // After a gap the link is judged against the row that is there; the gap is its own failure.
      if (event.prev_hash !== expectedPrev) {
        fail({
          seq,
          code: 'PREV_HASH_MISMATCH',
          message:
            previous === null
              ? 'first event does not start from the genesis hash'
              : `prev_hash is not the hash of seq ${previous.seq}: an event was inserted, replaced or reordered`,
          expected: expectedPrev,
          actual: event.prev_hash,
        });
      }
      if (options.expectHead && seq === options.expectHead.seq) {
        expectedHeadSeen = true;
        if (event.hash !== options.expectHead.hash) {
          fail({
            seq,
            code: 'TRUNCATED',
            message: `event ${seq} is not the trusted head: history up to it was rewritten`,
            expected: options.expectHead.hash,
            actual: event.hash,
          });
        }
      }
      previous = { seq, hash: event.hash };
      checked++;
      if (checked % progressEvery === 0) options.onProgress?.(checked);
    },
    finish() {
      const expectHead = options.expectHead;
      if (expectHead && !expectedHeadSeen) {
        fail({
          seq: expectHead.seq,
          code: 'TRUNCATED',
          message: `log ends at seq ${previous?.seq ?? 0}, before the trusted head ${expectHead.seq}`,
          expected: expectHead.hash,
        });
      }
      options.onProgress?.(checked);
      return {
        ok: failureCount === 0,
        log: options.log,
        checked,
        head: previous,
        failures,
        ...(failureCount > failures.length ? { failuresOmitted: failureCount - failures.length } : {}),
      };
    },
  };
}

/**
 * `eventHashOf(event)`, computed faster for the events a verifier meets: the header's eight
 * members, keys already in RFC 8785 order (UTF-16 code units: actor, at, entity, kind, log,
 * payload_hash, prev_hash, seq), strings through `JSON.stringify` and the number through
 * `String`. For well-formed strings and finite numbers these are exactly RFC 8785's string
 * and number serializations (§3.2.2.2 and §3.2.2.3 both defer to ECMAScript), so the bytes
 * are the bytes `canonicalJson` makes, without its generic walk (about twice as fast).
 *
 * Anything else goes to `eventHashOf` itself, so its result (or its error) is unchanged: a
 * member that is not a string (or seq not a finite number), and any lone surrogate, which
 * `JSON.stringify` escapes as `\udXXX` where `canonicalJson` refuses it. `JSON.stringify`
 * writes no other `\ud` than those (and a literal backslash before "ud", which only costs
 * the slow path).
 */
function headerHashOf(event: StoredEvent): string {
  const { actor, at, entity, kind, log, payload_hash, prev_hash, seq } = event;
  if (
    typeof actor === 'string' &&
    typeof at === 'string' &&
    typeof entity === 'string' &&
    typeof kind === 'string' &&
    typeof log === 'string' &&
    typeof payload_hash === 'string' &&
    typeof prev_hash === 'string' &&
    typeof seq === 'number' &&
    Number.isFinite(seq)
  ) {
    const text = `{"actor":${JSON.stringify(actor)},"at":${JSON.stringify(at)},"entity":${JSON.stringify(entity)},"kind":${JSON.stringify(kind)},"log":${JSON.stringify(log)},"payload_hash":${JSON.stringify(payload_hash)},"prev_hash":${JSON.stringify(prev_hash)},"seq":${seq}}`;
    if (!text.includes('\\ud')) return sha256Hex(text);
  }
  return eventHashOf(event);
}
