import { sql } from 'drizzle-orm';
import { bigint, check, foreignKey, index, integer, pgTable, primaryKey, text } from 'drizzle-orm/pg-core';

// Outbound webhooks: operational data beside the ledger, not part of the audit chain. No
// event names these rows and no verification reads them; they are append-only all the same
// (a state change is a new row), so the runtime role needs nothing beyond SELECT and INSERT
// and a compromised server cannot rewrite what was sent. Whoever holds that role can still
// insert, so the dispatcher re-checks every row before it acts on it (docs/webhooks.md, "What
// the dispatcher trusts"). Times are ISO-8601 UTC text (`toISOString()`), which orders as text.

/**
 * How far the dispatcher has read each log: the cursor is the highest `seq` not beyond the
 * log's head (one beyond it was written by no dispatcher and is ignored). A row with the
 * empty log id marks that the dispatcher ran once: logs that exist before it are read from
 * their head at that time (history is not replayed), logs created after it from their start.
 */
export const webhookCursors = pgTable(
  'webhook_cursors',
  {
    logId: text('log_id').notNull(),
    seq: bigint('seq', { mode: 'number' }).notNull(),
    readAt: text('read_at').notNull(),
  },
  (t) => [primaryKey({ name: 'webhook_cursors_pk', columns: [t.logId, t.seq] })],
);

/**
 * One notification to one target. The id is derived from the target and the source (log,
 * seq, event), so every process that derives it writes the same row once. `body` is the
 * exact JSON sent on every attempt; it is signed anew per attempt, never stored signed.
 */
export const webhookDeliveries = pgTable(
  'webhook_deliveries',
  {
    id: text('id').primaryKey(),
    target: text('target').notNull(),
    event: text('event').notNull(),
    logId: text('log_id').notNull(),
    /** The ledger event it was derived from; NULL for an integrity alarm. */
    seq: bigint('seq', { mode: 'number' }),
    /** The record the notification is about (an approval request id, a verification id, …). */
    subject: text('subject').notNull(),
    body: text('body').notNull(),
    createdAt: text('created_at').notNull(),
    /** Not sent before this time (an expiring-approval reminder waits for its lead time). */
    dueAt: text('due_at').notNull(),
  },
  (t) => [index('webhook_deliveries_due').on(t.dueAt)],
);

/**
 * An attempt, claimed before it is made: the primary key lets exactly one process insert
 * attempt n of a delivery, and that process alone sends it. A claim with no result after
 * `lease_until` (its process died mid-send) lets the next attempt be claimed: at least once.
 */
export const webhookAttempts = pgTable(
  'webhook_attempts',
  {
    deliveryId: text('delivery_id').notNull(),
    attempt: integer('attempt').notNull(),
    claimedAt: text('claimed_at').notNull(),
    leaseUntil: text('lease_until').notNull(),
  },
  (t) => [
    primaryKey({ name: 'webhook_attempts_pk', columns: [t.deliveryId, t.attempt] }),
    foreignKey({
      name: 'webhook_attempts_delivery',
      columns: [t.deliveryId],
      foreignColumns: [webhookDeliveries.id],
    }),
    check('webhook_attempts_positive', sql`${t.attempt} >= 1`),
  ],
);

/** What one attempt got: never the secret, the signature or the response body. */
export const webhookAttemptResults = pgTable(
  'webhook_attempt_results',
  {
    deliveryId: text('delivery_id').notNull(),
    attempt: integer('attempt').notNull(),
    finishedAt: text('finished_at').notNull(),
    /** `delivered`, `retry` (again at `next_attempt_at`), `failed` (given up) or `cancelled` (moot). */
    outcome: text('outcome').notNull(),
    statusCode: integer('status_code'),
    errorCode: text('error_code'),
    durationMs: integer('duration_ms').notNull(),
    nextAttemptAt: text('next_attempt_at'),
  },
  (t) => [
    primaryKey({ name: 'webhook_attempt_results_pk', columns: [t.deliveryId, t.attempt] }),
    foreignKey({
      name: 'webhook_attempt_results_attempt',
      columns: [t.deliveryId, t.attempt],
      foreignColumns: [webhookAttempts.deliveryId, webhookAttempts.attempt],
    }),
    check(
      'webhook_attempt_results_outcome',
      sql`${t.outcome} in ('delivered', 'retry', 'failed', 'cancelled') and (${t.outcome} = 'retry') = (${t.nextAttemptAt} is not null)`,
    ),
  ],
);
