import {
  type ChainFailure,
  type Checkpoint,
  type NoteVerifier,
  openCheckpoint,
  readCheckpointUnverified,
} from '@vouch/audit';
import { and, asc, eq, gt } from 'drizzle-orm';
import type { StoredCheckpoint } from './checkpoints/checkpoint-store';
import type { Database } from './database';
import { checkpoints } from './schema/core';

/** Checkpoint rows read per query. */
const PAGE = 500;
const TABLE = 'checkpoints';

/** The log's public key(s), to check every stored checkpoint's signature with. */
export interface CheckpointKeys {
  /** Verifier key texts (`<name>+<id>+<base64>`) or parsed verifiers. */
  verifiers: readonly (NoteVerifier | string)[];
  /** The origin every checkpoint of this log must name (`logOrigin(prefix, log)`), when known. */
  origin?: string;
}

/**
 * Check one stored checkpoint against everything that can vouch for or against it: the
 * note's own text must state the row's tree size and root; the root must be the one
 * recomputed from the first `treeSize` events (`recomputed`, null when the log holds fewer
 * events); and, with `keys`, the note must be signed by the log's key for the log's origin.
 * Returns every disagreement, each at `seq = treeSize`.
 */
export function checkStoredCheckpoint(
  checkpoint: StoredCheckpoint,
  recomputed: Uint8Array | null,
  keys?: CheckpointKeys,
): ChainFailure[] {
  const at = { seq: checkpoint.treeSize, table: TABLE, tree_size: checkpoint.treeSize };
  const failures: ChainFailure[] = [];
  let stated: Required<Checkpoint> | undefined;
  if (keys) {
    const opened = openCheckpoint(checkpoint.note, {
      verifiers: keys.verifiers,
      ...(keys.origin === undefined ? {} : { origin: keys.origin }),
    });
    if (opened.ok) stated = opened.checkpoint;
    else if (opened.code !== 'MALFORMED_CHECKPOINT') {
      failures.push({
        ...at,
        code: 'CHECKPOINT_SIGNATURE_INVALID',
        reason: opened.code,
        message: `checkpoint at tree size ${checkpoint.treeSize} does not verify under the log's key: ${opened.message}`,
      });
      stated = readCheckpointUnverified(checkpoint.note);
    }
  } else {
    stated = readCheckpointUnverified(checkpoint.note);
  }
  if (stated === undefined) {
    failures.push({
      ...at,
      code: 'CHECKPOINT_MISMATCH',
      message: `checkpoint at tree size ${checkpoint.treeSize}: its note is not a signed checkpoint`,
    });
  } else {
    const statedRoot = Buffer.from(stated.rootHash).toString('hex');
    if (stated.treeSize !== checkpoint.treeSize || statedRoot !== checkpoint.rootHash) {
      failures.push({
        ...at,
        code: 'CHECKPOINT_MISMATCH',
        message: `checkpoint row says tree size ${checkpoint.treeSize}, root ${checkpoint.rootHash}; its signed note says ${stated.treeSize}, ${statedRoot}`,
        note: { tree_size: stated.treeSize, root_hash: statedRoot },
      });
    }
  }
  if (recomputed === null) {
    failures.push({
      ...at,
      code: 'CHECKPOINT_MISMATCH',
      message: `checkpoint at tree size ${checkpoint.treeSize} is past the last event: events were cut off the end, or the checkpoint forged`,
    });
  } else {
    const actual = Buffer.from(recomputed).toString('hex');
    if (actual !== checkpoint.rootHash) {
      failures.push({
        ...at,
        code: 'CHECKPOINT_MISMATCH',
        message: `checkpoint at tree size ${checkpoint.treeSize} states root ${checkpoint.rootHash}, but the first ${checkpoint.treeSize} events give ${actual}`,
        expected: checkpoint.rootHash,
        actual,
      });
    }
  }
  return failures;
}

/** The incremental check of a log's stored checkpoints as its tree grows (see {@link createCheckpointCheck}). */
export interface CheckpointCheck {
  /** The tree size of the next stored checkpoint not yet checked (Infinity when none is left). */
  readonly next: number;
  /** Check the stored checkpoints at tree size `size`, whose recomputed root is `root`. */
  at(size: number, root: Uint8Array): Promise<void>;
  /** Checkpoints left once the events ran out: each is past the last event. */
  finish(): Promise<void>;
  readonly checked: number;
}

/**
 * Walk a log's stored checkpoints in tree-size order, a page at a time, while its events
 * stream by: the caller asks {@link CheckpointCheck.next} after each leaf, which is a number
 * compare, and calls `at` only when a checkpoint's size is reached.
 */
export async function createCheckpointCheck(
  database: Database,
  log: string,
  options: { fail: (failure: ChainFailure) => void; keys?: CheckpointKeys },
): Promise<CheckpointCheck> {
  let page: StoredCheckpoint[] = [];
  let position = 0;
  // From below any tree size: a row written by hand with a negative size is read too.
  let after = Number.MIN_SAFE_INTEGER;
  let exhausted = false;
  let checked = 0;

  const load = async () => {
    page = await database.db
      .select({
        log: checkpoints.logId,
        treeSize: checkpoints.treeSize,
        rootHash: checkpoints.rootHash,
        note: checkpoints.note,
        createdAt: checkpoints.createdAt,
      })
      .from(checkpoints)
      .where(and(eq(checkpoints.logId, log), gt(checkpoints.treeSize, after)))
      .orderBy(asc(checkpoints.treeSize))
      .limit(PAGE);
    position = 0;
    exhausted = page.length < PAGE;
    if (page.length > 0) after = page[page.length - 1]!.treeSize;
  };
  const current = async (): Promise<StoredCheckpoint | undefined> => {
    if (position < page.length) return page[position];
    if (exhausted) return undefined;
    await load();
    return page[position];
  };
  const report = (checkpoint: StoredCheckpoint, root: Uint8Array | null) => {
    checked++;
    for (const failure of checkStoredCheckpoint(checkpoint, root, options.keys)) options.fail(failure);
  };

  await load();
  let next = (await current())?.treeSize ?? Number.POSITIVE_INFINITY;

  return {
    get next() {
      return next;
    },
    get checked() {
      return checked;
    },
    async at(size, root) {
      for (let checkpoint = await current(); checkpoint && checkpoint.treeSize <= size; ) {
        report(checkpoint, checkpoint.treeSize === size ? root : null);
        position++;
        checkpoint = await current();
      }
      next = (await current())?.treeSize ?? Number.POSITIVE_INFINITY;
    },
    async finish() {
      for (let checkpoint = await current(); checkpoint; checkpoint = await current()) {
        report(checkpoint, null);
        position++;
      }
      next = Number.POSITIVE_INFINITY;
    },
  };
}
