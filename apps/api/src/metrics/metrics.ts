import type { CommittedBatch, Database } from '@vouch/ledger';
import { Counter, Gauge, Histogram, Registry } from 'prom-client';

/** How a webhook delivery ended, as the `outcome` label of `vouch_webhook_deliveries_total`. */
export type WebhookDeliveryOutcome = 'delivered' | 'failed' | 'retried' | 'dropped';

/**
 * How one question to the external policy engine ended, as the `outcome` label of
 * `vouch_policy_engine_answers_total`: the verdict recorded, `already_decided`, or the error code.
 */
export type PolicyEngineOutcome = string;

/** A verification record's status, as the `status` label of `vouch_verifications_total`. */
export type VerificationOutcome = 'passed' | 'failed' | 'inconclusive';

/**
 * The service's Prometheus metrics, and the few calls that move them. Labels are route
 * patterns, status codes, log ids and outcome names: never a raw path, a key, a key hash or
 * an identity, so nothing a caller sends can make a label (or a secret) appear.
 */
export interface Metrics {
  readonly registry: Registry;
  /** One answered HTTP request (`route` is the pattern, e.g. `/v1/proposals/:id`). */
  observeRequest(request: { method: string; route: string; status: number; seconds: number }): void;
  /** A committed append batch: pass as `createLedger(database, { onBatch })`. */
  observeBatch(batch: CommittedBatch): void;
  /** A checkpoint stored for `log` covering `treeSize` events (`createdAt`: ISO 8601). */
  observeCheckpoint(checkpoint: { log: string; treeSize: number; createdAt: string }): void;
  /** One verification record written, by its status. */
  countVerification(status: VerificationOutcome): void;
  /** One webhook delivery attempt ended (for the webhook sender). */
  countWebhookDelivery(outcome: WebhookDeliveryOutcome): void;
  /** One question to the external policy engine ended (`seconds`: the HTTP exchange, when there was one). */
  countPolicyEngineAnswer(outcome: PolicyEngineOutcome, seconds?: number): void;
  /** The Prometheus text exposition of every metric. */
  scrape(): Promise<string>;
}

/** Every metric name, as documented in docs/operations.md ("Metrics"). */
export const METRIC_NAMES = [
  'vouch_http_requests_total',
  'vouch_http_request_duration_seconds',
  'vouch_append_batch_size',
  'vouch_append_batch_duration_seconds',
  'vouch_chain_head_seq',
  'vouch_checkpoint_tree_size',
  'vouch_checkpoint_age_seconds',
  'vouch_verifications_total',
  'vouch_webhook_deliveries_total',
  'vouch_policy_engine_answers_total',
  'vouch_policy_engine_duration_seconds',
  'vouch_db_pool_max',
  'vouch_db_pool_in_use',
  'vouch_db_pool_waiting',
] as const;

const SECONDS_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

/**
 * Create the metrics of one server. Each server gets its own registry (not prom-client's
 * global one), so two apps in one process (tests) never share counters.
 *
 * @example
 * const metrics = createMetrics({ database, now: () => new Date() });
 * const ledger = createLedger(database, { onBatch: metrics.observeBatch });
 * const text = await metrics.scrape();
 */
