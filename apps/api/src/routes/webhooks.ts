import { createRoute } from '@hono/zod-openapi';
import { createWebhookStore, type Database } from '@vouch/ledger';
import type { VouchApp } from '../app';
import { requireRole } from '../auth/authorize';
import { bearerSecurity, commonErrors } from '../schemas/common';
import { WebhookDeliveriesQuerySchema, WebhookDeliveryPageSchema } from '../schemas/webhooks';
import { ACCESS, rolesNote } from './access';

const listDeliveries = createRoute({
  method: 'get',
  path: '/v1/webhooks/deliveries',
  tags: ['webhooks'],
  summary: 'The webhook delivery log: every notification and each attempt (admin, auditor)',
  description: `Operational data, not the audit chain: what was sent to which configured target, each attempt's status code, error code and duration. Never a URL, secret, signature or body. A key limited to some logs sees their deliveries only. Oldest first. ${rolesNote(ACCESS.listWebhookDeliveries)}`,
  security: bearerSecurity,
  middleware: [requireRole(...ACCESS.listWebhookDeliveries)] as const,
  request: { query: WebhookDeliveriesQuerySchema },
  responses: {
    ...commonErrors,
    200: { description: 'One page', content: { 'application/json': { schema: WebhookDeliveryPageSchema } } },
  },
});

/** `GET /v1/webhooks/deliveries` (docs/webhooks.md). */
export function registerWebhookRoutes(app: VouchApp, options: { database: Database }): void {
  const store = createWebhookStore(options.database);
  app.openapi(listDeliveries, async (c) => {
    const { limit = 50, ...filters } = c.req.valid('query');
    const page = await store.listDeliveries({
      logs: c.get('principal').logs,
      limit: Math.min(limit, c.get('limits').pageSize),
      ...filters,
    });
    return c.json(page, 200);
  });
}
