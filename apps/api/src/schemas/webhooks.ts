import { z } from '@hono/zod-openapi';
import {
  WEBHOOK_DELIVERY_STATUSES,
  WEBHOOK_EVENTS,
  webhookAttemptSchema,
  webhookDeliveryPageSchema,
  webhookDeliverySchema,
} from '@vouch/records';
import { pageLimitParam } from './common';
import { component } from './component';

component(webhookAttemptSchema, 'WebhookAttempt');
component(webhookDeliverySchema, 'WebhookDelivery');
export const WebhookDeliveryPageSchema = webhookDeliveryPageSchema;

export const WebhookDeliveriesQuerySchema = z.strictObject({
  status: z
    .enum(WEBHOOK_DELIVERY_STATUSES)
    .optional()
    .openapi({ param: { name: 'status', in: 'query' }, description: 'Only deliveries in this state' }),
  event: z
    .enum(WEBHOOK_EVENTS)
    .optional()
    .openapi({ param: { name: 'event', in: 'query' }, description: 'Only this kind of notification' }),
  target: z
    .string()
    .regex(/^[a-z][a-z0-9-]{0,62}$/)
    .optional()
    .openapi({
      param: { name: 'target', in: 'query' },
      description: 'Only this target (its configured name)',
    }),
  after: z
    .string()
    .regex(/^whd_[0-9a-f]{32}$/)
    .optional()
    .openapi({ param: { name: 'after', in: 'query' }, description: 'The `next` of the previous page' }),
  limit: pageLimitParam(200, 'Page size (default 50)'),
});
