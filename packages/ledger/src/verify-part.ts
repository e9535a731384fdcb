import {
  type ChainChecker,
  type ChainHead,
  createChainChecker,
  type RedactionEvidence,
  type StoredEvent,
} from '@vouch/audit';
import { type SubtreeHash, SubtreeStack } from '@vouch/audit/merkle';
import type { Database } from './database';
import { streamEventPages } from './event-store';
import { readBlock, type StoredBlock } from './verify-merkle-nodes';

const HASH_BYTES = 32;

/** One part of a log to verify on its own (see {@link verifyEventRange}). */
export interface EventRangeTask {
  log: string;
  /** The part is the events `after < seq <= through`; `after` is a multiple of a power of two at least `through - after`. */
  after: number;
  through: number;
  /** Events per read. */
  pageSize: number;
  /** Events of these kinds come back whole: the checks that read payloads run on the caller's thread. */
  forwardKinds: readonly string[];
  /** Tree sizes in `(after, through]` (stored checkpoints) whose compact range within the part comes back. */
  sizes: readonly number[];
}

/** What a part's events gave, when they were as an intact log has them. */
export interface EventRangeResult {
  /**
   * False when anything in the part was not as an intact log has it (a failure of the chain,
   * a gap, a stored Merkle node that differs or is missing): the caller then verifies the
   * log event by event, for the exact report, and ignores the rest of this result.
   */
  clean: boolean;
  count: number;
  /** The hash the part's first event links to: the part before must end with it. */
  linksTo: string | null;
  last: ChainHead | null;
  /** The `at` of the part's first and last events: the join checks the seam's time order. */
  times: { first: string | null; last: string | null };
  redactionEvidence: RedactionEvidence;
  /** The events of `forwardKinds`, in seq order. */
  events: StoredEvent[];
  /** The compact range of the part's leaves. */
  subtrees: SubtreeHash[];
  /** For each of `sizes`, the compact range of the part's leaves up to that size. */
  frontiers: SubtreeHash[][];
  /** Stored Merkle nodes compared (the levels above the leaves, within the part). */
  nodes: number;
}

/**
 * Verify the events of one part of a log, as `verifyChain` would, with nothing from the
 * parts before: the chain from the hash its first event links to (the caller checks that
 * seam), the tree of the part's leaves against every stored node within the part, and the
 * redaction evidence for the caller to match across parts. Parts of a log run in parallel,
 * each on its own connection (see `verify-chain-parts.ts`).
 *
 * It answers only "clean or not": on anything else the caller starts over event by event,
 * so the failures a damaged log reports are always the sequential ones.
 */
export async function verifyEventRange(database: Database, task: EventRangeTask): Promise<EventRangeResult> {
  const { log, after, through, sizes } = task;
  const forward = new Set(task.forwardKinds);
  const stack = new SubtreeStack(after);
  const events: StoredEvent[] = [];
  const frontiers: SubtreeHash[][] = [];
  const storedRead = readBlock(database, log, after, through - after);
  storedRead.catch(() => {});
  let stored: StoredBlock | null = null;
  let checker: ChainChecker | null = null;
  let linksTo: string | null = null;
  let last: ChainHead | null = null;
  let clean = true;
  let count = 0;
  let nodes = 0;
  let sizeAt = 0;

  const compare = (node: SubtreeHash) => {
    nodes++;
    const level = stored!.get(node.level);
    if (level === undefined || level.kind !== 'packed') {
      clean = false;
      return;
    }
    const at = node.index - level.lo;
    if (at < 0 || at >= level.count) {
      clean = false;
      return;
    }
    const offset = at * HASH_BYTES;
    for (let i = 0; i < HASH_BYTES; i++) {
      if (level.bytes[offset + i] !== node.hash[i]) {
        clean = false;
        return;
      }
    }
  };

  pages: for await (const page of streamEventPages(database, log, {
    after,
    through,
    pageSize: task.pageSize,
  })) {
    stored ??= await storedRead;
    for (let i = 0; i < page.length; i++) {
      const event = page[i]!;
      // Past a gap there is no tree to build: the event-by-event run reports it. (A hash that
      // is not hex decodes to a leaf that cannot match, and the chain check fails it.)
      if (event.seq !== after + count + 1) {
        clean = false;
        break pages;
      }
      if (checker === null) {
        linksTo = event.prev_hash;
        checker = createChainChecker({
          log,
          after: { seq: after, hash: event.prev_hash },
          deferRedactions: true,
          maxFailures: 1,
        });
      }
      checker.check(event);
      stack.appendEventHash(event.hash, compare);
      if (forward.has(event.kind)) events.push(event);
      count++;
      if (sizeAt < sizes.length && sizes[sizeAt] === event.seq) {
        frontiers.push(stack.subtrees());
        sizeAt++;
      }
      last = { seq: event.seq, hash: event.hash };
    }
    if (!clean) break;
  }
  const report = checker?.finish();
  return {
    clean: clean && report?.ok === true && count === through - after && sizeAt === sizes.length,
    count,
    linksTo,
    last,
    times: checker?.times ?? { first: null, last: null },
    redactionEvidence: checker?.redactionEvidence ?? { erasures: [], redactionEvents: [] },
    events,
    subtrees: stack.subtrees(),
    frontiers,
    nodes,
  };
}
