import { bytesToHex } from '@noble/hashes/utils.js';
import { BUNDLE_EVENT_FIELDS, BUNDLE_FORMAT, type BundleHeader } from './bundle-format';
import { openCheckpoint } from './checkpoint';
import { AuditError } from './errors';
import type { StoredEvent } from './event-hash';
import { CompactRange } from './merkle-compact-range';
import { bytesEqual, EMPTY_TREE_ROOT, eventLeafHash, MERKLE_HASH_SIZE } from './merkle-hash';
import type { NoteVerifier } from './note-keys';
import {
  type ChainChecker,
  type ChainFailureCode,
  type ChainHead,
  createChainChecker,
} from './verify-events';

/** Why a bundle failed: every chain failure code, plus what only a bundle can get wrong. */
export type BundleFailureCode =
  | ChainFailureCode
  /** The file is not a vouch-bundle/1: bad header, a line that is not an event, a missing checkpoint line. */
  | 'BUNDLE_MALFORMED'
  /** The checkpoint line is not a signed checkpoint. */
  | 'CHECKPOINT_INVALID'
  /** A signature by a trusted key on the checkpoint does not verify: forged or altered. */
  | 'SIGNATURE_INVALID'
  /** No signature on the checkpoint is by a key the auditor trusts. */
  | 'NO_TRUSTED_SIGNATURE'
  /** The checkpoint is for another origin than the auditor (or the header) names. */
  | 'ORIGIN_MISMATCH'
  /** The Merkle root over the events' hashes is not the root the checkpoint (or the trusted state) signed. */
  | 'ROOT_MISMATCH';

/** One failure, located by `seq`; seq 0 means the bundle as a whole (header, checkpoint). */
export interface BundleFailure {
  seq: number;
  code: BundleFailureCode;
  message: string;
  [detail: string]: unknown;
}

/** The verdict on a bundle, in the shape of the chain report plus what the checkpoint says. */
export interface BundleReport {
  ok: boolean;
  log: string;
  /** Event lines checked. */
  checked: number;
  head: ChainHead | null;
  failures: BundleFailure[];
  failuresOmitted?: number;
  /** The checkpoint, once a trusted key vouched for it. */
  checkpoint: { origin: string; treeSize: number; rootHash: string; verifiedBy: string[] } | null;
  /** Hex Merkle root recomputed over every event line. */
  root: string;
}

export interface VerifyBundleOptions {
  /** Checkpoint keys the auditor trusts: `parseVerifierKey` results or verifier key texts. */
  verifiers: readonly (NoteVerifier | string)[];
  /** The checkpoint origin the auditor expects; without it, the header's origin must match the checkpoint. */
  origin?: string;
  /** The log id the auditor expects; without it, the header's. */
  log?: string;
  /**
   * A checkpoint the auditor already trusts (from an earlier audit): the bundle's tree at
   * that size must have that root, or the log was rewritten (forked) since.
   */
  trusted?: { treeSize: number; rootHash: Uint8Array };
  /** A chain head the auditor already trusts (see `verifyEvents`). */
  expectHead?: ChainHead;
  onProgress?: (checked: number) => void;
  progressEvery?: number;
  signal?: AbortSignal;
  /** Cap on failures kept (default 10,000); the count goes on. */
  maxFailures?: number;
  /**
   * Each event line that parses, in file order, after its chain check: for checks of what
   * the events say (e.g. the ledger's record rules). A failure it reports goes through
   * `fail` into the report like the bundle's own.
   */
  onEvent?: (event: StoredEvent, fail: (failure: BundleFailure) => void) => void;
}

const HEX64 = /^[0-9a-f]{64}$/;
const LONE_SURROGATE = /\p{Surrogate}/u;

/**
 * Verify a vouch-bundle/1 (see `BUNDLE_FORMAT`) from its lines, in one pass with memory
 * independent of the log's length: every payload hash, event hash and chain link (through
 * the same checker as `verifyEvents`), the Merkle root over the event hashes rebuilt with a
 * `CompactRange`, and the signed checkpoint: a trusted signature, the expected origin, a
 * tree size equal to the number of events and a root equal to the rebuilt one.
 *
 * Like the chain check it keeps going after a failure and reports all of them. It throws
 * only for the auditor's own bad configuration (a `verifiers` key text or a `trusted` state
 * that does not parse: `AuditError` `MALFORMED_CHECKPOINT`) or an aborted `signal`.
 *
 * @example
 * const report = await verifyBundle(splitLines(file), { verifiers: ['vouch.example/log/a+1a2b3c4d+AQ...'] });
 * if (!report.ok) for (const f of report.failures) console.error(f.seq, f.code, f.message);
 */
