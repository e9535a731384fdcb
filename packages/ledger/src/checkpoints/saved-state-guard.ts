import type { Database } from '../database';
import { isLedgerError } from '../errors';
import { readHead } from '../event-store';
import type { CheckpointState, SavedCheckpoint } from './checkpoint-state';
import type { StoredCheckpoint } from './checkpoint-store';
import { cosignaturesAt } from './cosignature-store';
import { type SignedPoint, savedPoint, verifySignedPoint } from './signed-point';
import type { TreeFinding } from './verified-tree';

/** A saved checkpoint checked against the database: the point to resume from, or what disagrees. */
export type SavedCheck = { ok: true; point: SignedPoint | undefined } | { ok: false; finding: TreeFinding };

/**
 * The checkpointer's side of the state kept outside the database (`CheckpointState`): compare
 * the database with the last checkpoint signed before anything is signed, and keep each new
 * checkpoint there once its row is stored.
 */
export interface SavedStateGuard {
  /** Check `log`'s saved checkpoint against the database whose head is `headSize`. */
  check(log: string, headSize: number): Promise<SavedCheck>;
  /** Check every saved log against the database (at start-up); the findings, if any. */
  checkAll(): Promise<TreeFinding[]>;
  /** Keep a checkpoint whose row is stored, unless a larger one is kept already. */
  save(checkpoint: StoredCheckpoint): Promise<void>;
  /** Witnesses cosigned `log`'s checkpoint at `treeSize`: keep their lines beside it when it is the saved one. */
  cosigned(log: string, treeSize: number): Promise<void>;
}

/** A saved checkpoint beside the database it was compared with (`vouch restore check`). */
export interface SavedComparison {
  log: string;
  /** The database's head seq for the log (0: no events). */
  head: number;
  saved: SavedCheckpoint;
  /** What disagrees (`ROLLBACK_DETECTED`), or null when the database reaches and agrees with it. */
  finding: TreeFinding | null;
}

/** Compare one saved checkpoint with the database: O(log n) rows. */
export async function compareWithSaved(database: Database, saved: SavedCheckpoint): Promise<SavedComparison> {
  const head = (await readHead(database, saved.log))?.seq ?? 0;
  const checked = await verifySignedPoint(database, saved.log, savedPoint(saved), head);
  return { log: saved.log, head, saved, finding: checked.ok ? null : checked.finding };
}

export function createSavedStateGuard(database: Database, state: CheckpointState): SavedStateGuard {
  /** Per log, the saved size and root last found to agree with the database (or written here). */
  const agreed = new Map<string, string>();
  const keyOf = (point: { treeSize: number; rootHash: string }) => `${point.treeSize}:${point.rootHash}`;

  const check = async (log: string, headSize: number): Promise<SavedCheck> => {
    let saved: Awaited<ReturnType<CheckpointState['read']>>;
    try {
      saved = await state.read(log);
    } catch (error) {
      if (!isLedgerError(error)) throw error;
      const finding = { ...(error.details as Omit<TreeFinding, 'message'>), message: error.message };
      return { ok: false, finding };
    }
    if (saved === null) return { ok: true, point: undefined };
    const point = savedPoint(saved);
    if (agreed.get(log) === keyOf(saved)) return { ok: true, point };
    const checked = await verifySignedPoint(database, log, point, headSize);
    if (!checked.ok) return checked;
    agreed.set(log, keyOf(saved));
    return { ok: true, point };
  };

  return {
    check,
    async checkAll() {
      const findings: TreeFinding[] = [];
      for (const log of await state.logs()) {
        const head = (await readHead(database, log))?.seq ?? 0;
        const checked = await check(log, head);
        if (!checked.ok) findings.push(checked.finding);
      }
      return findings;
    },
    async save(checkpoint) {
      const saved = await state.read(checkpoint.log).catch(() => null);
      if (saved !== null && saved.treeSize >= checkpoint.treeSize) return;
      const cosignatures = await cosignaturesAt(database, checkpoint.log, checkpoint.treeSize);
      await state.write({ log: checkpoint.log, note: checkpoint.note, cosignatures });
      agreed.set(checkpoint.log, keyOf(checkpoint));
    },
    async cosigned(log, treeSize) {
      const saved = await state.read(log).catch(() => null);
      if (saved === null || saved.treeSize !== treeSize) return;
      const cosignatures = await cosignaturesAt(database, log, treeSize);
      await state.write({ log, note: saved.note, cosignatures });
    },
  };
}
