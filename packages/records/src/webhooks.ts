import { z } from 'zod';

/**
 * What a webhook target can subscribe to (docs/webhooks.md). Every one but `integrity.alarm`
 * is derived from a ledger event; an integrity alarm is written when a server raises it.
 */
export const WEBHOOK_EVENTS = [
  'approval.requested',
  'approval.resolved',
  'approval.expiring',
  'verification.failed',
  'outcome.unknown',
  'integrity.alarm',
] as const;
export type WebhookEvent = (typeof WEBHOOK_EVENTS)[number];

/** Where a delivery stands, from its last attempt. */
export const WEBHOOK_DELIVERY_STATUSES = [
  'pending',
  'sending',
  'retrying',
  'delivered',
  'failed',
  'cancelled',
] as const;

/** One attempt of a delivery: what it got, never the secret, the signature or the answer's body. */
export const webhookAttemptSchema = z.object({
  attempt: z.number().int(),
  claimed_at: z.string(),
  finished_at: z.string().nullable(),
  outcome: z.enum(['delivered', 'retry', 'failed', 'cancelled']).nullable(),
  status_code: z.number().int().nullable(),
  error_code: z.string().nullable().meta({
    description:
      '`HTTP_STATUS`, `TIMEOUT`, `NETWORK`, `TARGET_FORBIDDEN` (the SSRF policy refused the address), `TARGET_UNRESOLVED`, `DELIVERY_NOT_DERIVED` (the row is not what its source derives: never signed or sent, integrity alarm `WEBHOOK_MISMATCH`); for a cancelled one `APPROVAL_ANSWERED`, `APPROVAL_EXPIRED`, `TARGET_REMOVED` or `EVENT_UNSUBSCRIBED`',
  }),
  duration_ms: z.number().int().nullable(),
  next_attempt_at: z.string().nullable(),
});

/** One notification to one target, with every attempt (no body: it may carry record content). */
export const webhookDeliverySchema = z.object({
  id: z.string(),
  target: z
    .string()
    .meta({ description: 'The target’s configured name (never its URL, which may be a secret)' }),
  event: z.enum(WEBHOOK_EVENTS),
  log: z.string(),
  seq: z.number().int().nullable(),
  subject: z.string(),
  status: z.enum(WEBHOOK_DELIVERY_STATUSES),
  created_at: z.string(),
  due_at: z.string(),
  attempts: z.array(webhookAttemptSchema),
});
export type WebhookDelivery = z.output<typeof webhookDeliverySchema>;

/** `GET /v1/webhooks/deliveries`. */
export const webhookDeliveryPageSchema = z.object({
  deliveries: z.array(webhookDeliverySchema),
  next: z.string().nullable().meta({ description: 'Pass as `after` for the next page; null at the end' }),
});
export type WebhookDeliveryPage = z.output<typeof webhookDeliveryPageSchema>;
