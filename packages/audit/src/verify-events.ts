import { eventHashKnowing, GENESIS_PREV_HASH, payloadHashOf, type StoredEvent } from './event-hash';
import { isHex64 } from './hex64';
import {
  checkFieldOpenings,
  committedFieldHashes,
  committedMemberOf,
  FIELDS_COMMITMENT,
  parseRedaction,
  REDACTION_KIND,
  type RedactionPayload,
} from './payload-fields';

/** Why a chain check failed, one code per kind of damage. */
export type ChainFailureCode =
  /** The stored payload does not hash to its `payload_hash`: the payload was edited. */
  | 'PAYLOAD_HASH_MISMATCH'
  /** The event's metadata does not hash to its `hash`: seq, kind, entity, actor, time or a hash was edited. */
  | 'HASH_MISMATCH'
  /** A field's content (value and salt) does not hash to the field hash its event committed to: the content was edited. */
  | 'FIELD_MISMATCH'
  /** An unknown `commitment`, a `fields/1` payload that is not a map of field hashes, or field content on an event without a field commitment. */
  | 'COMMITMENT_INVALID'
  /** A field of an event was erased, and no later `event.redacted` event of the log names it: erased behind the ledger's back. */
  | 'REDACTION_UNAUTHORIZED'
  /** A field an `event.redacted` event erased still has content (database verification): it was never deleted, or was put back. */
  | 'REDACTION_NOT_APPLIED'
  /** `prev_hash` is not the hash of the event before: a row was inserted, replaced or reordered. */
  | 'PREV_HASH_MISMATCH'
  /** The event's `at` is earlier than the event before's, or is no time: it was not written by the server, which never goes back. */
  | 'TIME_REGRESSION'
  /** A seq is missing (or repeated, or the log does not start at 1): a row was deleted. */
  | 'SEQ_GAP'
  /** The log ends before the head the auditor trusts: events were deleted (or a backup from before it restored). */
  | 'TRUNCATED'
  /**
   * The log reaches the head the auditor trusts, but holds another event at its seq: history
   * up to it was rewritten (a fork; a witness calls it `FORKED`), not merely cut back.
   */
  | 'REWRITTEN'
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
  /** An API key issued before events committed to the key hash, not adopted (`vouch keys adopt`): all but the hash is proven. */
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

/** Fields of an event that were erased, and the redaction event that authorized it. */
export interface RedactionReport {
  /** The event whose fields were erased. */
  seq: number;
  fields: string[];
  /** The seq of the `event.redacted` event that authorized the erasure. */
  by: number;
  reason: string;
}

/** Everything an auditor needs to act on: every break, not just the first. */
export interface ChainReport {
  ok: boolean;
  log: string;
  checked: number;
  head: ChainHead | null;
  failures: ChainFailure[];
  /**
   * Every authorized erasure of fields the run saw (erasures without authority are
   * failures); absent when there was none.
   */
  redactions?: RedactionReport[];
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
  /**
   * The `at` of the event `after` names, when the caller knows it: the first event must not
   * be earlier. Without it the first event's time is compared with nothing (the caller
   * compares it at its seam).
   */
  afterAt?: string;
  /**
   * Check that no event's `at` is earlier than the one before it (`TIME_REGRESSION`; default
   * true). The checkpointer, which judges the tree and no record rule, turns it off.
   */
  checkTimes?: boolean;
  /** A head the auditor trusts from earlier: the log must still contain it. */
  expectHead?: ChainHead;
  /** Called every `progressEvery` events (default 10,000) and once at the end. */
  onProgress?: (checked: number) => void;
  progressEvery?: number;
  /** Stop early (the report says how far it got). */
  signal?: AbortSignal;
  /** Cap on failures kept in memory; the count goes on past it (default 10,000). */
  maxFailures?: number;
  /**
   * Leave erasures unmatched at `finish` (the report's `redactions` is empty): for a run
   * that is one part of a log, whose caller matches every part's `redactionEvidence` at once.
   */
  deferRedactions?: boolean;
}

/** Erased fields and redaction events, as a run saw them. */
export interface RedactionEvidence {
  /** Events with committed fields that had no content. */
  erasures: Array<{ seq: number; hash: string; fields: string[] }>;
  /** `event.redacted` events, with what they name. */
  redactionEvents: Array<RedactionPayload & { seq: number }>;
}

