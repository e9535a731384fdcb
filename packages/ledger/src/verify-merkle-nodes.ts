import type { ChainFailure } from '@vouch/audit';
import { EMPTY_TREE_ROOT, foldFromRight, MerkleHasher } from '@vouch/audit/merkle';
import { sql } from 'drizzle-orm';
import type { Database } from './database';
import { startTreeHashingWorker, type TreeHashingWorker } from './merkle/tree-hashing-worker';

/** Leaves per block: one query reads every stored node a block of leaves completes. */
const DEFAULT_BLOCK_LEAVES = 8_192;
const HASH_BYTES = 32;
const TABLE = 'merkle_nodes';
/** Fewer leaves than this per batch are hashed on the main thread: a worker would not pay for its start. */
const DEFAULT_WORKER_MIN_LEAVES = 2_048;

/**
 * A block's stored nodes at one level: `packed` when they are contiguous from the block's
 * first index and well formed (decoded from one concatenated value per level), `rows`
 * otherwise (damage: compared one by one as text).
 */
export type StoredLevel =
  | { kind: 'packed'; lo: number; count: number; bytes: Uint8Array }
  | { kind: 'rows'; byIdx: Map<number, string> };

/** Stored nodes completed by the leaves of one block, by level. */
export type StoredBlock = Map<number, StoredLevel>;

/** A run of consecutive leaves whose nodes failed the same way: reported once. */
interface Run {
  code: 'MERKLE_MISMATCH' | 'MERKLE_MISSING';
  seq: number;
  through: number;
  level: number;
  idx: number;
  nodes: number;
}

/**
 * Nodes hashed ahead by the worker for the leaves `[first, end)` (0-based), in the order
 * they are compared; `nodes` is null until they arrive, `at` is the next one to take.
 */
interface AheadBatch {
  first: number;
  end: number;
  pending: Promise<void>;
  nodes: Uint8Array | null;
  at: number;
}

/** The incremental check of a log's stored Merkle tree against its events (see {@link createMerkleNodeCheck}). */
export interface MerkleNodeCheck {
  /**
   * The events that {@link MerkleNodeCheck.add} will be given next, in seq order: their
   * tree is hashed on a worker thread meanwhile (when the batch is large enough), and `add`
   * then only compares. Optional: `add` hashes whatever was not prepared.
   */
  prepare(events: readonly { seq: number; hash: string }[]): void;
  /**
   * The next event, in seq order. Returns a promise only when the stored nodes of the next
   * block of leaves must be awaited; otherwise the check is synchronous.
   */
  add(seq: number, eventHash: string): Promise<void> | undefined;
  /** Leaves added so far (the tree size the events give). */
  readonly size: number;
  /** Nodes recomputed and compared with their stored rows so far. */
  readonly nodes: number;
  /** False once the events stopped being 1, 2, 3, …: the tree past a gap is undefined. */
  readonly sound: boolean;
  /** RFC 9162 root of the leaves added so far, recomputed from the event hashes. */
  root(): Uint8Array;
  /** Report open runs, and stored nodes past the last leaf (`MERKLE_BEYOND_CHAIN`). */
  finish(): Promise<void>;
  /** Stop the worker thread, if one was started; call it whether the check finished or not. */
  close(): Promise<void>;
}

/**
 * Check every stored node of `log`'s Merkle tree (`merkle_nodes`, the levels above the leaves) against the tree
 * recomputed from the event hashes as they stream by, with memory bounded by one block of
 * leaves: a node that differs (`MERKLE_MISMATCH`), a complete subtree without its node
 * (`MERKLE_MISSING`), a node past the last event (`MERKLE_BEYOND_CHAIN`). Proofs and
 * checkpoints are served from these rows, so none of them may be trusted unchecked.
 *
 * Consecutive leaves that fail the same way are reported as one failure with `through`
 * and `nodes`, so a history rewritten from seq k on is one line, not two per event.
 */
