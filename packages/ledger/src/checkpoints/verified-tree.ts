import { bytesEqual, type ChainHead, createChainChecker, eventLeafHash } from '@vouch/audit';
import { CompactRange } from '@vouch/audit/merkle';
import type { Database } from '../database';
import { LedgerError } from '../errors';
import { streamEvents } from '../event-store';
import type { IntegrityAlarmReport } from '../integrity-alarm';
import { highestSignedPoint, type SignedPoint, verifySignedPoint } from './signed-point';

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
  code: 'TREE_MISMATCH' | 'CHAIN_MISMATCH' | 'CHECKPOINT_MISMATCH' | 'ROLLBACK_DETECTED';
};

export type TreeCheck = { ok: true; tree: VerifiedTree } | { ok: false; finding: TreeFinding };

/**
 * Where a process that has verified nothing yet starts: the largest size this server is known
 * to have signed, from its checkpoints table (the largest row that opens under its own keys,
 * whatever the log's head: see `highestSignedPoint`) and from the state it keeps outside the
 * database (`saved`). Each is checked against the database first (`verifySignedPoint`): the
 * log reaches it, the stored frontier folds to its root, the stored event at its size is the
 * leaf it signed. So a log cut back and written again while no signer ran is caught here,
 * before anything is signed. O(log n) rows. With neither, it starts from the empty tree (its
 * first check reads every event once): an unsigned row proves nothing.
 */
export async function resumeVerifiedTree(
  database: Database,
  log: string,
  trust: { verifiers: readonly string[]; origin: string },
  at: { headSize: number; saved?: SignedPoint | undefined },
): Promise<TreeCheck> {
  const stored = await highestSignedPoint(database, log, trust);
  const points = [stored, at.saved].filter((p): p is SignedPoint => p != null && p.treeSize > 0);
  let start: TreeCheck = { ok: true, tree: { range: new CompactRange(), head: null } };
  for (const point of points) {
    const checked = await verifySignedPoint(database, log, point, at.headSize);
    if (!checked.ok) return checked;
    if (start.ok && checked.tree.range.size >= start.tree.range.size) start = checked;
  }
  return start;
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
 * events: from `from` when this process verified up to there, else from the largest size
 * this server signed, in the database or in its saved state (see {@link resumeVerifiedTree}).
 */
export async function checkTreeToSign(
  database: Database,
  head: { log: string; treeSize: number; rootHash: Uint8Array },
  trust: { verifiers: readonly string[]; origin: string },
  from?: VerifiedTree,
  saved?: SignedPoint,
): Promise<TreeCheck> {
  let start = from;
  if (start === undefined) {
    const resumed = await resumeVerifiedTree(database, head.log, trust, { headSize: head.treeSize, saved });
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
