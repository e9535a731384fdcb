import { bytesToHex } from '@noble/hashes/utils.js';
import { BUNDLE_FORMAT, type BundleHeader } from './bundle-format';
import {
  AFTER_HEADER,
  BundleScan,
  type BundleScanOptions,
  FailureList,
  parseHeader,
  type ScanState,
} from './bundle-scan';
import { openCheckpoint } from './checkpoint';
import { AuditError } from './errors';
import type { StoredEvent } from './event-hash';
import { bytesEqual, EMPTY_TREE_ROOT, MERKLE_HASH_SIZE } from './merkle-hash';
import type { NoteVerifier } from './note-keys';
import type { ChainFailureCode, ChainHead, ChainReport, RedactionReport } from './verify-events';

/** Why a bundle failed: every chain failure code, plus what only a bundle can get wrong. */
export type BundleFailureCode =
  | ChainFailureCode
  /** The file is not a vouch-bundle/1 or /2: bad header, a line that is not an event, a missing checkpoint line. */
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
  | 'ROOT_MISMATCH'
  /** The `system` log's part of the header (the authors' keys) does not verify: `verifySystemPart`. */
  | 'SYSTEM_PART_INVALID';

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
  /** Every authorized erasure of fields in the bundle (see `ChainReport`); absent when there was none. */
  redactions?: RedactionReport[];
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

/**
 * Verify a vouch-bundle/1 (see `BUNDLE_FORMAT`) from its lines, in one pass with memory
 * independent of the log's length: every payload hash, event hash and chain link (through
 * the same checker as `verifyEvents`), the Merkle root over the event hashes rebuilt from
 * the leaves, and the signed checkpoint: a trusted signature, the expected origin, a
 * tree size equal to the number of events and a root equal to the rebuilt one.
 *
 * Like the chain check it keeps going after a failure and reports all of them. It throws
 * only for the auditor's own bad configuration (a `verifiers` key text or a `trusted` state
 * that does not parse: `AuditError` `MALFORMED_CHECKPOINT`) or an aborted `signal`.
 * Under Node, `verifyBundleFile` (`@vouch/audit/node`) verifies a file with the same
 * verdict, faster, on worker threads.
 *
 * @example
 * const report = await verifyBundle(splitLines(file), { verifiers: ['vouch.example/log/a+1a2b3c4d+AQ...'] });
 * if (!report.ok) for (const f of report.failures) console.error(f.seq, f.code, f.message);
 */
export async function verifyBundle(
  lines: AsyncIterable<string> | Iterable<string>,
  options: VerifyBundleOptions,
): Promise<BundleReport> {
  const verification = new BundleVerification(options);
  for await (const line of lines) {
    options.signal?.throwIfAborted();
    if (!verification.line(line)) break;
  }
  return verification.report();
}

/** {@link verifyBundle} a line at a time, for a caller that reads the lines itself. */
export class BundleVerification {
  /** The bundle's failures (the chain checker keeps its own). */
  readonly failures: FailureList<BundleFailure>;
  /** What the header said, once line 1 was read and was a header. */
  start: BundleStart | undefined;
  #scan: BundleScan<BundleFailure> | undefined;
  #lineCount = 0;

  /** Throws `AuditError` `MALFORMED_CHECKPOINT` for a `trusted` state that does not parse. */
  constructor(readonly options: VerifyBundleOptions) {
    checkBundleOptions(options);
    this.failures = new FailureList(maxFailuresOf(options));
  }

