import { createRoute, z } from '@hono/zod-openapi';
import {
  type Database,
  type IntegrityAlarm,
  migrationStatus,
  ping,
  type RaisedIntegrityAlarm,
} from '@vouch/ledger';
import type { VouchApp } from '../app';

/** What /readyz reports: can this instance serve traffic right now. */
export interface Readiness {
  ready: boolean;
  database: { ok: boolean; kind?: string; error?: string };
  migrations: { ok: boolean; expected?: number; applied?: number };
  /** Set while the server shuts down. */
  draining?: boolean;
  /** `INTEGRITY_ALARM` once the integrity alarm is raised (see `integrity`). */
  code?: 'INTEGRITY_ALARM';
  /** What the server found its database disagreeing with the chain about; not ready while any. */
  integrity?: { ok: boolean; alarms: RaisedIntegrityAlarm[] };
}

/**
 * The report with the integrity alarm folded in: once it is raised the instance is not
 * ready (a load balancer takes it out, an orchestrator shows why), whatever else holds.
 */
export function withIntegrity(report: Readiness, alarm: IntegrityAlarm): Readiness {
  if (!alarm.raised) return { ...report, integrity: { ok: true, alarms: [] } };
  return {
    ...report,
    ready: false,
    code: 'INTEGRITY_ALARM',
    integrity: { ok: false, alarms: [...alarm.alarms()] },
  };
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
    code: z
      .literal('INTEGRITY_ALARM')
      .optional()
      .openapi({ description: 'Set when the integrity alarm is raised: see `integrity.alarms`.' }),
    database: z.object({ ok: z.boolean(), kind: z.string().optional(), error: z.string().optional() }),
    migrations: z.object({
      ok: z.boolean(),
      expected: z.number().optional(),
      applied: z.number().optional(),
    }),
    draining: z.boolean().optional(),
    integrity: z
      .object({
        ok: z.boolean(),
        alarms: z.array(
          z.object({
            code: z.enum([
              'TREE_MISMATCH',
              'CHAIN_MISMATCH',
              'CHECKPOINT_MISMATCH',
              'CHAIN_CONFLICT',
              'RECORD_MISMATCH',
              'KEY_MISMATCH',
              'COSIGNATURE_MISMATCH',
              'RECORD_RULE_VIOLATION',
              'WEBHOOK_MISMATCH',
              'TIME_AHEAD',
            ]),
            log: z.string(),
            seq: z.number().optional(),
            table: z.string().optional(),
            message: z.string(),
            raisedAt: z.string(),
          }),
        ),
      })
      .optional()
      .openapi({
        description:
          'What this instance found its database disagreeing with the chain about. Once raised it stays raised until the process restarts, and no checkpoint is signed meanwhile.',
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
  summary: 'Readiness: the database answers, migrations are current, and no integrity alarm is raised',
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
