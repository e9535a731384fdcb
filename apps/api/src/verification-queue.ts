import { randomUUID } from 'node:crypto';
import {
  isLedgerError,
  type ObservationRecord,
  type ProposalRecord,
  type Records,
  type VerificationJob,
  type VerificationJobStore,
} from '@vouch/ledger';
import type { Logger } from './logger';
import { runPhase, type VerificationHost } from './verification';

/** Runs verifications in the background, durably: a job is written before it runs and resumed after a restart. */
export interface VerificationQueue {
  /** Write the job, then start it in this process. Resolves once the job is durable. */
  enqueue(request: {
    log: string;
    observation: ObservationRecord;
    proposal: ProposalRecord;
    requestedBy: string;
    body: Record<string, unknown>;
  }): Promise<VerificationJob>;
  /** The jobs of a proposal that have not finished: the story shows `verifying` while there are any. */
  pendingOf(log: string, proposalId: string): Promise<VerificationJob[]>;
  /** Start every job that has no result (call once when the server starts). */
  resume(): Promise<number>;
  /** Resolves when every job this process started has settled (tests, shutdown). */
  idle(): Promise<void>;
  /**
   * Stop: running measurements are cancelled and their jobs stay pending, to be resumed by the
   * next start. Nothing is recorded for a cancelled job: an interrupted series proved nothing.
   */
  close(): Promise<void>;
}

/** What the queue needs: the records service, the verifiers, and where jobs are kept. */
export interface VerificationQueueOptions {
  records: Records;
  host: VerificationHost;
  store: VerificationJobStore;
  logger: Logger;
  now?: () => Date;
}

/**
 * The verification queue. A job runs the configured verifiers on one observation (with their
 * measurement policies: this is why it runs in the background) and records the outcome as a
 * verification of the identity that asked, exactly as `POST /v1/observations/{id}/verify`
 * would have done synchronously.
 */
export function createVerificationQueue(options: VerificationQueueOptions): VerificationQueue {
  const { records, host, store, logger } = options;
  const now = options.now ?? (() => new Date());
  const controller = new AbortController();
  const running = new Map<string, Promise<void>>();

  const run = async (job: VerificationJob): Promise<void> => {
    try {
      const [observation, proposal] = await Promise.all([
        records.getObservation(job.log, job.observationId),
        records.getProposal(job.log, job.proposalId),
      ]);
      const tool = (await records.listTools(job.log)).find(
        (t) => t.server_id === proposal.server_id && t.tool_name === proposal.tool_name,
      );
      const outcome = await runPhase(host, {
        phase: 'post',
        proposal,
        observation,
        writes: tool?.writes ?? [],
        signal: controller.signal,
      });
      // Shutting down: leave the job pending; the next start reads the sources again.
      if (controller.signal.aborted) return;
      const recorded = await records.recordVerification(
        { log: job.log, caller: { identity: job.requestedBy, scopes: [], environments: null } },
        { ...job.body, observation_id: observation.id, checks: outcome.checks },
        { checksRunByServer: true },
      );
      await store.finish(job.log, job.id, {
        verificationId: recorded.verification.id,
        errorCode: null,
        finishedAt: now().toISOString(),
      });
    } catch (error) {
      if (controller.signal.aborted) return;
      const code = isLedgerError(error) ? error.code : 'VERIFICATION_JOB_FAILED';
      logger.warn('verification job failed', { job: job.id, log: job.log, code });
      // A refusal (e.g. a supersession the ledger does not allow) will not change on a retry.
      if (isLedgerError(error)) {
        await store.finish(job.log, job.id, {
          verificationId: null,
          errorCode: code,
          finishedAt: now().toISOString(),
        });
      }
    }
  };

  const start = (job: VerificationJob) => {
    const key = `${job.log}\u0000${job.id}`;
    if (running.has(key) || controller.signal.aborted) return;
    const task = run(job).finally(() => running.delete(key));
    running.set(key, task);
  };

  return {
    async enqueue(request) {
      const job: VerificationJob = {
        log: request.log,
        id: `vjob_${randomUUID().replaceAll('-', '')}`,
        observationId: request.observation.id,
        proposalId: request.proposal.id,
        requestedBy: request.requestedBy,
        body: request.body,
        requestedAt: now().toISOString(),
      };
      await store.enqueue(job);
      start(job);
      return job;
    },
    pendingOf: (log, proposalId) => store.pendingOf(log, proposalId),
    async resume() {
      const pending = await store.pending();
      for (const job of pending) start(job);
      return pending.length;
    },
    async idle() {
      while (running.size > 0) await Promise.allSettled([...running.values()]);
    },
    async close() {
      controller.abort();
      await Promise.allSettled([...running.values()]);
    },
  };
}
