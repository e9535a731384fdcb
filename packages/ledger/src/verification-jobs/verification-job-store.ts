import { sql } from 'drizzle-orm';
import type { Database } from '../database';

// The verification queue's tables (schema/verification-jobs.ts). Everything here is an INSERT
// or a SELECT: a finished job is a result row, never an update of the job.

/** A verification someone asked to run in the background. */
export interface VerificationJob {
  log: string;
  id: string;
  observationId: string;
  proposalId: string;
  /** The identity that asked; the verification is recorded as theirs. */
  requestedBy: string;
  /** The re-verification body (`supersedes`, `reason`), or `{}`. */
  body: Record<string, unknown>;
  requestedAt: string;
  /** The requester's detached signature over the run request, when it signed. */
  signature?: { keyid: string; sig: string };
}

/** How a job ended. */
export interface VerificationJobResult {
  verificationId: string | null;
  /** The error code that stopped it, when no verification was recorded. */
  errorCode: string | null;
  finishedAt: string;
}

/** A claim on a job: who holds it and until when (see {@link VerificationJobStore.claim}). */
export interface VerificationJobLease {
  /** The process asking: host, pid and a random part. */
  holder: string;
  now: string;
  /** When the claim runs out unless renewed; `now` (or earlier) releases the job. */
  until: string;
  /**
   * The furthest end of a lease any queue writes. A latest term ending after it is one no
   * queue wrote (a row inserted to hold the job for good): the job is claimed as if nobody
   * held it. Default: no bound.
   */
  longest?: string;
}

/** Reads and writes of the verification queue. */
export interface VerificationJobStore {
  /** Write the job; false when the log already has a job with its id (it is left as it is). */
  enqueue(job: VerificationJob): Promise<boolean>;
  /**
   * Take the next term of a job's lease. Succeeds when nobody holds it (no term yet, or the
   * latest term ran out by `now`) or `holder` holds it already (a renewal, or a release when
   * `until` is `now`); of two processes racing for one term, one wins. False: another
   * process holds the job, or it has a result.
   */
  claim(log: string, jobId: string, lease: VerificationJobLease): Promise<boolean>;
  finish(log: string, jobId: string, result: VerificationJobResult): Promise<void>;
  /** Every job without a result, oldest first: what a starting server resumes. */
  pending(): Promise<VerificationJob[]>;
  /** The jobs of one proposal without a result: the story shows it `verifying` meanwhile. */
  pendingOf(log: string, proposalId: string): Promise<VerificationJob[]>;
  /**
   * Observations with outcome `unknown` observed at or before `observedBy` (settled, for the
   * caller's settle time) that no verification counts for yet (every one recorded is held, or
   * there is none) and that have no job of `requestedBy`, in every log, oldest first, at most
   * `limit`: what the settle sweep queues. Reads the record tables unchecked, so it only
   * narrows the search: the job reads its observation checked before it runs.
   */
  settledUnknowns(options: {
    observedBy: string;
    requestedBy: string;
    limit: number;
  }): Promise<Array<{ log: string; observationId: string; proposalId: string }>>;
}

interface JobRow {
  log_id: string;
  id: string;
  observation_id: string;
  proposal_id: string;
  requested_by: string;
  body: string;
  requested_at: string;
  signature: string | null;
}

const toJob = (r: JobRow): VerificationJob => ({
  log: r.log_id,
  id: r.id,
  observationId: r.observation_id,
  proposalId: r.proposal_id,
  requestedBy: r.requested_by,
  body: JSON.parse(r.body) as Record<string, unknown>,
  requestedAt: r.requested_at,
  ...(r.signature === null ? {} : { signature: JSON.parse(r.signature) as { keyid: string; sig: string } }),
});

/**
 * The verification queue over `database`.
 *
 * @example
 * const store = createVerificationJobStore(ledger.database);
 * for (const job of await store.pending()) await run(job);
 */
