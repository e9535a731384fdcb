import type { FileHandle } from 'node:fs/promises';
import { open } from 'node:fs/promises';
import { availableParallelism } from 'node:os';
import type { PartResult, PartTask } from './bundle-part-node';
import { AFTER_HEADER, FailureList, type ScanState, sameScanState } from './bundle-scan';
import {
  type BundleReport,
  BundleVerification,
  finishBundle,
  maxFailuresOf,
  type VerifyBundleOptions,
} from './bundle-verify';
import { forEachLine, lineRanges } from './file-lines-node';
import { SubtreeStack } from './merkle-subtree-stack';
import { partPool } from './part-pool-node';
import { type ChainFailure, matchRedactions, type RedactionEvidence, timeRegression } from './verify-events';

export interface VerifyBundleFileOptions extends VerifyBundleOptions {
  /**
   * Threads that verify (default: 2, or 1 on a single core). With 1 the file is verified on
   * this thread. With more it is cut into parts of whole lines, each verified on a worker
   * thread; the parts are joined in order. A small file, or a `trusted` state or
   * `expectHead`, is verified on this thread.
   */
  threads?: number;
  /**
   * With worker threads, `onEvent` sees only the events of these kinds (the others never
   * leave their worker); without it, every event comes back. Events still come in file order.
   */
  onEventKinds?: readonly string[];
  /** Bytes per part verified on a worker (default 4 MiB); files under two parts stay on this thread. */
  partBytes?: number;
}

/** Parts of about this many bytes: each is one message to a worker and back. */
const PART_BYTES = 4 << 20;

/**
 * `verifyBundle` over a vouch-bundle/1 file, with the same report (the same failures, in
 * the same order, with the same codes, seqs and messages), faster: lines are read from
 * blocks of bytes and, with `threads` above 1, verified on worker threads.
 *
 * Each part of the file is verified from the state an intact bundle would have before its
 * first line (that event's seq and the hash it links to); joining the parts in order
 * checks that state against what the part before really left (the seam: the last event's
 * seq and hash, the number of events and lines). A part whose seam does not join (a
 * deleted, inserted or malformed line before it) is verified again from the real state, so
 * the report is the sequential one whatever was tampered with, at worst at one thread's
 * speed. Memory stays flat: a few parts are in flight, each a few MiB.
 *
 * @example
 * const report = await verifyBundleFile('log.bundle', { verifiers: [key], threads: 2 });
 */
export async function verifyBundleFile(
  path: string,
  options: VerifyBundleFileOptions,
): Promise<BundleReport> {
  const threads = options.threads ?? Math.min(2, availableParallelism());
  if (!Number.isSafeInteger(threads) || threads < 1)
    throw new RangeError('threads must be a positive integer');
  const verification = new BundleVerification(options);
  const handle = await open(path, 'r');
  try {
    const { size } = await handle.stat();
    const header =
      threads > 1 && !options.trusted && !options.expectHead ? await readHeader(handle) : undefined;
    const partBytes = options.partBytes ?? PART_BYTES;
    if (header === undefined || size - header.end < 2 * partBytes) {
      await forEachLine(handle, { start: 0, end: size }, (line) => {
        options.signal?.throwIfAborted();
        return verification.line(line);
      });
      return verification.report();
    }
    if (!verification.line(header.line)) return verification.report();
    const ranges = await lineRanges(handle, { start: header.end, end: size }, partBytes);
    return await joinParts(verification, options, ranges, path, threads);
  } finally {
    await handle.close();
  }
}

/**
 * Whether a part verified from a guessed start (which knows no time before it) begins earlier
 * than the parts before end: it is then verified again from their state, which reports it.
 */
function timeGoesBack(part: PartResult, state: ScanState): boolean {
  if (part.start?.previousAt !== null || part.firstAt === null || state.previousAt === null) return false;
  return (
    timeRegression(part.firstAt, Date.parse(part.firstAt), state.previousAt, Date.parse(state.previousAt)) !==
    null
  );
}