export function createMerkleNodeCheck(
  database: Database,
  log: string,
  options: {
    fail: (failure: ChainFailure) => void;
    /** Leaves per read of stored nodes (default 8,192): memory is bounded by about 2x this many hashes. */
    blockLeaves?: number;
    /** Smallest batch given to {@link MerkleNodeCheck.prepare} that is hashed on a worker thread (default 2,048). */
    workerMinLeaves?: number;
  },
): MerkleNodeCheck {
  const { fail } = options;
  const blockLeaves = options.blockLeaves ?? DEFAULT_BLOCK_LEAVES;
  const workerMinLeaves = options.workerMinLeaves ?? DEFAULT_WORKER_MIN_LEAVES;
  let worker: TreeHashingWorker | null = null;
  let ahead: AheadBatch | null = null;
  /** Hashes of the complete subtrees on the right edge, largest first (a compact range). */
  const frontier: Uint8Array[] = [];
  const hasher = new MerkleHasher();
  const leafBytes = Buffer.alloc(HASH_BYTES);
  let size = 0;
  let nodes = 0;
  let sound = true;
  let run: Run | null = null;
  let block: StoredBlock = new Map();
  let nextBlock = readBlock(database, log, 0, blockLeaves);
  nextBlock.catch(() => {});

  const flush = () => {
    if (run === null) return;
    const { code, seq, through, level, idx, nodes: count } = run;
    const what =
      code === 'MERKLE_MISMATCH'
        ? `stored Merkle node (level ${level}, idx ${idx}) differs from the one recomputed from the events`
        : `Merkle node (level ${level}, idx ${idx}) is missing: the stored tree does not cover the events`;
    fail({
      seq,
      code,
      table: TABLE,
      level,
      idx,
      nodes: count,
      message: through > seq ? `${what}; ${count} nodes completed through seq ${through} fail alike` : what,
      ...(through > seq ? { through } : {}),
    });
    run = null;
  };

  // A run stays open across leaves that complete no node (every even-numbered seq): a run is
  // closed by a node that compares equal, not by a leaf with nothing to compare.
  const note = (code: Run['code'], seq: number, level: number, idx: number, count: number) => {
    if (run !== null && run.code === code) {
      run.through = seq;
      run.nodes += count;
      return;
    }
    flush();
    run = { code, seq, through: seq, level, idx, nodes: count };
  };

  /**
   * Compare one recomputed node, the 32 bytes of `hash` from `from`, with its stored row; 0
   * equal, 1 differs, 2 missing.
   */
  const compare = (level: number, idx: number, hash: Uint8Array, from: number): 0 | 1 | 2 => {
    const stored = block.get(level);
    if (stored === undefined) return 2;
    if (stored.kind === 'packed') {
      const at = idx - stored.lo;
      if (at < 0 || at >= stored.count) return 2;
      const offset = at * HASH_BYTES;
      for (let i = 0; i < HASH_BYTES; i++) if (stored.bytes[offset + i] !== hash[from + i]) return 1;
      return 0;
    }
    const hex = stored.byIdx.get(idx);
    if (hex === undefined) return 2;
    return hex === Buffer.from(hash.buffer, hash.byteOffset + from, HASH_BYTES).toString('hex') ? 0 : 1;
  };

  /** Where the next node hashed ahead by the worker starts in its batch's nodes. */
  const takeAhead = (): number => {
    const at = ahead!.at;
    ahead!.at = at + HASH_BYTES;
    return at;
  };

  // Frontier nodes popped by a merge are kept and refilled: a node hashed ahead lives in the
  // worker's batch, which is released, so the frontier copies it, without an allocation per leaf.
  const spare: Uint8Array[] = [];
  const keep = (nodes: Uint8Array, from: number): Uint8Array => {
    const slot = spare.pop() ?? new Uint8Array(HASH_BYTES);
    for (let i = 0; i < HASH_BYTES; i++) slot[i] = nodes[from + i]!;
    return slot;
  };

  const addLeaf = (seq: number, eventHash: string) => {
    const hashed = ahead !== null && ahead.nodes !== null && size >= ahead.first && size < ahead.end;
    // The node at hand: 32 bytes of `hash` from `from` (in the worker's batch when hashed ahead).
    let hash: Uint8Array;
    let from = 0;
    if (hashed) {
      hash = ahead!.nodes!;
      from = takeAhead();
    } else {
      // A hash that is not 64 hex digits decodes short and recomputes to a node that cannot
      // match: the chain check reports the event itself.
      const whole = eventHash.length === 2 * HASH_BYTES && leafBytes.write(eventHash, 'hex') === HASH_BYTES;
      hash = hasher.leaf(whole ? leafBytes : Buffer.from(eventHash, 'hex'));
    }
    let idx = size;
    let level = 0;
    let mismatch = -1;
    let missing = -1;
    let mismatchIdx = 0;
    let missingIdx = 0;
    let bad = 0;
    for (;;) {
      // A leaf has no row: it is the event's own hash, which the chain check covers.
      const result = level === 0 ? 0 : compare(level, idx, hash, from);
      if (level > 0) nodes++;
      if (result !== 0) {
        bad++;
        if (result === 1 && mismatch < 0) {
          mismatch = level;
          mismatchIdx = idx;
        } else if (result === 2 && missing < 0) {
          missing = level;
          missingIdx = idx;
        }
      }
      if (idx % 2 === 0) break;
      const left = frontier.pop()!;
      if (hashed) from = takeAhead();
      else hash = hasher.children(left, hash);
      if (left.length === HASH_BYTES) spare.push(left);
      idx = (idx - 1) / 2;
      level++;
    }
    frontier.push(hashed ? keep(hash, from) : hash);
    if (hashed && size + 1 === ahead!.end) {
      worker!.release(ahead!.nodes!);
      ahead = null;
    }
    size++;
    if (mismatch >= 0) note('MERKLE_MISMATCH', seq, mismatch, mismatchIdx, bad);
    else if (missing >= 0) note('MERKLE_MISSING', seq, missing, missingIdx, bad);
    else if (level > 0) flush();
  };

  /** Add one leaf once the nodes hashed ahead for it (if any) have arrived. */
  const addWhenHashed = (seq: number, eventHash: string): Promise<void> | undefined => {
    if (ahead !== null && ahead.nodes === null && size >= ahead.first && size < ahead.end) {
      return ahead.pending.then(() => addLeaf(seq, eventHash));
    }
    addLeaf(seq, eventHash);
    return undefined;
  };

  return {
    prepare(events) {
      // Only a batch that continues the tree, up to the first gap or malformed hash (those
      // take the main thread's path, which handles them), and only once the last is used.
      if (!sound || ahead !== null || events.length < workerMinLeaves || events[0]?.seq !== size + 1) return;
      const hashes: string[] = [];
      for (let i = 0; i < events.length; i++) {
        const event = events[i]!;
        if (event.seq !== size + 1 + hashes.length || event.hash.length !== 2 * HASH_BYTES) break;
        hashes.push(event.hash);
      }
      if (hashes.length < workerMinLeaves) return;
      worker ??= startTreeHashingWorker();
      // One decode for the batch: it stops at the first character that is not hex, so the
      // hashes before it are whole and the rest is left to the main thread.
      const input = worker.input(hashes.length * HASH_BYTES);
      const count = Math.floor(
        Buffer.from(input.buffer, input.byteOffset, input.byteLength).write(hashes.join(''), 'hex') /
          HASH_BYTES,
      );
      if (count < workerMinLeaves) return;
      const leaves = input.subarray(0, count * HASH_BYTES);
      const batch: AheadBatch = {
        first: size,
        end: size + count,
        pending: Promise.resolve(),
        nodes: null,
        at: 0,
      };
      batch.pending = worker
        .hash({
          size,
          frontier,
          leaves,
        })
        .then((nodes) => {
          batch.nodes = nodes;
        });
      // A batch abandoned by an abort must not surface as an unhandled rejection.
      batch.pending.catch(() => {});
      ahead = batch;
    },
    async close() {
      await worker?.close();
      worker = null;
    },
    get size() {
      return size;
    },
    get nodes() {
      return nodes;
    },
    get sound() {
      return sound;
    },
    add(seq, eventHash) {
      if (!sound) return undefined;
      if (seq !== size + 1) {
        // The chain check reports the gap; a tree over a chain with a hole is not defined.
        sound = false;
        flush();
        return undefined;
      }
      if (size % blockLeaves !== 0) return addWhenHashed(seq, eventHash);
      return (async () => {
        block = await nextBlock;
        nextBlock = readBlock(database, log, size + blockLeaves, blockLeaves);
        nextBlock.catch(() => {});
        await addWhenHashed(seq, eventHash);
      })();
    },
    root() {
      // A copy: the frontier's nodes are reused as leaves are added.
      return frontier.length === 0 ? EMPTY_TREE_ROOT : foldFromRight(frontier).slice();
    },
    async finish() {
      flush();
      if (!sound) return;
      const beyond = await nodesBeyond(database, log, size);
      if (beyond === null) return;
      const { level, idx, total } = beyond;
      fail({
        seq: Math.max(size + 1, Math.min((idx + 1) * 2 ** level, Number.MAX_SAFE_INTEGER)),
        code: 'MERKLE_BEYOND_CHAIN',
        table: TABLE,
        level,
        idx,
        nodes: total,
        message: `${total} stored Merkle node(s) cover leaves past the last event (seq ${size}), the first at level ${level}, idx ${idx}: events were cut off the end, or nodes were forged`,
      });
    },
  };
}