export function createVerificationJobStore(database: Database): VerificationJobStore {
  return {
    async enqueue(job) {
      // A job id chosen by its subject (one settle job per observation) is written once,
      // whatever the number of processes writing it: the primary key decides.
      const written = await database.rows<{ id: string }>(
        sql`insert into verification_jobs (log_id, id, observation_id, proposal_id, requested_by, body, requested_at, signature)
            values (${job.log}, ${job.id}, ${job.observationId}, ${job.proposalId}, ${job.requestedBy},
                    ${JSON.stringify(job.body)}, ${job.requestedAt},
                    ${job.signature === undefined ? null : JSON.stringify(job.signature)})
            on conflict (log_id, id) do nothing returning id`,
      );
      return written.length === 1;
    },
    async claim(log, jobId, lease) {
      const [latest] = await database.rows<{
        term: number;
        holder: string;
        lease_until: string;
        done: boolean;
      }>(
        sql`select l.term, l.holder, l.lease_until,
                   exists(select 1 from verification_job_results r where r.log_id = ${log} and r.job_id = ${jobId}) as done
            from verification_job_leases l
            where l.log_id = ${log} and l.job_id = ${jobId}
            order by l.term desc limit 1`,
      );
      if (latest?.done) return false;
      const held =
        latest !== undefined &&
        latest.holder !== lease.holder &&
        latest.lease_until > lease.now &&
        (lease.longest === undefined || latest.lease_until <= lease.longest);
      if (held) return false;
      // The primary key is the claim: of two processes adding term n, one wins.
      const won = await database.rows<{ term: number }>(
        sql`insert into verification_job_leases (log_id, job_id, term, holder, lease_until)
            values (${log}, ${jobId}, ${(latest?.term ?? 0) + 1}, ${lease.holder}, ${lease.until})
            on conflict do nothing returning term`,
      );
      return won.length === 1;
    },
    async finish(log, jobId, result) {
      // A job resumed by two processes finishes once; the second result is dropped.
      await database.rows(
        sql`insert into verification_job_results (log_id, job_id, verification_id, error_code, finished_at)
            values (${log}, ${jobId}, ${result.verificationId}, ${result.errorCode}, ${result.finishedAt})
            on conflict (log_id, job_id) do nothing`,
      );
    },
    async pending() {
      const rows = await database.rows<JobRow>(
        sql`select j.log_id, j.id, j.observation_id, j.proposal_id, j.requested_by, j.body, j.requested_at, j.signature
            from verification_jobs j
            where not exists (select 1 from verification_job_results r where r.log_id = j.log_id and r.job_id = j.id)
            order by j.requested_at, j.id`,
      );
      return rows.map(toJob);
    },
    async pendingOf(log, proposalId) {
      const rows = await database.rows<JobRow>(
        sql`select j.log_id, j.id, j.observation_id, j.proposal_id, j.requested_by, j.body, j.requested_at, j.signature
            from verification_jobs j
            where j.log_id = ${log} and j.proposal_id = ${proposalId}
              and not exists (select 1 from verification_job_results r where r.log_id = j.log_id and r.job_id = j.id)
            order by j.requested_at, j.id`,
      );
      return rows.map(toJob);
    },
    async settledUnknowns({ observedBy, requestedBy, limit }) {
      // ISO 8601 UTC text (toISOString) orders as time does.
      const rows = await database.rows<{ log_id: string; id: string; proposal_id: string }>(
        sql`select o.log_id, o.id, o.proposal_id
            from observations o
            where o.outcome = 'unknown' and o.observed_at <= ${observedBy}
              and not exists (select 1 from verifications v
                              where v.log_id = o.log_id and v.observation_id = o.id and v.held is null)
              and not exists (select 1 from verification_jobs j
                              where j.log_id = o.log_id and j.observation_id = o.id and j.requested_by = ${requestedBy})
            order by o.observed_at, o.log_id, o.id
            limit ${limit}`,
      );
      return rows.map((r) => ({ log: r.log_id, observationId: r.id, proposalId: r.proposal_id }));
    },
  };
}
