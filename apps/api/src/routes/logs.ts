import { createRoute } from '@hono/zod-openapi';
import { type Ledger, listLogs } from '@vouch/ledger';
import type { VouchApp } from '../app';
import { mayUseLog, requireRole } from '../auth/authorize';
import { bearerSecurity, commonErrors } from '../schemas/common';
import { LogListSchema } from '../schemas/records';
import { ACCESS, rolesNote } from './access';

const list = createRoute({
  method: 'get',
  path: '/v1/logs',
  tags: ['audit'],
  summary: 'The logs this key may use, by id',
  description: `A log comes into being with its first event. A key limited to some logs sees only those. ${rolesNote(ACCESS.listLogs)}`,
  security: bearerSecurity,
  middleware: [requireRole(...ACCESS.listLogs)] as const,
  responses: {
    ...commonErrors,
    200: {
      description: 'Every log id, in order',
      content: { 'application/json': { schema: LogListSchema } },
    },
  },
});

/** `GET /v1/logs`: which logs exist (the `system` log of keys included). */
export function registerLogRoutes(app: VouchApp, deps: { ledger: Ledger }): void {
  app.openapi(list, async (c) => {
    const principal = c.get('principal');
    const logs = (await listLogs(deps.ledger.database)).filter((log) => mayUseLog(principal, log));
    return c.json({ logs }, 200);
  });
}
