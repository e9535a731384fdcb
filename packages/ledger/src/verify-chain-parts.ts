import { availableParallelism } from 'node:os';
import {
  type ChainHead,
  GENESIS_PREV_HASH,
  matchRedactions,
  type RedactionEvidence,
  type RedactionReport,
  type StoredEvent,
  timeRegression,
} from '@vouch/audit';
import { EMPTY_TREE_ROOT, foldFromRight, type SubtreeHash, SubtreeStack } from '@vouch/audit/merkle';
import { startModuleWorker, WorkerPool } from '@vouch/audit/node';
import { sql } from 'drizzle-orm';
import type { Database } from './database';
import { readHead } from './event-store';
import { type CheckpointKeys, createCheckpointCheck } from './verify-checkpoints';
import { nodesBeyond } from './verify-merkle-nodes';
import { type EventRangeResult, type EventRangeTask, verifyEventRange } from './verify-part';
import type { PartWorkerTask } from './verify-part-worker';

/** How `verifyChain` splits a large log into parts verified in parallel. */
export interface VerifyInParts {
  /** Events per part, a power of two (default 16,384). */
  events?: number;
  /**
   * Worker threads, each with its own database connection (default: 2 on Postgres with two
   * cores or more, else 0). 0 verifies the parts one after the other on this thread, through
   * the caller's connection (the only way on PGlite). So do workers that cannot connect.
   */
  threads?: number;
  /** Logs of fewer parts than this are verified event by event (default 4). */
  minParts?: number;
}

const DEFAULT_PART_EVENTS = 16_384;
const DEFAULT_MIN_PARTS = 4;

/** What the parts proved of an intact log; the rest of a report is the caller's. */
export interface PartsOutcome {
  checked: number;
  head: ChainHead;
  redactions: RedactionReport[];
  /** Stored Merkle nodes compared with the tree recomputed from the events. */
  nodes: number;
  checkpointsChecked: number;
}

export interface PartsContext {
  log: string;
  pageSize: number;
  checkpointKeys?: CheckpointKeys;
  /** Events of these kinds are handed to `feed`, in seq order. */
  forwardKinds: readonly string[];
  feed: (events: readonly StoredEvent[]) => Promise<void>;
  onProgress?: (checked: number) => void;
  signal?: AbortSignal;
}

/** Where parts are verified: worker threads, or this thread. */
export interface PartRunner {
  run(part: EventRangeTask): Promise<EventRangeResult>;
  end(): Promise<void>;
}

const partWorkers = new WorkerPool<PartWorkerTask, EventRangeResult | null>(
  () => startModuleWorker(import.meta.url, './verify-part-worker'),
  'chain verification',
);
let runs = 0;

/**
 * Two worker threads when there are two cores or more and the database can be reached from
 * a worker (Postgres); else the parts run on this thread (PGlite lives in this thread's
 * memory). Measured on two vCPUs with Postgres on the same machine (BENCHMARKS.md, 2026-12-02
 * 22:45–23:40 UTC), two workers verified 10–50% more events per second than the parts on this
 * thread at every page size, for about 10% more Postgres CPU per event.
 */
function defaultThreads(database: Database): number {
  const reachable = database.driver.kind === 'postgres' && database.driver.reopen !== undefined;
  return reachable && availableParallelism() >= 2 ? 2 : 0;
}

/** Parts one after the other on this thread, through the caller's connection. */
export function thisThread(database: Database): PartRunner {
  return { run: (part) => verifyEventRange(database, part), end: async () => {} };
}

/** Where parts run: worker threads with their own connections, this thread, or nowhere (null). */
function partRunner(database: Database, threads: number): PartRunner | null {
  if (threads === 0) return thisThread(database);
  const url = database.driver.kind === 'postgres' ? database.driver.reopen?.() : undefined;
  if (url === undefined) return null;
  partWorkers.grow(threads);
  const run = ++runs;
  return {
    run: async (part) => (await partWorkers.run({ kind: 'part', run, url, part }))!,
    end: async () => {
      await partWorkers.broadcast({ kind: 'end', run }).catch(() => {});
    },
  };
}