/**
 * Match every erased field with a later redaction event of the log that names it (its
 * target seq and hash, and the field): matched erasures are reported, the rest are
 * `REDACTION_UNAUTHORIZED`. Evidence from several runs over parts of one log may be merged first.
 */
export function matchRedactions(evidence: RedactionEvidence): {
  redactions: RedactionReport[];
  failures: ChainFailure[];
} {
  const authority = new Map<string, { by: number; reason: string }>();
  for (const event of evidence.redactionEvents) {
    for (const field of event.fields) {
      const key = `${event.target.seq}\u0000${event.target.hash}\u0000${field}`;
      // The first redaction event that names a field is the one that erased it.
      if (event.target.seq < event.seq && !authority.has(key)) {
        authority.set(key, { by: event.seq, reason: event.reason });
      }
    }
  }
  const redactions: RedactionReport[] = [];
  const failures: ChainFailure[] = [];
  for (const erasure of evidence.erasures) {
    const unauthorized: string[] = [];
    const byRedaction = new Map<number, RedactionReport>();
    for (const field of erasure.fields) {
      const found = authority.get(`${erasure.seq}\u0000${erasure.hash}\u0000${field}`);
      if (found === undefined) {
        unauthorized.push(field);
        continue;
      }
      const report = byRedaction.get(found.by) ?? {
        seq: erasure.seq,
        fields: [],
        by: found.by,
        reason: found.reason,
      };
      report.fields.push(field);
      byRedaction.set(found.by, report);
    }
    redactions.push(...byRedaction.values());
    if (unauthorized.length > 0) {
      failures.push({
        seq: erasure.seq,
        code: 'REDACTION_UNAUTHORIZED',
        message: `fields ${unauthorized.join(', ')} were erased without an ${REDACTION_KIND} event naming them`,
        fields: unauthorized,
      });
    }
  }
  redactions.sort((a, b) => a.seq - b.seq || a.by - b.by);
  return { redactions, failures };
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
  /** The erasures and redaction events seen so far (for {@link matchRedactions} across runs). */
  readonly redactionEvidence: RedactionEvidence;
  readonly checked: number;
  /** The `at` of the first and of the last event checked (null before any): for a caller that joins runs. */
  readonly times: { first: string | null; last: string | null };
}

/**
 * Why an event recorded at `at` (`time`, its milliseconds) cannot follow one recorded at
 * `previousAt`, or null when it can: a time that does not parse, or one earlier than the
 * previous event's. The server records a batch no earlier than the log's head (it clamps its
 * clock), so an honest log's times never go back; a back-dated event was inserted by
 * someone else.
 */
export function timeRegression(
  at: string,
  time: number,
  previousAt: string | null,
  previousTime: number,
): { message: string; at: string; previous_at?: string; behind_ms?: number } | null {
  if (Number.isNaN(time)) return { message: `at ${JSON.stringify(at)} is not a time`, at };
  if (previousAt === null || Number.isNaN(previousTime) || time >= previousTime) return null;
  return {
    message: `at ${at} is ${previousTime - time} ms before the event before it (${previousAt}): the event was back-dated`,
    at,
    previous_at: previousAt,
    behind_ms: previousTime - time,
  };
}

