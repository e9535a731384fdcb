import { constraintTableOf, sqlStateOf } from './database';
import { LedgerError } from './errors';
import type { IntegrityAlarm } from './integrity-alarm';

/** A database failure of an append, in ledger terms: a conflict with the chain, or the database unavailable. */
export function toStorageError(cause: unknown, log: string): unknown {
  if (cause instanceof LedgerError) return cause;
  const code = sqlStateOf(cause);
  // 23505 unique / 23503 foreign key on the chain: another writer broke the rules we rely on.
  if (code === '23505' || code === '23503') {
    return new LedgerError(
      'CHAIN_CONFLICT',
      `append to log ${log} conflicted with the chain; nothing was written`,
      {
        cause,
      },
    );
  }
  return new LedgerError('DATABASE_UNAVAILABLE', `append to log ${log} failed; nothing was written`, {
    cause,
  });
}

/** The tables whose rows make up the chain and its tree: a conflict there is damage, not a race. */
const CHAIN_TABLES = new Set(['audit_events', 'merkle_nodes']);

/**
 * A `CHAIN_CONFLICT` means the chain or tree in the database disagrees with itself (the
 * Merkle hook found it, or the database refused a row of the chain): with every append
 * under the log's lock, no honest writer gets there. The alarm turns a string of refused
 * appends into something an operator sees. A refusal by a record table is the caller's.
 */
export function raiseOnChainConflict(alarm: IntegrityAlarm, error: unknown, log: string): void {
  if (!(error instanceof LedgerError) || error.code !== 'CHAIN_CONFLICT') return;
  const table = constraintTableOf(error);
  if (table !== undefined && !CHAIN_TABLES.has(table)) return;
  const seq = error.details?.seq;
  alarm.raise({
    code: 'CHAIN_CONFLICT',
    log,
    ...(typeof seq === 'number' ? { seq } : {}),
    ...(table === undefined ? {} : { table }),
    message: error.message,
  });
}