  /** The next line; false when the rest need not be read (line 1 is not a header). */
  line(line: string): boolean {
    this.#lineCount++;
    if (this.#scan !== undefined) {
      this.#scan.line(line);
      return true;
    }
    if (this.#lineCount > 1) return false;
    this.start = startBundle(line, this.options, this.failures);
    if (this.start === undefined) return false;
    this.#scan = new BundleScan(AFTER_HEADER, scanOptions(this.start.log, this.options, this.failures));
    return true;
  }

  report(): BundleReport {
    const scan = this.#scan;
    return finishBundle(
      {
        start: this.start,
        lineCount: this.#lineCount,
        failures: this.failures,
        chain: scan?.chain.finish(),
        state: scan?.state(),
        root: scan?.merkle.root(),
        trustedRoot: scan?.trustedRoot,
      },
      this.options,
    );
  }
}

/** What the header line says, once it is one. */
export interface BundleStart {
  header: BundleHeader;
  /** The log the events must belong to: the auditor's, or else the header's. */
  log: string;
}

/**
 * Read the header line: undefined (and a failure) when it is not a vouch-bundle/1 header;
 * a failure when it names another log than the auditor expects.
 */
export function startBundle(
  line: string,
  options: VerifyBundleOptions,
  failures: FailureList<BundleFailure>,
): BundleStart | undefined {
  const header = parseHeader(line);
  if (header === undefined) {
    failures.add({
      seq: 0,
      code: 'BUNDLE_MALFORMED',
      message: `line 1 is not a ${BUNDLE_FORMAT} header`,
      line: 1,
    });
    return undefined;
  }
  const log = options.log ?? header.log;
  if (header.log !== log) {
    failures.add({
      seq: 0,
      code: 'LOG_MISMATCH',
      message: `bundle is of log ${header.log}, not ${log}`,
      line: 1,
    });
  }
  return { header, log };
}

/** The options of the scan over the lines after the header. */
export function scanOptions(
  log: string,
  options: VerifyBundleOptions,
  failures: FailureList<BundleFailure>,
): BundleScanOptions<BundleFailure> {
  return {
    log,
    maxFailures: maxFailuresOf(options),
    failures,
    expectHead: options.expectHead,
    onProgress: options.onProgress,
    progressEvery: options.progressEvery,
    onEvent: options.onEvent,
    trustedSize: options.trusted?.treeSize,
  };
}

/** Throws `AuditError` `MALFORMED_CHECKPOINT` for a `trusted` state that does not parse. */
export function checkBundleOptions(options: VerifyBundleOptions): void {
  if (options.trusted !== undefined && !isTrustedState(options.trusted)) {
    // The auditor's own configuration: refuse loudly rather than verify against nothing.
    throw new AuditError('MALFORMED_CHECKPOINT', 'trusted state needs a safe tree size and a 32-byte root');
  }
}

export function maxFailuresOf(options: VerifyBundleOptions): number {
  return options.maxFailures ?? 10_000;
}

/** Everything the lines left, to check against the header and the checkpoint. */
export interface BundleEnding {
  /** Undefined when line 1 was not a header (or there was no line). */
  start: BundleStart | undefined;
  lineCount: number;
  /** The bundle's failures so far (not the chain's). */
  failures: FailureList<BundleFailure>;
  /** The chain checker's report over every event line. */
  chain: ChainReport | undefined;
  state: ScanState | undefined;
  /** The Merkle root over every event line. */
  root: Uint8Array | undefined;
  /** The Merkle root over the first `trusted.treeSize` event lines, when there were that many. */
  trustedRoot: Uint8Array | undefined;
}

/** The checks after the last line (header, trusted state, checkpoint) and the report. */
export function finishBundle(ending: BundleEnding, options: VerifyBundleOptions): BundleReport {
  const maxFailures = maxFailuresOf(options);
  const { failures, chain, start } = ending;
  const fail = failures.add;
  const root = ending.root ?? EMPTY_TREE_ROOT;
  const size = ending.state?.events ?? 0;
  const report = (checkpoint: BundleReport['checkpoint']): BundleReport => {
    // Each list was capped on its own; cap the merged list again so the total stays bounded.
    const all = [...(chain?.failures ?? []), ...failures.kept].sort((a, b) => a.seq - b.seq);
    const kept = all.slice(0, maxFailures);
    const omitted = (chain?.failuresOmitted ?? 0) + failures.omitted + all.length - kept.length;
    return {
      ok: chain?.ok === true && failures.count === 0,
      log: start?.log ?? options.log ?? '',
      checked: chain?.checked ?? 0,
      head: chain?.head ?? null,
      failures: kept,
      ...(omitted > 0 ? { failuresOmitted: omitted } : {}),
      checkpoint,
      root: bytesToHex(root),
      ...(chain?.redactions ? { redactions: chain.redactions } : {}),
    };
  };
  if (start === undefined) {
    if (ending.lineCount === 0) fail({ seq: 0, code: 'BUNDLE_MALFORMED', message: 'the bundle is empty' });
    return report(null);
  }
  const { header } = start;

  if (header.treeSize !== size) {
    fail({
      seq: 0,
      code: 'BUNDLE_MALFORMED',
      message: `header promises ${header.treeSize} events, the bundle holds ${size}`,
    });
  }
  const trusted = options.trusted;
  if (trusted !== undefined) {
    const trustedRoot = trusted.treeSize === 0 ? EMPTY_TREE_ROOT : ending.trustedRoot;
    if (trustedRoot === undefined) {
      fail({
        seq: size + 1,
        code: 'TRUNCATED',
        message: `bundle ends at ${size} events, before the trusted tree size ${trusted.treeSize}`,
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

  const checkpointNote = ending.state?.checkpointNote;
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
  if (checkpoint.treeSize > size) {
    fail({
      seq: size + 1,
      code: 'TRUNCATED',
      message: `the checkpoint covers ${checkpoint.treeSize} events, the bundle holds ${size}`,
    });
  } else if (checkpoint.treeSize < size) {
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