/** The first line and the offset after its `\n`; undefined when it is not within 64 KiB. */
async function readHeader(handle: FileHandle): Promise<{ line: string; end: number } | undefined> {
  const probe = Buffer.alloc(64 * 1024);
  const { bytesRead } = await handle.read(probe, 0, probe.length, 0);
  const newline = probe.subarray(0, bytesRead).indexOf(0x0a);
  return newline === -1 ? undefined : { line: probe.toString('utf8', 0, newline), end: newline + 1 };
}

async function joinParts(
  verification: BundleVerification,
  options: VerifyBundleFileOptions,
  ranges: readonly PartTask['range'][],
  path: string,
  threads: number,
): Promise<BundleReport> {
  const { failures } = verification;
  const maxFailures = maxFailuresOf(options);
  const log = verification.start!.log;
  const task = (index: number, start: ScanState | null): PartTask => ({
    path,
    range: ranges[index]!,
    start,
    log,
    maxFailures,
    forward: options.onEvent === undefined ? 'none' : (options.onEventKinds ?? 'all'),
  });
  partPool.grow(threads);
  // Parts ahead of the join, queued or done: enough to keep every worker busy, few enough
  // that memory does not grow with the file.
  const pending: Array<Promise<PartResult> | undefined> = [];
  let dispatched = 0;
  const fill = (joined: number) => {
    for (; dispatched < ranges.length && dispatched < joined + 2 * threads; dispatched++) {
      // The first part starts right after the header: its state is known.
      pending[dispatched] = partPool.run(task(dispatched, dispatched === 0 ? AFTER_HEADER : null));
    }
  };
  // Settle every part even when the join stops early, so none rejects unobserved.
  const drain = () => Promise.allSettled(pending.filter((p) => p !== undefined));

  let state = AFTER_HEADER;
  const chainFailures = new FailureList<ChainFailure>(maxFailures);
  const merkle = new SubtreeStack();
  const evidence: RedactionEvidence = { erasures: [], redactionEvents: [] };
  try {
    for (let index = 0; index < ranges.length; index++) {
      fill(index);
      let part = await pending[index]!;
      pending[index] = undefined;
      options.signal?.throwIfAborted();
      if (part.start === null || !sameScanState(part.start, state) || timeGoesBack(part, state)) {
        // The seam does not join: verify the part again from what the parts before left.
        part = await partPool.run(task(index, state));
      }
      for (const failure of part.chain.kept) chainFailures.add(failure);
      chainFailures.countOmitted(part.chain.count - part.chain.kept.length);
      evidence.erasures.push(...part.redactionEvidence.erasures);
      evidence.redactionEvents.push(...part.redactionEvidence.redactionEvents);
      // Malformed lines and what onEvent reports, in line order, as one pass would add them.
      let next = 0;
      for (const { event, failuresBefore } of part.events) {
        while (next < failuresBefore) failures.add(part.failures.kept[next++]!);
        options.onEvent?.(event, failures.add);
      }
      while (next < part.failures.kept.length) failures.add(part.failures.kept[next++]!);
      failures.countOmitted(part.failures.count - part.failures.kept.length);
      for (const subtree of part.subtrees) merkle.push(subtree);
      state = part.end!;
      options.onProgress?.(state.events);
    }
  } finally {
    await drain();
  }
  const matched = matchRedactions(evidence);
  for (const failure of matched.failures) chainFailures.add(failure);
  return finishBundle(
    {
      start: verification.start,
      lineCount: state.lineNumber,
      failures,
      chain: {
        ok: chainFailures.count === 0,
        log,
        checked: state.events,
        head: state.previous,
        failures: chainFailures.kept,
        ...(matched.redactions.length > 0 ? { redactions: matched.redactions } : {}),
        ...(chainFailures.omitted > 0 ? { failuresOmitted: chainFailures.omitted } : {}),
      },
      state,
      root: merkle.root(),
      trustedRoot: undefined,
    },
    options,
  );
}
