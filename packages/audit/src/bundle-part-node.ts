import { open } from 'node:fs/promises';
import { BundleScan, FailureList, parseLine, type ScanState } from './bundle-scan';
import type { BundleFailure } from './bundle-verify';
import type { StoredEvent } from './event-hash';
import { type ByteRange, forEachLine } from './file-lines-node';
import type { SubtreeHash } from './merkle-subtrees';
import type { ChainFailure, RedactionEvidence } from './verify-events';

/** A part of a bundle file to verify on its own: whole lines, after the header. */
export interface PartTask {
  path: string;
  range: ByteRange;
  /**
   * The state the lines before the part leave, when it is known; null to guess it from the
   * part's first line as an intact bundle would have it (the caller checks the guess).
   */
  start: ScanState | null;
  log: string;
  maxFailures: number;
  /** Which events come back for `onEvent`: all, none, or those of these kinds. */
  forward: 'all' | 'none' | readonly string[];
}

/** A part verified: what `verifyBundle` would have found in its lines, from `start`. */
export interface PartResult {
  /** The state the part was verified from; null when its first line gave nothing to guess from. */
  start: ScanState | null;
  end: ScanState | null;
  chain: { kept: ChainFailure[]; count: number };
  /** Erasures and redaction events, matched once every part is in. */
  redactionEvidence: RedactionEvidence;
  /** Malformed lines. */
  failures: { kept: BundleFailure[]; count: number };
  /** The events to hand to `onEvent`, each with how many of `failures.kept` came before it. */
  events: Array<{ event: StoredEvent; failuresBefore: number }>;
  /** The compact Merkle range over the part's events. */
  subtrees: SubtreeHash[];
  /** The `at` of the part's first event (null without one): the join checks it against the part before. */
  firstAt: string | null;
}

/** Verify a part of a bundle file (see `verifyBundleFile`). */
export async function verifyPart(task: PartTask): Promise<PartResult> {
  const failures = new FailureList<BundleFailure>(task.maxFailures);
  const events: PartResult['events'] = [];
  const { forward } = task;
  const onEvent =
    forward === 'none'
      ? undefined
      : (event: StoredEvent) => {
          if (forward === 'all' || forward.includes(event.kind)) {
            events.push({ event, failuresBefore: failures.kept.length });
          }
        };
  let start = task.start;
  let scan: BundleScan<BundleFailure> | undefined;
  const begin = (state: ScanState) =>
    new BundleScan(state, {
      log: task.log,
      maxFailures: task.maxFailures,
      failures,
      onEvent,
      deferRedactions: true,
    });
  if (start !== null) scan = begin(start);
  const handle = await open(task.path, 'r');
  try {
    await forEachLine(handle, task.range, (line) => {
      if (scan === undefined) {
        start = guessStart(line);
        if (start === null) return false;
        scan = begin(start);
      }
      scan.line(line);
      return true;
    });
  } finally {
    await handle.close();
  }
  if (scan === undefined) {
    return {
      start: null,
      end: null,
      chain: { kept: [], count: 0 },
      redactionEvidence: { erasures: [], redactionEvents: [] },
      failures: { kept: [], count: 0 },
      events,
      subtrees: [],
      firstAt: null,
    };
  }
  const chain = scan.chain.finish();
  return {
    start,
    end: scan.state(),
    chain: { kept: chain.failures, count: chain.failures.length + (chain.failuresOmitted ?? 0) },
    redactionEvidence: scan.chain.redactionEvidence,
    failures: { kept: failures.kept, count: failures.count },
    events,
    // Copies: a digest may be a view into a larger pooled buffer, all of which would be cloned.
    subtrees: scan.merkle.subtrees().map((subtree) => ({ ...subtree, hash: subtree.hash.slice() })),
    firstAt: scan.chain.times.first,
  };
}

/**
 * The state before `line` in an intact bundle, when `line` is an event: the header and
 * events 1..seq-1 read, the last of which has the hash this one links to.
 */
function guessStart(line: string): ScanState | null {
  const parsed = parseLine(line);
  if (parsed.kind !== 'event') return null;
  const { seq, prev_hash } = parsed.event;
  return {
    lineNumber: seq,
    events: seq - 1,
    previous: seq === 1 ? null : { seq: seq - 1, hash: prev_hash },
    previousAt: null,
    checkpointNote: undefined,
  };
}
