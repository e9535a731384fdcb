import { eventHashOf, GENESIS_PREV_HASH, payloadHashOf, type StoredEvent } from './event-hash';

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
  /** A record event breaks a rule the server enforces when it writes one (`rule` names it): it was not written by the server. */
  | 'RECORD_RULE_VIOLATION'
  /** An API key row (or revocation row) that no event of the `system` log accounts for. */
  | 'KEY_WITHOUT_EVENT'
  /** An API key row that differs from its `api_key.created` event, or such an event whose row is gone. */
  | 'KEY_MISMATCH'
  /** An API key issued before events committed to the key hash: all but the hash is proven; rotate it. */
  | 'KEY_UNPROVEN'
  /** A revocation row that no `api_key.revoked` event accounts for. */
  | 'REVOCATION_WITHOUT_EVENT'
  /** A revocation row that differs from its event, or a revocation event whose row is gone. */
  | 'REVOCATION_MISMATCH'
  /** An event row names another log than the one being verified. */
  | 'LOG_MISMATCH'
  /** A stored Merkle node differs from the node recomputed from the event hashes. */
  | 'MERKLE_MISMATCH'
  /** A complete subtree of the tree over the events has no stored Merkle node. */
  | 'MERKLE_MISSING'
  /** A stored Merkle node covers leaves past the last event: events were cut off, or the node forged. */
  | 'MERKLE_BEYOND_CHAIN'
  /** A stored checkpoint disagrees with the events (its root, its size) or with its own note. */
  | 'CHECKPOINT_MISMATCH'
  /** A stored checkpoint's note does not verify under the log's public key. */
  | 'CHECKPOINT_SIGNATURE_INVALID';

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
  /**
   * Check a run that continues after this head, which the caller already trusts (the
   * checkpointer resumes from its last verified event): the first event must be seq
   * `after.seq + 1` and link to `after.hash`. Default: the run starts at seq 1 from genesis.
   */
  after?: ChainHead;
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
  let previous: ChainHead | null = options.after ?? null;
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
      const actualHash = eventHashOf(event);
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