export function createMetrics(options: { database?: Database; now?: () => Date } = {}): Metrics {
  const now = options.now ?? (() => new Date());
  const registry = new Registry();
  const requests = new Counter({
    name: 'vouch_http_requests_total',
    help: 'HTTP requests answered, by method, route pattern and status code.',
    labelNames: ['method', 'route', 'status'] as const,
    registers: [registry],
  });
  const requestSeconds = new Histogram({
    name: 'vouch_http_request_duration_seconds',
    help: 'Time to answer an HTTP request, by method, route pattern and status code.',
    labelNames: ['method', 'route', 'status'] as const,
    buckets: SECONDS_BUCKETS,
    registers: [registry],
  });
  const batchSize = new Histogram({
    name: 'vouch_append_batch_size',
    help: 'Appends committed together in one transaction (group commit), by log.',
    labelNames: ['log'] as const,
    buckets: [1, 2, 4, 8, 16, 32, 64, 128, 256, 512],
    registers: [registry],
  });
  const batchSeconds = new Histogram({
    name: 'vouch_append_batch_duration_seconds',
    help: 'Time from a batch asking for its transaction to its commit, by log.',
    labelNames: ['log'] as const,
    buckets: SECONDS_BUCKETS,
    registers: [registry],
  });
  const headSeq = new Gauge({
    name: 'vouch_chain_head_seq',
    help: 'The seq of the last event this process committed, by log.',
    labelNames: ['log'] as const,
    registers: [registry],
  });
  const checkpointSize = new Gauge({
    name: 'vouch_checkpoint_tree_size',
    help: 'Events covered by the last checkpoint this process signed, by log.',
    labelNames: ['log'] as const,
    registers: [registry],
  });
  const signedAt = new Map<string, number>();
  new Gauge({
    name: 'vouch_checkpoint_age_seconds',
    help: 'Seconds since this process last signed a checkpoint, by log.',
    labelNames: ['log'] as const,
    registers: [registry],
    collect() {
      const at = now().getTime();
      for (const [log, time] of signedAt) this.set({ log }, Math.max(0, (at - time) / 1000));
    },
  });
  const verifications = new Counter({
    name: 'vouch_verifications_total',
    help: 'Verification records written, by status.',
    labelNames: ['status'] as const,
    registers: [registry],
  });
  const webhooks = new Counter({
    name: 'vouch_webhook_deliveries_total',
    help: 'Webhook delivery attempts, by outcome.',
    labelNames: ['outcome'] as const,
    registers: [registry],
  });
  const policyAnswers = new Counter({
    name: 'vouch_policy_engine_answers_total',
    help: 'Questions to the external policy engine, by outcome: the verdict recorded, already_decided, or the error code.',
    labelNames: ['outcome'] as const,
    registers: [registry],
  });
  const policySeconds = new Histogram({
    name: 'vouch_policy_engine_duration_seconds',
    help: 'How long the external policy engine took to answer (or to fail).',
    buckets: SECONDS_BUCKETS,
    registers: [registry],
  });
  const { database } = options;
  const poolGauges = [
    ['vouch_db_pool_max', 'Connections the database pool may open (1 for embedded PGlite).', 'max'],
    [
      'vouch_db_pool_in_use',
      'Pool connections held by a statement or transaction now (Postgres only).',
      'inUse',
    ],
    [
      'vouch_db_pool_waiting',
      'Statements and transactions waiting for a pool connection now (Postgres only).',
      'waiting',
    ],
  ] as const;
  for (const [name, help, member] of poolGauges) {
    new Gauge({
      name,
      help,
      registers: [registry],
      collect() {
        const value = database?.pool()[member];
        if (value !== undefined) this.set(value);
      },
    });
  }

  return {
    registry,
    observeRequest({ method, route, status, seconds }) {
      const labels = { method, route, status: String(status) };
      requests.inc(labels);
      requestSeconds.observe(labels, seconds);
    },
    observeBatch(batch) {
      batchSize.observe({ log: batch.log }, batch.size);
      batchSeconds.observe({ log: batch.log }, batch.durationMs / 1000);
      headSeq.set({ log: batch.log }, batch.headSeq);
    },
    observeCheckpoint(checkpoint) {
      checkpointSize.set({ log: checkpoint.log }, checkpoint.treeSize);
      signedAt.set(checkpoint.log, Date.parse(checkpoint.createdAt));
    },
    countVerification(status) {
      verifications.inc({ status });
    },
    countWebhookDelivery(outcome) {
      webhooks.inc({ outcome });
    },
    countPolicyEngineAnswer(outcome, seconds) {
      policyAnswers.inc({ outcome });
      if (seconds !== undefined) policySeconds.observe(seconds);
    },
    scrape: () => registry.metrics(),
  };
}