export async function verifyBundle(
  lines: AsyncIterable<string> | Iterable<string>,
  options: VerifyBundleOptions,
): Promise<BundleReport> {
  const maxFailures = options.maxFailures ?? 10_000;
  const failures: BundleFailure[] = [];
  let failureCount = 0;
  const fail = (failure: BundleFailure) => {
    failureCount++;
    if (failures.length < maxFailures) failures.push(failure);
  };
  const trusted = options.trusted;
  if (trusted !== undefined && !isTrustedState(trusted)) {
    // The auditor's own configuration: refuse loudly rather than verify against nothing.
    throw new AuditError('MALFORMED_CHECKPOINT', 'trusted state needs a safe tree size and a 32-byte root');
  }

  let lineNumber = 0;
  let header: BundleHeader | undefined;
  let checker: ChainChecker | undefined;
  let checkpointNote: string | undefined;
  const range = new CompactRange();
  let trustedRoot = trusted?.treeSize === 0 ? EMPTY_TREE_ROOT : undefined;
  let log = options.log ?? '';

  for await (const line of lines) {
    options.signal?.throwIfAborted();
    lineNumber++;
    const malformed = (message: string) =>
      fail({ seq: checker!.checked + 1, code: 'BUNDLE_MALFORMED', message, line: lineNumber });

    if (header === undefined) {
      header = parseHeader(line);
      if (header === undefined) {
        fail({
          seq: 0,
          code: 'BUNDLE_MALFORMED',
          message: `line 1 is not a ${BUNDLE_FORMAT} header`,
          line: 1,
        });
        break;
      }
      log = options.log ?? header.log;
      if (header.log !== log) {
        fail({
          seq: 0,
          code: 'LOG_MISMATCH',
          message: `bundle is of log ${header.log}, not ${log}`,
          line: 1,
        });
      }
      checker = createChainChecker({
        log,
        expectHead: options.expectHead,
        onProgress: options.onProgress,
        progressEvery: options.progressEvery,
        maxFailures,
      });
      continue;
    }
    if (checkpointNote !== undefined) {
      // Splitting a text that ends in a newline leaves an empty last line: allowed.
      if (line !== '') malformed(`line ${lineNumber} follows the checkpoint line`);
      continue;
    }
    const parsed = parseLine(line);
    if (parsed.kind === 'checkpoint') {
      checkpointNote = parsed.note;
    } else if (parsed.kind === 'malformed') {
      malformed(`line ${lineNumber}: ${parsed.reason}`);
    } else {
      checker!.check(parsed.event);
      options.onEvent?.(parsed.event, fail);
      // The leaf is the stored hash as it is: if the event's fields do not hash to it, the
      // chain check says so; the Merkle check says whether this is what was checkpointed.
      range.append(eventLeafHash(parsed.event.hash));
      if (range.size === trusted?.treeSize) trustedRoot = range.root();
    }
  }

  const root = range.root();
  const report = (checkpoint: BundleReport['checkpoint']): BundleReport => {
    const chain = checker?.finish();
    // Each list was capped on its own; cap the merged list again so the total stays bounded.
    const all = [...(chain?.failures ?? []), ...failures].sort((a, b) => a.seq - b.seq);
    const kept = all.slice(0, maxFailures);
    const omitted = (chain?.failuresOmitted ?? 0) + failureCount - failures.length + all.length - kept.length;
    return {
      ok: chain?.ok === true && failureCount === 0,
      log,
      checked: chain?.checked ?? 0,
      head: chain?.head ?? null,
      failures: kept,
      ...(omitted > 0 ? { failuresOmitted: omitted } : {}),
      checkpoint,
      root: bytesToHex(root),
    };
  };
  if (header === undefined) {
    if (lineNumber === 0) fail({ seq: 0, code: 'BUNDLE_MALFORMED', message: 'the bundle is empty' });
    return report(null);
  }

  if (header.treeSize !== range.size) {
    fail({
      seq: 0,
      code: 'BUNDLE_MALFORMED',
      message: `header promises ${header.treeSize} events, the bundle holds ${range.size}`,
    });
  }
  if (trusted !== undefined) {
    if (trustedRoot === undefined) {
      fail({
        seq: range.size + 1,
        code: 'TRUNCATED',
        message: `bundle ends at ${range.size} events, before the trusted tree size ${trusted.treeSize}`,
      });
    } else if (!bytesEqual(trustedRoot, trusted.rootHash)) {
      fail({
        seq: trusted.treeSize,
        code: 'ROOT_MISMATCH',
        message: `the first ${trusted.treeSize} events do not have the trusted root: the log was rewritten`,
        expected: bytesToHex(trusted.rootHash),
        actual: bytesToHex(trustedRoot),
      });
    }
  }

  if (checkpointNote === undefined) {
    fail({
      seq: 0,
      code: 'BUNDLE_MALFORMED',
      message: 'the bundle ends without its checkpoint line: truncated',
    });
    return report(null);
  }
  const opened = openCheckpoint(checkpointNote, {
    verifiers: options.verifiers,
    origin: options.origin ?? header.origin,
  });
  if (!opened.ok) {
    const code = opened.code === 'MALFORMED_CHECKPOINT' ? 'CHECKPOINT_INVALID' : opened.code;
    fail({ seq: 0, code, message: opened.message });
    return report(null);
  }
  const { checkpoint } = opened;
  if (checkpoint.treeSize > range.size) {
    fail({
      seq: range.size + 1,
      code: 'TRUNCATED',
      message: `the checkpoint covers ${checkpoint.treeSize} events, the bundle holds ${range.size}`,
    });
  } else if (checkpoint.treeSize < range.size) {
    fail({
      seq: checkpoint.treeSize + 1,
      code: 'BUNDLE_MALFORMED',
      message: `events past the checkpoint's tree size ${checkpoint.treeSize} are not covered by it`,
    });
  } else if (!bytesEqual(root, checkpoint.rootHash)) {
    fail({
      seq: 0,
      code: 'ROOT_MISMATCH',
      message: 'the Merkle root over the events is not the root the checkpoint signed',
      expected: bytesToHex(checkpoint.rootHash),
      actual: bytesToHex(root),
    });
  }
  return report({
    origin: checkpoint.origin,
    treeSize: checkpoint.treeSize,
    rootHash: bytesToHex(checkpoint.rootHash),
    verifiedBy: opened.verifiedBy.map((s) => s.keyName),
  });
}

