import { type NoteSigner, signCheckpoint } from '@vouch/audit';
import { sql } from 'drizzle-orm';
import type { Database, Db } from '../database';
import { readHead } from '../event-store';
import { merkleRoot } from '../merkle/merkle-proofs';
import { type StoredCheckpoint, storeCheckpoint } from './checkpoint-store';
import { verifierKeysOf } from './log-signing-key';
import { checkTreeToSign, refusalToSign } from './verified-tree';

/** How a log's checkpoints are signed. */
export interface CheckpointSigning {
  /** The checkpoint origin of a log (see {@link logOrigin}). */
  origin: (log: string) => string;
  /**
   * The keys that sign a log's checkpoints, all of them each time (more than one while a key
   * is rotated out): one list for every log, or per log (each log its own key, named after
   * its origin).
   */
  signers: readonly NoteSigner[] | ((log: string) => readonly NoteSigner[]);
  /**
   * Verifier keys, besides the signers', under which a log's earlier checkpoints were signed
   * and are still trusted (a key rotated out, the shared key of an older version): the check
   * before signing starts from the latest checkpoint that opens under any of them.
   */
  earlierKeys?: (log: string) => readonly string[];
}

/** The signers of `log`'s checkpoints. */
export function signersOf(signing: Pick<CheckpointSigning, 'signers'>, log: string): readonly NoteSigner[] {
  return typeof signing.signers === 'function' ? signing.signers(log) : signing.signers;
}

/** Every verifier key a log's own checkpoints may carry: its signers', then the earlier ones. */
export function trustedKeysOf(
  signing: Pick<CheckpointSigning, 'signers' | 'earlierKeys'>,
  log: string,
): string[] {
  const keys = verifierKeysOf(signersOf(signing, log));
  for (const key of signing.earlierKeys?.(log) ?? []) if (!keys.includes(key)) keys.push(key);
  return keys;
}

/**
 * The checkpoint origin of `log` under an operator's origin prefix (`VOUCH_LOG_ORIGIN`):
 * `<prefix>/<log>`. One origin per log, because a checkpoint states the size and root of
 * exactly one tree, and an auditor must never mistake one tenant's tree for another's.
 */
export function logOrigin(prefix: string, log: string): string {
  return `${prefix.replace(/\/+$/, '')}/${log}`;
}

/**
 * Sign the current head of `log` and keep the checkpoint. The size and root are read under
 * the log's append lock (the same advisory lock appends take), so a batch that is still
 * committing is waited for, never half seen; signing and storing happen after the lock is
 * released, outside any append transaction. Returns the stored checkpoint (another
 * instance's, when it signed the same size first).
 *
 * @example
 * const checkpoint = await signLogCheckpoint(database, { log: 'default', origin: (l) => logOrigin('vouch.example', l), signers });
 */
export async function signLogCheckpoint(
  database: Database,
  request: CheckpointSigning & {
    log: string;
    now?: () => Date;
    /**
     * Runs with the size and root about to be signed, after the lock is released and before
     * anything is signed: throw to sign nothing. Default: the tree is checked against the
     * events from this server's latest checkpoint (`checkTreeToSign`), and a mismatch is
     * `LedgerError` `INTEGRITY_ALARM`; the checkpointer passes its own, which remembers
     * where it verified up to and raises the alarm.
     */
    guard?: (head: { log: string; treeSize: number; rootHash: Uint8Array }) => Promise<void>;
  },
): Promise<StoredCheckpoint> {
  const { log } = request;
  const { treeSize, rootHash } = await database.db.transaction(async (tx) => {
    const db = tx as unknown as Db;
    await database.rows(sql`select pg_advisory_xact_lock(hashtextextended(${log}, 0))`, db);
    const size = (await readHead(database, log, db))?.seq ?? 0;
    return { treeSize: size, rootHash: await merkleRoot(database, { log, treeSize: size }, db) };
  });
  const guard =
    request.guard ??
    (async (head: { log: string; treeSize: number; rootHash: Uint8Array }) => {
      const trust = { verifiers: trustedKeysOf(request, log), origin: request.origin(log) };
      const checked = await checkTreeToSign(database, head, trust);
      if (!checked.ok) throw refusalToSign(checked.finding);
    });
  await guard({ log, treeSize, rootHash });
  const note = signCheckpoint({ origin: request.origin(log), treeSize, rootHash }, signersOf(request, log));
  return storeCheckpoint(database, {
    log,
    treeSize,
    rootHash: Buffer.from(rootHash).toString('hex'),
    note,
    createdAt: (request.now?.() ?? new Date()).toISOString(),
  });
}
