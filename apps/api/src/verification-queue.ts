import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import {
  type Caller,
  isLedgerError,
  type ObservationRecord,
  type Records,
  type VerificationJob,
  type VerificationJobStore,
} from '@vouch/ledger';
import {
  isSettlementJob,
  SETTLE_VERIFIER_CALLER,
  settlementDue,
} from './application/settle-unknown-outcomes';
import { verifyObservation } from './application/verify-observation';
import type { Logger } from './logger';
import type { Metrics } from './metrics/metrics';
import type { VerificationHost } from './verification';

/** Runs verifications in the background, durably: a job is written before it runs and resumed after a restart. */
export interface VerificationQueue {
  /** Write the job, then start it in this process. Resolves once the job is durable. */
  enqueue(request: {
    log: string;
    observation: ObservationRecord;
    requestedBy: string;
    body: Record<string, unknown>;
    /** The requester's detached signature over the run request, checked before queueing. */
    signature?: { keyid: string; sig: string };
  }): Promise<VerificationJob>;
  /** The jobs of a proposal that have not finished: the story shows `verifying` while there are any. */
  pendingOf(log: string, proposalId: string): Promise<VerificationJob[]>;
  /**
   * Claim and start every job that has no result and that no live process holds: one pass,
   * returning how many this process started. A server calls it when it starts; {@link
   * VerificationQueue.sweep} repeats it, so a job whose process died is taken over once its
   * lease runs out.
   */
  resume(): Promise<number>;
  /** Resume every `intervalMs` (default: the lease) until {@link VerificationQueue.close}. */
  sweep(intervalMs?: number): void;
  /** Resolves when every job this process started has settled (tests, shutdown). */
  idle(): Promise<void>;
  /**
   * Stop: running measurements are cancelled and their jobs stay pending, released at once for
   * the next process to resume. Nothing is recorded for a cancelled job: an interrupted series
   * proved nothing.
   */
  close(): Promise<void>;
}

/** What the queue needs: the records service, the verifiers, and where jobs are kept. */
export interface VerificationQueueOptions {
  records: Records;
  host: VerificationHost;
  store: VerificationJobStore;
  logger: Logger;
  /** Where the verifications the jobs record are counted, as the synchronous route counts them. */
  metrics?: Pick<Metrics, 'countVerification'>;
  now?: () => Date;
  /**
   * The records' `unknownOutcomeSettleSeconds` (default 900): a settle job runs only once its
   * observation has settled.
   */
  settleSeconds?: number;
  /**
   * How long a claim on a job lasts unless renewed (default 30 s). A running job renews it every
   * third of that; a process that stops releases its jobs; one that dies holds them this long.
   */
  leaseMs?: number;
}

/** How many leases ahead a claim may end before it counts as written by no queue. */
const LONGEST_LEASES = 10;

/**
 * The verification queue. A job runs the configured verifiers on one observation (with their
 * measurement policies: this is why it runs in the background) and records the outcome as a
 * verification of the identity that asked, exactly as `POST /v1/observations/{id}/verify`
 * would have done synchronously.
 */
