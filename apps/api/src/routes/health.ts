import { createRoute, z } from '@hono/zod-openapi';
import { type Database, migrationStatus, ping } from '@vouch/ledger';
import type { VouchApp } from '../app';

/** What /readyz reports: can this instance serve traffic right now. */
export interface Readiness {
  ready: boolean;
  database: { ok: boolean; kind?: string; error?: string };
  migrations: { ok: boolean; expected?: number; applied?: number };
  /** Set while the server shuts down. */
  draining?: boolean;
}

/** Ready when the database answers and every migration this code ships is applied. */
export async function databaseReadiness(database: Database): Promise<Readiness> {
  try {
    await ping(database);
  } catch {
    return {
      ready: false,
      database: { ok: false, kind: database.kind, error: 'database unreachable' },
      migrations: { ok: false },
    };
  }
  try {
    const { expected, applied } = await migrationStatus(database);
    const ok = applied >= expected;
    return { ready: ok, database: { ok: true, kind: database.kind }, migrations: { ok, expected, applied } };
  } catch {
    return { ready: false, database: { ok: true, kind: database.kind }, migrations: { ok: false } };
  }
}

const HealthSchema = z.object({ status: z.literal('ok') }).openapi('Health');
const ReadinessSchema = z
  .object({
    status: z.enum(['ready', 'not_ready']),
    database: z.object({ ok: z.boolean(), kind: z.string().optional(), error: z.string().optional() }),
    migrations: z.object({
      ok: z.boolean(),
      expected: z.number().optional(),
      applied: z.number().optional(),
    }),
  })
  .openapi('Readiness');

const healthz = createRoute({
  method: 'get',
  path: '/healthz',
  tags: ['health'],
  summary: 'Liveness: the process answers',
  responses: { 200: { description: 'Alive', content: { 'application/json': { schema: HealthSchema } } } },
});

const readyz = createRoute({
  method: 'get',
  path: '/readyz',
  tags: ['health'],
  summary: 'Readiness: the database answers and migrations are current',
  responses: {
    200: { description: 'Ready', content: { 'application/json': { schema: ReadinessSchema } } },
    503: { description: 'Not ready', content: { 'application/json': { schema: ReadinessSchema } } },
  },
});

/** `GET /healthz` and `GET /readyz`: no key needed, nothing secret in them. */
export function registerHealthRoutes(app: VouchApp, deps: { readiness: () => Promise<Readiness> }): void {
  app.openapi(healthz, (c) => c.json({ status: 'ok' as const }, 200));
  app.openapi(readyz, async (c) => {
    const report = await deps.readiness();
    const body = { status: report.ready ? ('ready' as const) : ('not_ready' as const), ...report };
    const { ready: _ready, ...rest } = body;
    return report.ready ? c.json(rest, 200) : c.json(rest, 503);
  });
}
