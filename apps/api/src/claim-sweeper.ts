import type { Records } from '@vouch/ledger';
import type { Logger } from './logger';
import { summarizeError } from './logger';

/** A running sweep of lapsed execution claims; `close` waits for a sweep in progress. */
export interface ClaimSweeper {
  close(): Promise<void>;
}

/**
 * Every `intervalMs`, record an `unknown` outcome for each execution claim past its deadline
 * with no observation (`Records.sweepLapsedClaims`). Sweeps never overlap in one process;
 * several processes may sweep at once (each claim is re-read under its log's lock, so one
 * outcome is recorded). A failed sweep is logged and tried again at the next tick.
 */
export function startClaimSweeper(options: {
  records: Pick<Records, 'sweepLapsedClaims'>;
  intervalMs: number;
  logger: Logger;
}): ClaimSweeper {
  const { records, intervalMs, logger } = options;
  if (intervalMs <= 0) return { close: async () => {} };
  let running: Promise<void> | undefined;
  const sweep = () => {
    running ??= (async () => {
      try {
        const swept = await records.sweepLapsedClaims();
        if (swept.length > 0) {
          logger.info('lapsed execution claims recorded as unknown', {
            count: swept.length,
            proposals: swept.map((o) => o.proposal_id).join(','),
          });
        }
      } catch (error) {
        logger.warn('claim sweep failed', { error: summarizeError(error) });
      } finally {
        running = undefined;
      }
    })();
  };
  const timer = setInterval(sweep, intervalMs);
  timer.unref();
  return {
    close: async () => {
      clearInterval(timer);
      await running;
    },
  };
}
