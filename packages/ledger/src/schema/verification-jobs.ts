import { sql } from 'drizzle-orm';
import { check, foreignKey, index, integer, pgTable, primaryKey, text } from 'drizzle-orm/pg-core';

// Verifications asked to run in the background (docs/verification.md): operational data beside
// the ledger, not part of the audit chain. What a job produces is a verification record, which
// is in the chain; the job only says that someone asked and that it has not finished, so a
// restarted server resumes it. Append-only like every other table: a finished job is a new row.

/** One request to run the configured verifiers on an observation, with the body it came with. */
export const verificationJobs = pgTable(
  'verification_jobs',
  {
    logId: text('log_id').notNull(),
    id: text('id').notNull(),
    observationId: text('observation_id').notNull(),
    proposalId: text('proposal_id').notNull(),
    /** The identity that asked: the verification is recorded as theirs. */
    requestedBy: text('requested_by').notNull(),
    /** The re-verification body (`supersedes`, `reason`) as canonical JSON; `{}` when none. */
    body: text('body').notNull(),
    requestedAt: text('requested_at').notNull(),
    /**
     * The requester's detached author signature over the run request (`verification.run`), as
     * JSON `{keyid, sig}`, checked when it was queued and again when the record is written:
     * an author who must sign is recorded with its signature, however late the job runs.
     */
    signature: text('signature'),
  },
  (t) => [
    primaryKey({ name: 'verification_jobs_pk', columns: [t.logId, t.id] }),
    index('verification_jobs_proposal').on(t.logId, t.proposalId),
  ],
);

/** How a job ended: the verification it recorded, or the error code that stopped it. */
export const verificationJobResults = pgTable(
  'verification_job_results',
  {
    logId: text('log_id').notNull(),
    jobId: text('job_id').notNull(),
    verificationId: text('verification_id'),
    errorCode: text('error_code'),
    finishedAt: text('finished_at').notNull(),
  },
  (t) => [
    primaryKey({ name: 'verification_job_results_pk', columns: [t.logId, t.jobId] }),
    foreignKey({
      name: 'verification_job_results_job',
      columns: [t.logId, t.jobId],
      foreignColumns: [verificationJobs.logId, verificationJobs.id],
    }),
  ],
);

/**
 * Who may run a job, and until when: one row per term. A process runs a job only while it
 * holds the latest term and that term's lease has not run out; it renews by adding the next
 * term, and a stop releases the job by adding a term that has already run out. The primary
 * key is the claim: of two processes adding term n, one wins, so servers that start together
 * (or `vouch serve --workers N`) never run one job twice.
 */
export const verificationJobLeases = pgTable(
  'verification_job_leases',
  {
    logId: text('log_id').notNull(),
    jobId: text('job_id').notNull(),
    term: integer('term').notNull(),
    /** The process holding the term (host, pid and a random part). */
    holder: text('holder').notNull(),
    leaseUntil: text('lease_until').notNull(),
  },
  (t) => [
    primaryKey({ name: 'verification_job_leases_pk', columns: [t.logId, t.jobId, t.term] }),
    foreignKey({
      name: 'verification_job_leases_job',
      columns: [t.logId, t.jobId],
      foreignColumns: [verificationJobs.logId, verificationJobs.id],
    }),
    check('verification_job_leases_term_positive', sql`${t.term} >= 1`),
  ],
);
