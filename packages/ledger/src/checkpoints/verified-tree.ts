import {
  bytesEqual,
  type ChainHead,
  createChainChecker,
  eventHashOf,
  eventLeafHash,
  openCheckpoint,
  payloadHashOf,
  verifyInclusion,
} from '@vouch/audit';
import { CompactRange, rootSubtrees } from '@vouch/audit/merkle';
import type { Database } from '../database';
import { LedgerError } from '../errors';
import { readEvents, streamEvents } from '../event-store';
import type { IntegrityAlarmReport } from '../integrity-alarm';
import { readSubtreeHashes } from '../merkle/merkle-node-store';
import { merkleInclusionProof } from '../merkle/merkle-proofs';
import { latestCheckpoint } from './checkpoint-store';

/**
 * What this process has itself recomputed about a log: the Merkle tree over its first
 * `range.size` events (as a compact range, O(log n) hashes) and the chain head there.
 * Everything in it came from hashing events, never from the stored `merkle_nodes`.
 */
export interface VerifiedTree {
  range: CompactRange;
  /** The event at seq `range.size`; null for the empty tree. */
  head: ChainHead | null;
}

/** A disagreement found, ready to raise (see `IntegrityAlarm`). */
export type TreeFinding = IntegrityAlarmReport & {
  code: 'TREE_MISMATCH' | 'CHAIN_MISMATCH' | 'CHECKPOINT_MISMATCH';
};

export type TreeCheck = { ok: true; tree: VerifiedTree } | { ok: false; finding: TreeFinding };

/**
 * Where a process that has verified nothing yet starts: the latest checkpoint of `log` that
 * verifies under this server's own keys, after checking that the stored frontier still folds
 * to its signed root and that the stored event at its size is the leaf it signed. O(log n)
 * rows. A log without such a checkpoint starts from the empty tree (so its first check reads
 * every event once): an unsigned row proves nothing.
 */
export async function resumeVerifiedTree(
  database: Database,
  log: string,
  trust: { verifiers: readonly string[]; origin: string },
): Promise<TreeCheck> {
  const stored = await latestCheckpoint(database, log);
  const empty: TreeCheck = { ok: true, tree: { range: new CompactRange(), head: null } };
  if (stored === null || stored.treeSize === 0) return empty;
  const opened = openCheckpoint(stored.note, trust);
  // Signed by none of today's keys (one rotated out before it signed again): nothing to resume from.
  if (!opened.ok) return empty;
  const { treeSize, rootHash } = opened.checkpoint;
  const mismatch = (message: string, seq = treeSize): TreeCheck => ({
    ok: false,
    finding: { code: 'CHECKPOINT_MISMATCH', log, seq, table: 'merkle_nodes', message },
  });
  const frontier = await readSubtreeHashes(database, log, rootSubtrees(treeSize));
  if (frontier.some((hash) => hash === undefined)) {
    return mismatch(`the stored Merkle tree no longer reaches the signed checkpoint at ${treeSize}`);
  }
  const range = CompactRange.fromFrontier(treeSize, frontier as Uint8Array[]);
  if (!bytesEqual(range.root(), rootHash)) {
    return mismatch(`the stored Merkle nodes at size ${treeSize} do not give the root this server signed`);
  }
  // The head: the stored event at the signed size must recompute, and be the leaf that was signed.
  const [event] = await readEvents(database, log, treeSize - 1, 1);
  if (event === undefined || event.seq !== treeSize) {
    return {
      ok: false,
      finding: {
        code: 'CHECKPOINT_MISMATCH',
        log,
        seq: treeSize,
        table: 'audit_events',
        message: `the event at seq ${treeSize}, covered by a checkpoint this server signed, is gone`,
      },
    };
  }
  // A missing proof node is damage too: the frontier above was complete.
  const proof = await merkleInclusionProof(database, { log, seq: treeSize, treeSize }).catch(() => null);
  if (
    proof === null ||
    payloadHashOf(event.payload) !== event.payload_hash ||
    eventHashOf(event) !== event.hash ||
    !verifyInclusion(eventLeafHash(event.hash), treeSize - 1, treeSize, proof, rootHash)
  ) {
    return {
      ok: false,
      finding: {
        code: 'CHECKPOINT_MISMATCH',
        log,
        seq: treeSize,
        table: 'audit_events',
        message: `the event at seq ${treeSize} is not the one the checkpoint this server signed covers: history was rewritten`,
      },
    };
  }
  return { ok: true, tree: { range, head: { seq: event.seq, hash: event.hash } } };
}