/** The index range at `level` of the subtrees completed by the leaves `[first, end)`. */
function completedRange(level: number, first: number, end: number): [number, number] {
  const width = 2 ** level;
  return [Math.ceil((first + 1) / width) - 1, Math.floor(end / width) - 1];
}

/** The stored nodes that the leaves `[first, first + leaves)` complete, in one query. */
export async function readBlock(
  database: Database,
  log: string,
  first: number,
  leaves: number,
): Promise<StoredBlock> {
  const end = first + leaves;
  const levels: number[] = [];
  const los: string[] = [];
  const his: string[] = [];
  for (let level = 1; 2 ** level <= end; level++) {
    const [lo, hi] = completedRange(level, first, end);
    if (lo > hi) continue;
    levels.push(level);
    los.push(String(lo));
    his.push(String(hi));
  }
  // Per level: how many rows, their first and last idx, whether every hash is 64
  // characters, and the hashes concatenated in idx order: one value per level to parse
  // instead of one row per node. (Decoding or pattern-matching each hash in SQL costs the
  // server far more than decoding the concatenation here does.) LATERAL: one index range
  // scan per level, whatever the planner guesses for unnest.
  const rows = await database.rows<{
    level: number;
    n: number;
    lo: number;
    hi: number;
    lo_wanted: number;
    sized: boolean;
    hashes: string;
  }>(sql`
    select r.level, a.n, a.lo, a.hi, r.lo as lo_wanted, a.sized, a.hashes
    from unnest(${sql.param(levels)}::int[], ${sql.param(los)}::text[]::bigint[], ${sql.param(his)}::text[]::bigint[]) as r(level, lo, hi)
    cross join lateral (
      select count(*)::int as n, min(m.idx) as lo, max(m.idx) as hi,
        bool_and(length(m.hash) = 64) as sized, string_agg(m.hash, '' order by m.idx) as hashes
      from merkle_nodes m
      where m.log_id = ${log} and m.level = r.level and m.idx between r.lo and r.hi
    ) as a
    where a.n > 0`);
  const stored: StoredBlock = new Map();
  for (const row of rows) {
    const { level, n, lo, hi } = row;
    // Every hash 64 characters and the concatenation exactly the lower-case hex of its
    // decoding means every one is 64 lower-case hex digits (Buffer stops at the first
    // character that is not, and reads upper-case digits, which no stored hash has): the
    // packed bytes are then exactly the stored hashes, one after the other. A block that
    // fails is compared row by row, as text. (Encoding back and comparing costs a third of
    // scanning the text with a pattern first.)
    const bytes = row.sized ? lowerHexBytes(row.hashes) : undefined;
    if (lo === row.lo_wanted && hi - lo + 1 === n && bytes !== undefined && bytes.length === n * HASH_BYTES) {
      stored.set(level, { kind: 'packed', lo, count: n, bytes });
      continue;
    }
    const [wantedLo, wantedHi] = completedRange(level, first, end);
    const byIdx = new Map<number, string>();
    for (const node of await database.rows<{ idx: number; hash: string }>(
      sql`select idx, hash from merkle_nodes where log_id = ${log} and level = ${level}
          and idx between ${wantedLo} and ${wantedHi}`,
    )) {
      byIdx.set(Number(node.idx), node.hash);
    }
    stored.set(level, { kind: 'rows', byIdx });
  }
  return stored;
}

