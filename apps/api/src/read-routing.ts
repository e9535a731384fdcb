import { type Ledger, primaryWalPosition, type Records, standbyReplayedTo } from '@vouch/ledger';
import { type Logger, summarizeError } from './logger';

/** The database a read runs on, with the ledger and records service over it. */
export interface ReadSide {
  source: 'primary' | 'standby';
  ledger: Ledger;
  records: Records;
}

/** Picks where each read runs. */
export interface ReadRouter {
  /** Where the read that begins now runs: the standby when it has every acknowledged write, else the primary. */
  choose(): Promise<ReadSide>;
  /** Whether a standby is configured at all (the answer then says where it was read). */
  readonly hasStandby: boolean;
}

/** Every read on the primary (no `DATABASE_READ_URL`). */
export function primaryReads(primary: Omit<ReadSide, 'source'>): ReadRouter {
  const side: ReadSide = { source: 'primary', ...primary };
  return { hasStandby: false, choose: async () => side };
}

export interface StandbyReadsOptions {
  primary: Omit<ReadSide, 'source'>;
  standby: Omit<ReadSide, 'source'>;
  /** How long a read waits for the standby to replay the primary's position before it reads the primary. */
  maxWaitMs: number;
  /** After the standby failed to answer, how long reads go straight to the primary (default 5000). */
  retryStandbyAfterMs?: number;
  logger: Logger;
  /** Clock, for tests. */
  now?: () => number;
}

/**
 * Reads on the standby, consistent with what was acknowledged: when a read begins, the
 * primary's WAL position is taken (one trivial query on the primary), and the read runs on
 * the standby only once the standby has replayed past it, so it sees every write that was
 * acknowledged before the read began (`packages/ledger/src/standby.ts`). A standby that lags
 * for longer than `maxWaitMs`, or does not answer, sends the read to the primary; one that
 * did not answer is skipped for `retryStandbyAfterMs`, so an outage costs one wait, not one
 * per read. The primary not answering is `DATABASE_UNAVAILABLE` (503), as for any request.
 */
export function standbyReads(options: StandbyReadsOptions): ReadRouter {
  const primary: ReadSide = { source: 'primary', ...options.primary };
  const standby: ReadSide = { source: 'standby', ...options.standby };
  const now = options.now ?? (() => performance.now());
  const retryAfterMs = options.retryStandbyAfterMs ?? 5_000;
  let skipUntil = 0;

  const replayed = async (lsn: string, deadline: number): Promise<boolean> => {
    for (let pause = 1; ; pause = Math.min(pause * 2, 20)) {
      const remaining = deadline - now();
      if (remaining <= 0) return false;
      const caughtUp = await withinMs(standbyReplayedTo(standby.ledger.database, lsn), remaining);
      if (caughtUp === true) return true;
      if (caughtUp === 'late') return false;
      await sleep(Math.min(pause, Math.max(0, deadline - now())));
    }
  };

  return {
    hasStandby: true,
    async choose() {
      const lsn = await primaryWalPosition(primary.ledger.database);
      if (now() < skipUntil) return primary;
      try {
        return (await replayed(lsn, now() + options.maxWaitMs)) ? standby : primary;
      } catch (error) {
        // Whatever the standby answered to a one-line query, it cannot serve this read.
        skipUntil = now() + retryAfterMs;
        options.logger.warn('standby unavailable: reading the primary', {
          retry_after_ms: retryAfterMs,
          error: summarizeError(error),
        });
        return primary;
      }
    },
  };
}

/** The value, or `'late'` when it takes longer than `ms` (the pending query is left to its own deadline). */
async function withinMs<T>(pending: Promise<T>, ms: number): Promise<T | 'late'> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<'late'>((resolve) => {
    timer = setTimeout(() => resolve('late'), ms);
  });
  pending.catch(() => {});
  try {
    return await Promise.race([pending, late]);
  } finally {
    clearTimeout(timer);
  }
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));
