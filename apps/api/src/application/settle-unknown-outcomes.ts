import { sameIdentity } from '@vouch/audit';
import type { Caller, ObservationRecord, VerificationJob, VerificationJobStore } from '@vouch/ledger';
import { SETTLE_VERIFIER_IDENTITY } from '@vouch/records';
import { type Logger, summarizeError } from '../logger';
import type { VerificationQueue } from '../verification-queue';

// An `unknown` outcome (a timeout: the tool may still act) holds every verification at
// inconclusive until it settles (docs/verification.md). Once it has, the server verifies it
// by itself, as a durable job of the verification queue, so the outcome settles without
// anyone asking. What is due is derived from the records each time (an unknown observation,
// settled, that no verification counts for), and the job's id is the observation's, so
// restarts and several processes queue it once and the queue's lease runs it once.

/** Who the server records a settle verification as: its own identity, which holds no key. */
export const SETTLE_VERIFIER_CALLER: Caller = {
  identity: SETTLE_VERIFIER_IDENTITY,
  scopes: [],
  environments: null,
};

/** The settle job of one observation: its id is derived from the observation's, so it is written once. */
export function settlementJob(
  due: { log: string; observationId: string; proposalId: string },
  requestedAt: string,
): VerificationJob {
  return {
    log: due.log,
    id: `vjob_settle_${due.observationId}`,
    observationId: due.observationId,
    proposalId: due.proposalId,
    requestedBy: SETTLE_VERIFIER_IDENTITY,
    body: {},
    requestedAt,
  };
}

/** Is this job one the settle sweep queues (by the settle verifier)? */
export function isSettlementJob(job: Pick<VerificationJob, 'requestedBy'>): boolean {
  return sameIdentity(job.requestedBy, SETTLE_VERIFIER_IDENTITY);
}

/**
 * May a settle job of this observation run now? The job's row proves nothing (the runtime role
 * can insert one), so this is judged from the observation, read checked: `not_unknown`, never
 * (nothing to settle); `not_yet`, once it has settled (the held time, `settlesAt` in the
 * ledger); `due`, now.
 */
export function settlementDue(
  observation: Pick<ObservationRecord, 'outcome' | 'observed_at'>,
  settleSeconds: number,
  now: Date,
): 'due' | 'not_yet' | 'not_unknown' {
  if (observation.outcome !== 'unknown') return 'not_unknown';
  const settles = Date.parse(observation.observed_at) + settleSeconds * 1000;
  return now.getTime() >= settles ? 'due' : 'not_yet';
}

/** How many observations one pass queues at most; the next pass takes the rest. */
const SETTLE_BATCH = 100;

/**
 * One pass: queue a settle job for every unknown observation that settled by `now` with no
 * verification counted since and no settle job yet, then have the queue claim and start them.
 * Returns how many jobs this pass wrote (another process may have written the others).
 */
export async function queueSettlements(options: {
  store: Pick<VerificationJobStore, 'settledUnknowns' | 'enqueue'>;
  queue: Pick<VerificationQueue, 'resume'>;
  settleSeconds: number;
  now: Date;
}): Promise<number> {
  const { store, now } = options;
  const due = await store.settledUnknowns({
    observedBy: new Date(now.getTime() - options.settleSeconds * 1000).toISOString(),
    requestedBy: SETTLE_VERIFIER_IDENTITY,
    limit: SETTLE_BATCH,
  });
  let queued = 0;
  for (const observation of due) {
    if (await store.enqueue(settlementJob(observation, now.toISOString()))) queued++;
  }
  if (due.length > 0) await options.queue.resume();
  return queued;
}

/** A running settle sweep; `close` waits for a pass in progress. */
export interface SettleSweeper {
  close(): Promise<void>;
}

/**
 * Run {@link queueSettlements} now (a server started after outcomes settled catches up) and
 * every `intervalMs` (0: never). Passes never overlap in one process; several processes may
 * run them at once. A failed pass is logged and tried again at the next tick.
 */
export function startSettleSweeper(options: {
  store: Pick<VerificationJobStore, 'settledUnknowns' | 'enqueue'>;
  queue: Pick<VerificationQueue, 'resume'>;
  settleSeconds: number;
  intervalMs: number;
  logger: Logger;
  now?: () => Date;
}): SettleSweeper {
  const { intervalMs, logger } = options;
  if (intervalMs <= 0) return { close: async () => {} };
  const now = options.now ?? (() => new Date());
  let running: Promise<void> | undefined;
  const sweep = () => {
    running ??= (async () => {
      try {
        const queued = await queueSettlements({ ...options, now: now() });
        if (queued > 0) logger.info('settled unknown outcomes queued for verification', { jobs: queued });
      } catch (error) {
        logger.warn('settle sweep failed', { error: summarizeError(error) });
      } finally {
        running = undefined;
      }
    })();
  };
  sweep();
  const timer = setInterval(sweep, intervalMs);
  timer.unref();
  return {
    close: async () => {
      clearInterval(timer);
      await running;
    },
  };
}