/**
 * Extend a verified tree to `treeSize` from the events themselves, and check the result
 * against `storedRoot` (the root of the stored `merkle_nodes` that is about to be signed).
 * Each new event's payload hash, event hash, seq and link are recomputed (the chain
 * checker, resumed after the verified head) and its leaf is appended to the compact range:
 * O(new events) reads and hashes, O(log n) memory. Returns the tree at `treeSize`, or the
 * first disagreement.
 */
export async function extendVerifiedTree(
  database: Database,
  log: string,
  from: VerifiedTree,
  target: { treeSize: number; storedRoot: Uint8Array },
): Promise<TreeCheck> {
  if (target.treeSize < from.range.size) {
    return {
      ok: false,
      finding: {
        code: 'CHECKPOINT_MISMATCH',
        log,
        seq: target.treeSize + 1,
        table: 'audit_events',
        message: `the log has ${target.treeSize} events, fewer than the ${from.range.size} this server verified: events were deleted`,
      },
    };
  }
  const range = CompactRange.fromFrontier(from.range.size, from.range.frontier());
  // The tree, not the times: like a record rule, a back-dated event is verifyChain's to report.
  const checker = createChainChecker({
    log,
    maxFailures: 1,
    checkTimes: false,
    ...(from.head ? { after: from.head } : {}),
  });
  if (target.treeSize > range.size) {
    // Hashes only: the tree and the chain do not depend on field content (see StreamOptions).
    const events = streamEvents(database, log, { after: range.size, pageSize: PAGE, content: false });
    for await (const event of events) {
      if (event.seq > target.treeSize) break;
      checker.check(event);
      range.append(eventLeafHash(event.hash));
      if (event.seq === target.treeSize) break;
    }
  }
  const report = checker.finish();
  const failure = report.failures[0];
  if (failure !== undefined) {
    return {
      ok: false,
      finding: {
        code: 'CHAIN_MISMATCH',
        log,
        seq: failure.seq,
        table: 'audit_events',
        message: `${failure.code}: ${failure.message}`,
      },
    };
  }
  if (range.size !== target.treeSize) {
    return {
      ok: false,
      finding: {
        code: 'CHAIN_MISMATCH',
        log,
        seq: range.size + 1,
        table: 'audit_events',
        message: `the events end at seq ${range.size}, but the stored tree has ${target.treeSize} leaves`,
      },
    };
  }
  if (!bytesEqual(range.root(), target.storedRoot)) {
    return {
      ok: false,
      finding: {
        code: 'TREE_MISMATCH',
        log,
        seq: target.treeSize,
        table: 'merkle_nodes',
        message: `the stored Merkle root at size ${target.treeSize} is not the root of the events`,
      },
    };
  }
  return { ok: true, tree: { range, head: report.head ?? from.head } };
}

/**
 * Check the tree about to be signed (`head`: its size and the stored root) against the
 * events: from `from` when this process verified up to there, else from this server's own
 * latest checkpoint (see {@link resumeVerifiedTree}).
 */
export async function checkTreeToSign(
  database: Database,
  head: { log: string; treeSize: number; rootHash: Uint8Array },
  trust: { verifiers: readonly string[]; origin: string },
  from?: VerifiedTree,
): Promise<TreeCheck> {
  let start = from;
  if (start === undefined) {
    const resumed = await resumeVerifiedTree(database, head.log, trust);
    if (!resumed.ok) return resumed;
    start = resumed.tree;
  }
  return extendVerifiedTree(database, head.log, start, {
    treeSize: head.treeSize,
    storedRoot: head.rootHash,
  });
}

/** The refusal to sign over a finding, with the finding as its details. */
export function refusalToSign(finding: TreeFinding): LedgerError {
  return new LedgerError('INTEGRITY_ALARM', `not signing log ${finding.log}: ${finding.message}`, {
    details: { ...finding },
  });
}

/** Events read per page while extending (a few after each interval; a whole log only once). */
const PAGE = 2_000;