/** Create an incremental chain checker (see {@link verifyEvents}). */
export function createChainChecker(options: VerifyEventsOptions): ChainChecker {
  const progressEvery = options.progressEvery ?? 10_000;
  const maxFailures = options.maxFailures ?? 10_000;
  const failures: ChainFailure[] = [];
  let failureCount = 0;
  let checked = 0;
  let previous: ChainHead | null = options.after ?? null;
  /** Whether `previous.hash` is known to be 64 hex digits (the genesis hash is). */
  let previousIsHex = previous === null || isHex64(previous.hash);
  let expectedHeadSeen = false;
  const checkTimes = options.checkTimes ?? true;
  let firstAt: string | null = null;
  let previousAt: string | null = options.afterAt ?? null;
  let previousTime = previousAt === null ? Number.NaN : Date.parse(previousAt);
  // Erasures and redaction events are rare: kept until the end, matched then (see matchRedactions).
  const evidence: RedactionEvidence = { erasures: [], redactionEvents: [] };

  const fail = (failure: ChainFailure) => {
    failureCount++;
    if (failures.length < maxFailures) failures.push(failure);
  };

  /** A field commitment's content against its field hashes; a redaction event's authority. */
  const checkContent = (event: StoredEvent, authentic: boolean) => {
    const { seq } = event;
    const commitment = event.commitment ?? null;
    if (commitment === null) {
      if (event.fields !== undefined) {
        fail({
          seq,
          code: 'COMMITMENT_INVALID',
          message: 'field content on an event that commits to no fields',
        });
      }
      if (event.kind === REDACTION_KIND && authentic) authorize(event);
      return;
    }
    const hashes = committedFieldHashes(commitment, event.payload);
    if (hashes === null) {
      const member = committedMemberOf(commitment);
      fail({
        seq,
        code: 'COMMITMENT_INVALID',
        message:
          commitment === FIELDS_COMMITMENT
            ? 'a fields/1 payload must be an object of field hashes'
            : member !== null
              ? `a ${commitment} payload must be an object whose member ${member} is an object of field hashes`
              : `unknown payload commitment ${JSON.stringify(commitment)}`,
      });
      return;
    }
    // Without content only the commitment itself (payload hash, event hash) is checked.
    if (event.fields === undefined) return;
    const check = checkFieldOpenings(hashes, event.fields);
    if (check.mismatched.length > 0) {
      fail({
        seq,
        code: 'FIELD_MISMATCH',
        message: `fields ${check.mismatched.join(', ')} do not match the field hashes the event committed to: the content was edited`,
        fields: check.mismatched,
      });
    }
    if (check.erased.length > 0) evidence.erasures.push({ seq, hash: event.hash, fields: check.erased });
  };

  const authorize = (event: StoredEvent) => {
    const redaction = parseRedaction(event.payload);
    if (redaction !== null) evidence.redactionEvents.push({ seq: event.seq, ...redaction });
  };

  return {
    get checked() {
      return checked;
    },
    redactionEvidence: evidence,
    get times() {
      return { first: firstAt, last: checked === 0 ? null : previousAt };
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
      const expectedPrev = previous === null ? GENESIS_PREV_HASH : previous.hash;
      // Both equal to hex this checker computed (or the caller's trusted head, checked once):
      // the header text needs no escapes checked for them.
      const hashesAreHex =
        actualPayloadHash === event.payload_hash && event.prev_hash === expectedPrev && previousIsHex;
      const actualHash = eventHashKnowing(event, hashesAreHex);
      // A redaction event authorizes nothing unless it is the event that was hashed.
      checkContent(event, actualPayloadHash === event.payload_hash && actualHash === event.hash);
      if (actualHash !== event.hash) {
        fail({
          seq,
          code: 'HASH_MISMATCH',
          message: 'metadata does not match hash: a field of this event was edited',
          expected: event.hash,
          actual: actualHash,
        });
      }
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
            code: 'REWRITTEN',
            message: `event ${seq} is not the trusted head: history up to it was rewritten`,
            expected: options.expectHead.hash,
            actual: event.hash,
          });
        }
      }
      if (checkTimes) {
        // A batch's events share one time: an equal string needs no parsing.
        const time = event.at === previousAt ? previousTime : Date.parse(event.at);
        const regression = timeRegression(event.at, time, previousAt, previousTime);
        if (regression !== null) fail({ seq, code: 'TIME_REGRESSION', ...regression });
        previousTime = time;
      }
      if (checked === 0) firstAt = event.at;
      previousAt = event.at;
      previous = { seq, hash: event.hash };
      previousIsHex = actualHash === event.hash;
      checked++;
      if (checked % progressEvery === 0) options.onProgress?.(checked);
    },
    finish() {
      let redactions: RedactionReport[] = [];
      if (!options.deferRedactions) {
        const matched = matchRedactions(evidence);
        redactions = matched.redactions;
        for (const failure of matched.failures) fail(failure);
      }
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
        ...(redactions.length > 0 ? { redactions } : {}),
        ...(failureCount > failures.length ? { failuresOmitted: failureCount - failures.length } : {}),
      };
    },
  };
}