/** The bytes `hex` encodes, when it is lower-case hex digits and nothing else. */
function lowerHexBytes(hex: string): Buffer | undefined {
  const bytes = Buffer.from(hex, 'hex');
  return bytes.toString('hex') === hex ? bytes : undefined;
}

/**
 * The first stored node (in key order) that lies outside the tree of `size` leaves, and how
 * many there are; null when none. One index range per level, so a sound log costs
 * O(log n) probes, not a scan of its n nodes. A row at level 0 or below is beyond any tree:
 * leaves are never stored.
 */
export async function nodesBeyond(
  database: Database,
  log: string,
  size: number,
): Promise<{ level: number; idx: number; total: number } | null> {
  const levels: number[] = [];
  const ends: string[] = [];
  for (let level = 1; 2 ** level <= size; level++) {
    levels.push(level);
    ends.push(String(Math.floor(size / 2 ** level)));
  }
  const [row] = await database.rows<{ level: number; idx: number; total: number }>(sql`
    select level, idx, count(*) over ()::int as total from (
      select m.level, m.idx from merkle_nodes m
      where m.log_id = ${log} and (m.level < 1 or m.level > ${levels.length})
      union all
      select b.level, b.idx
      from unnest(${sql.param(levels)}::int[], ${sql.param(ends)}::text[]::bigint[]) as r(level, e)
      cross join lateral (
        select m.level, m.idx from merkle_nodes m
        where m.log_id = ${log} and m.level = r.level and (m.idx < 0 or m.idx >= r.e)
      ) as b
    ) beyond
    order by level, idx
    limit 1`);
  return row === undefined ? null : { level: row.level, idx: Number(row.idx), total: row.total };
}