function isTrustedState(trusted: { treeSize: number; rootHash: Uint8Array }): boolean {
  return (
    Number.isSafeInteger(trusted.treeSize) &&
    trusted.treeSize >= 0 &&
    trusted.rootHash instanceof Uint8Array &&
    trusted.rootHash.length === MERKLE_HASH_SIZE
  );
}

function parseHeader(line: string): BundleHeader | undefined {
  const value = parseJson(line);
  if (!isObject(value)) return undefined;
  const { format, log, origin, treeSize } = value;
  if (format !== BUNDLE_FORMAT || !isNonEmptyString(log) || !isNonEmptyString(origin)) return undefined;
  if (typeof treeSize !== 'number' || !Number.isSafeInteger(treeSize) || treeSize < 0) return undefined;
  return value as BundleHeader;
}

type ParsedLine =
  | { kind: 'event'; event: StoredEvent }
  | { kind: 'checkpoint'; note: string }
  | { kind: 'malformed'; reason: string };

function parseLine(line: string): ParsedLine {
  const value = parseJson(line);
  if (!isObject(value)) return { kind: 'malformed', reason: 'not a JSON object' };
  const keys = Object.keys(value);
  if (keys.length === 1 && keys[0] === 'checkpoint') {
    return typeof value.checkpoint === 'string'
      ? { kind: 'checkpoint', note: value.checkpoint }
      : { kind: 'malformed', reason: 'checkpoint must be the note text' };
  }
  if (
    keys.length !== BUNDLE_EVENT_FIELDS.length ||
    !BUNDLE_EVENT_FIELDS.every((f) => Object.hasOwn(value, f))
  ) {
    return {
      kind: 'malformed',
      reason: `an event line has exactly the members ${BUNDLE_EVENT_FIELDS.join(', ')}`,
    };
  }
  const { seq } = value;
  if (typeof seq !== 'number' || !Number.isSafeInteger(seq) || seq < 1) {
    return { kind: 'malformed', reason: 'seq must be a positive integer' };
  }
  for (const field of ['log', 'kind', 'entity', 'actor', 'at', 'payload'] as const) {
    const text = value[field];
    // A lone surrogate (from a \ud800 escape) is not text the ledger could have hashed.
    if (typeof text !== 'string' || LONE_SURROGATE.test(text)) {
      return { kind: 'malformed', reason: `${field} must be a string of Unicode text` };
    }
  }
  for (const field of ['payload_hash', 'prev_hash', 'hash'] as const) {
    const hash = value[field];
    if (typeof hash !== 'string' || !HEX64.test(hash)) {
      return { kind: 'malformed', reason: `${field} must be 64 lowercase hex digits` };
    }
  }
  return { kind: 'event', event: value as unknown as StoredEvent };
}

function parseJson(line: string): unknown {
  try {
    return JSON.parse(line);
  } catch {
    return undefined;
  }
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function isNonEmptyString(value: unknown): value is string {
  return typeof value === 'string' && value !== '';
}