export function createVerificationQueue(options: VerificationQueueOptions): VerificationQueue {
  const { records, store, logger } = options;
  const services = {
    records,
    host: options.host,
    ...(options.metrics ? { metrics: options.metrics } : {}),
  };
  const now = options.now ?? (() => new Date());
  const settleSeconds = options.settleSeconds ?? 900;
  const leaseMs = options.leaseMs ?? 30_000;
  const holder = `${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`;
  const controller = new AbortController();
  const running = new Map<string, Promise<void>>();
  let sweeper: NodeJS.Timeout | undefined;

  const lease = (ms: number) => {
    const at = now().getTime();
    const iso = (time: number) => new Date(time).toISOString();
    // A queue renews its claim every third of its lease: one ending ten leases ahead (five
    // minutes by default, well past clock skew between servers) was written by no queue.
    return { holder, now: iso(at), until: iso(at + ms), longest: iso(at + LONGEST_LEASES * leaseMs) };
  };

  const finish = (
    job: VerificationJob,
    result: { verificationId: string | null; errorCode: string | null },
  ) => store.finish(job.log, job.id, { ...result, finishedAt: now().toISOString() });

  /** `state.recording`: the readings are done and the result is being written; the lease no longer matters. */
  const run = async (
    job: VerificationJob,
    signal: AbortSignal,
    state: { recording: boolean },
  ): Promise<void> => {
    try {
      const observation = await records.getObservation(job.log, job.observationId);
      const writer = await writerOf(job, observation);
      if ('wait' in writer) {
        // A settle job before its observation settled: left pending for a later sweep.
        await store.claim(job.log, job.id, lease(0));
        return;
      }
      if ('refusal' in writer) {
        logger.warn('verification job refused: its requester may not record a verification', {
          job: job.id,
          log: job.log,
          code: writer.refusal,
        });
        await finish(job, { verificationId: null, errorCode: writer.refusal });
        return;
      }
      const recorded = await verifyObservation(services, {
        ctx: { log: job.log, caller: writer.caller },
        observation,
        body: writer.body,
        signal,
        beforeRecording: () => {
          // Shutting down, or the lease was lost: leave the job to whoever holds it next.
          if (signal.aborted) throw signal.reason;
          state.recording = true;
        },
      });
      await finish(job, { verificationId: recorded.verification.id, errorCode: null });
    } catch (error) {
      if (signal.aborted) return;
      const code = isLedgerError(error) ? error.code : 'VERIFICATION_JOB_FAILED';
      logger.warn('verification job failed', { job: job.id, log: job.log, code });
      // A refusal (e.g. a supersession the ledger does not allow) will not change on a retry.
      if (isLedgerError(error)) await finish(job, { verificationId: null, errorCode: code });
    }
  };

  /**
   * Who records a job's verification, judged from the records, never from the job's row: the
   * runtime role can insert a row in any name. A settle job is the server's own (see
   * `settle-unknown-outcomes.ts`); any other is recorded only if its requester may record a
   * verification now, by the system log's key events (as `verifyChain` will judge the record).
   */
  const writerOf = async (
    job: VerificationJob,
    observation: ObservationRecord,
  ): Promise<{ caller: Caller; body: Record<string, unknown> } | { refusal: string } | { wait: true }> => {
    if (isSettlementJob(job)) {
      const due = settlementDue(observation, settleSeconds, now());
      if (due === 'not_unknown') return { refusal: 'SETTLEMENT_NOT_UNKNOWN' };
      if (due === 'not_yet') return { wait: true };
      return { caller: SETTLE_VERIFIER_CALLER, body: {} };
    }
    const writer = await records.verificationWriter(job.log, job.requestedBy);
    if (writer.refusal) return { refusal: writer.refusal.rule };
    const caller: Caller = {
      identity: job.requestedBy,
      scopes: [],
      environments: null,
      // Its key was issued by a server whose clock runs ahead of this one's: recorded no earlier.
      ...(writer.keyIssuedAt === undefined ? {} : { keyIssuedAt: writer.keyIssuedAt }),
      // The signature it sent when it asked: the record is judged by it as if written then.
      ...(job.signature ? { signature: job.signature } : {}),
    };
    return { caller, body: job.body };
  };

  /** Run a job this process has just claimed, renewing the claim while it runs. */
  const start = (job: VerificationJob) => {
    const key = `${job.log}\u0000${job.id}`;
    const lost = new AbortController();
    const signal = AbortSignal.any([controller.signal, lost.signal]);
    const state = { recording: false };
    const renew = setInterval(
      () => {
        store.claim(job.log, job.id, lease(leaseMs)).then(
          (held) => {
            // A job whose result is being written cannot be claimed any more: not a lost lease.
            if (held || state.recording) return;
            logger.warn('verification job lease lost', { job: job.id, log: job.log });
            lost.abort();
          },
          () => {}, // The database is away: the next renewal tries again; the lease runs on meanwhile.
        );
      },
      Math.max(1, Math.floor(leaseMs / 3)),
    );
    renew.unref();
    const task = run(job, signal, state).finally(async () => {
      clearInterval(renew);
      running.delete(key);
      // Stopped before a result: hand the job over now rather than when the lease runs out.
      if (controller.signal.aborted) await store.claim(job.log, job.id, lease(0)).catch(() => false);
    });
    running.set(key, task);
  };

  const claimAndStart = async (job: VerificationJob): Promise<boolean> => {
    const key = `${job.log}\u0000${job.id}`;
    if (running.has(key) || controller.signal.aborted) return false;
    if (!(await store.claim(job.log, job.id, lease(leaseMs)))) return false;
    if (running.has(key) || controller.signal.aborted) return false;
    start(job);
    return true;
  };

  const resume = async () => {
    let started = 0;
    for (const job of await store.pending()) {
      try {
        if (await claimAndStart(job)) started++;
      } catch (error) {
        // One job that cannot be claimed (its lease rows are not a queue's) holds up no other.
        logger.warn('verification job could not be claimed', { job: job.id, log: job.log, error });
      }
    }
    return started;
  };

  return {
    async enqueue(request) {
      const job: VerificationJob = {
        log: request.log,
        id: `vjob_${randomUUID().replaceAll('-', '')}`,
        observationId: request.observation.id,
        proposalId: request.observation.proposal_id,
        requestedBy: request.requestedBy,
        body: request.body,
        requestedAt: now().toISOString(),
        ...(request.signature ? { signature: request.signature } : {}),
      };
      await store.enqueue(job);
      await claimAndStart(job);
      return job;
    },
    pendingOf: (log, proposalId) => store.pendingOf(log, proposalId),
    resume,
    sweep(intervalMs = leaseMs) {
      if (sweeper || controller.signal.aborted) return;
      sweeper = setInterval(() => {
        resume().catch((error: unknown) => logger.warn('verification sweep failed', { error }));
      }, intervalMs);
      sweeper.unref();
    },
    async idle() {
      while (running.size > 0) await Promise.allSettled([...running.values()]);
    },
    async close() {
      clearInterval(sweeper);
      controller.abort();
      await Promise.allSettled([...running.values()]);
    },
  };
}