/**
 * Verify an intact log's events, Merkle nodes and checkpoints in parts, in parallel: each
 * part (an aligned range of `events` seqs) is read and verified on a worker thread with its
 * own connection ({@link verifyEventRange}), and the parts are joined here in order: each
 * part's first event must link to the last hash of the part before, the parts' subtrees
 * are merged and every node above them compared with its stored row, every stored
 * checkpoint is compared with the root at its size, and erasures are matched with their
 * redactions across parts. The events of `forwardKinds` come back for the checks that read
 * payloads (`feed`).
 *
 * Parts run on this thread instead when the database cannot be reached from a worker (PGlite,
 * a pool without a URL to reopen, a worker that fails to connect or dies).
 *
 * Returns null when the log is too small to split, when the caller's own connection fails,
 * or on the first sign that it is not intact: `verifyChain` then verifies it event by event,
 * whose report (every failure, with its seq) is the one that counts. So this path only ever
 * speeds up the verdict "intact"; it never writes a failure report.
 */
export async function verifyInParts(
  database: Database,
  plan: VerifyInParts,
  context: PartsContext,
): Promise<PartsOutcome | null> {
  const partEvents = plan.events ?? DEFAULT_PART_EVENTS;
  // Math.log2, not a bit test: bitwise operators truncate to 32 bits.
  if (
    !Number.isSafeInteger(partEvents) ||
    partEvents < 2 ||
    partEvents > 2 ** 40 ||
    !Number.isInteger(Math.log2(partEvents))
  ) {
    throw new RangeError('parts.events must be a power of two from 2 to 2^40');
  }
  const threads = plan.threads ?? defaultThreads(database);
  if (!Number.isSafeInteger(threads) || threads < 0) {
    throw new RangeError('parts.threads must be a whole number, 0 or more');
  }
  const head = await readHead(database, context.log);
  if (head === null || head.seq < (plan.minParts ?? DEFAULT_MIN_PARTS) * partEvents) return null;
  return runParts(database, { partEvents, threads, head }, context, partRunner(database, threads));
}

/** How a log is cut into parts, and on how many threads they run. */
export interface PartsShape {
  partEvents: number;
  threads: number;
  /** The head read before the parts start: they verify up to it. */
  head: ChainHead;
}

/**
 * {@link verifyInParts} once the log is known to be large enough, on `workers` (null when
 * no worker can reach the database); exported for tests, which hand it a runner that fails.
 * A failure of the workers before anything was fed runs the parts again on this thread.
 * After, the events fed already sit in the caller's checks, and feeding them again would
 * report an intact log's records twice: the event-by-event run, with fresh checks, takes over.
 */
export async function runParts(
  database: Database,
  shape: PartsShape,
  context: PartsContext,
  workers: PartRunner | null,
): Promise<PartsOutcome | null> {
  let fed = false;
  const watched: PartsContext = {
    ...context,
    feed: (events) => {
      fed = true;
      return context.feed(events);
    },
  };
  const join = async (runner: PartRunner, threads: number) => {
    try {
      return await joinParts(database, runner, { ...shape, threads }, watched);
    } finally {
      await runner.end();
    }
  };
  if (workers !== null) {
    try {
      return await join(workers, shape.threads);
    } catch {
      context.signal?.throwIfAborted();
      // The caller's own connection failed (no workers), or the caller's checks hold events
      // already: the event-by-event run reports why, or starts over.
      if (shape.threads === 0 || fed) return null;
      // A worker that could not connect (a connection limit, a pooler that refuses it) or
      // died: the parts still run here, through the caller's connection.
    }
  }
  try {
    return await join(thisThread(database), 0);
  } catch {
    context.signal?.throwIfAborted();
    return null;
  }
}

async function joinParts(
  database: Database,
  runner: PartRunner,
  { partEvents, threads, head }: PartsShape,
  context: PartsContext,
): Promise<PartsOutcome | null> {
  const { log, signal } = context;
  const partLevel = Math.log2(partEvents);
  const sizes = (
    await database.rows<{ size: number }>(
      sql`select tree_size as size from checkpoints where log_id = ${log} and tree_size between 1 and ${head.seq} order by tree_size`,
    )
  ).map((row) => Number(row.size));
  let failed = false;
  const checkpoints = await createCheckpointCheck(database, log, {
    fail: () => {
      failed = true;
    },
    ...(context.checkpointKeys ? { keys: context.checkpointKeys } : {}),
  });
  if (checkpoints.next === 0) await checkpoints.at(0, EMPTY_TREE_ROOT);

  const parts = Math.ceil(head.seq / partEvents);
  let sizeAt = 0;
  const task = (index: number): EventRangeTask => {
    const after = index * partEvents;
    const through = Math.min(after + partEvents, head.seq);
    const from = sizeAt;
    while (sizeAt < sizes.length && sizes[sizeAt]! <= through) sizeAt++;
    return {
      log,
      after,
      through,
      pageSize: context.pageSize,
      forwardKinds: context.forwardKinds,
      sizes: sizes.slice(from, sizeAt),
    };
  };
  // Parts ahead of the join, queued or done: enough to keep every worker busy, few enough
  // that memory does not grow with the log.
  const ahead = 2 * Math.max(1, threads);
  const pending: Array<{ part: EventRangeTask; result: Promise<EventRangeResult> } | undefined> = [];
  let dispatched = 0;
  const fill = (joined: number) => {
    for (; dispatched < parts && dispatched < joined + ahead; dispatched++) {
      const part = task(dispatched);
      const result = runner.run(part);
      result.catch(() => {});
      pending[dispatched] = { part, result };
    }
  };

  const tree = new SubtreeStack(0);
  const above: SubtreeHash[] = [];
  const evidence: RedactionEvidence = { erasures: [], redactionEvents: [] };
  let linkTo = GENESIS_PREV_HASH;
  let lastAt: string | null = null;
  let nodes = 0;
  try {
    for (let index = 0; index < parts; index++) {
      fill(index);
      const { part, result: resulting } = pending[index]!;
      const result = await resulting;
      pending[index] = undefined;
      signal?.throwIfAborted();
      if (!result.clean || result.linksTo !== linkTo || result.last === null) return null;
      if (timeGoesBack(lastAt, result.times.first)) return null;
      await context.feed(result.events);
      // Each stored checkpoint within the part: the root at its size is the tree of the
      // parts before, then the part's leaves up to that size.
      for (let k = 0; k < part.sizes.length; k++) {
        const size = part.sizes[k]!;
        if (checkpoints.next !== size) return null;
        const range = [...tree.subtrees(), ...result.frontiers[k]!];
        await checkpoints.at(size, foldFromRight(range.map((subtree) => subtree.hash)));
      }
      for (const subtree of result.subtrees) tree.push(subtree, (node) => above.push(node));
      evidence.erasures.push(...result.redactionEvidence.erasures);
      evidence.redactionEvents.push(...result.redactionEvidence.redactionEvents);
      nodes += result.nodes;
      linkTo = result.last.hash;
      lastAt = result.times.last;
      context.onProgress?.(result.last.seq);
    }
  } finally {
    await Promise.allSettled(pending.map((entry) => entry?.result));
  }
  // The head read at the start must be the event the parts ended with: a tail rewritten
  // while they ran leaves it to the event-by-event run.
  if (linkTo !== head.hash) return null;
  if (failed || !(await storedAbove(database, log, head.seq, partLevel, above))) return null;
  if ((await nodesBeyond(database, log, head.seq)) !== null) return null;
  await checkpoints.finish();
  const matched = matchRedactions(evidence);
  if (failed || matched.failures.length > 0) return null;
  return {
    checked: head.seq,
    head,
    redactions: matched.redactions,
    nodes: nodes + above.length,
    checkpointsChecked: checkpoints.checked,
  };
}

/** Whether a part's first event (at `first`) is earlier than the part before ends (`last`). */
function timeGoesBack(last: string | null, first: string | null): boolean {
  if (last === null || first === null) return false;
  return timeRegression(first, Date.parse(first), last, Date.parse(last)) !== null;
}

/**
 * Whether the stored nodes above the parts' level, within the tree of `size` leaves, are
 * exactly `above`, the nodes the joins recomputed: a few rows, one per `2^level` leaves.
 */
async function storedAbove(
  database: Database,
  log: string,
  size: number,
  partLevel: number,
  above: readonly SubtreeHash[],
): Promise<boolean> {
  const rows = await database.rows<{ level: number; idx: number; hash: string }>(sql`
    select level, idx, hash from merkle_nodes
    where log_id = ${log} and level between ${partLevel + 1} and 62
      and (idx + 1) * (1::bigint << level) <= ${size}`);
  if (rows.length !== above.length) return false;
  const stored = new Map(rows.map((row) => [`${row.level}/${Number(row.idx)}`, row.hash]));
  return above.every(
    (node) => stored.get(`${node.level}/${node.index}`) === Buffer.from(node.hash).toString('hex'),
  );
}
