import { createRoute, z } from '@hono/zod-openapi';
import {
  type Database,
  type IntegrityAlarm,
  migrationStatus,
  ping,
  type RaisedIntegrityAlarm,
  unprovenKeyIds,
} from '@vouch/ledger';
import type { VouchApp } from '../app';

/** What /readyz reports: can this instance serve traffic right now. */
export interface Readiness {
  ready: boolean;
  database: { ok: boolean; kind?: string; error?: string };
  migrations: { ok: boolean; expected?: number; applied?: number };
  /** Set while the server shuts down. */
  draining?: boolean;
  /**
   * Why not ready, when one thing says it: `INTEGRITY_ALARM` once the integrity alarm is
   * raised (see `integrity`; it wins), `DATABASE_UNAVAILABLE` when the database does not
   * answer in time, `MIGRATIONS_PENDING` when its schema is behind this code.
   */
  code?: 'INTEGRITY_ALARM' | 'DATABASE_UNAVAILABLE' | 'MIGRATIONS_PENDING';
  /**
   * Keys issued before events committed to the key hash and not adopted: what a verification
   * of the `system` log reports as `KEY_UNPROVEN`. No damage, so ready all the same
   * (`vouch keys adopt` binds them). Absent when it could not be read in time.
   */
  keys?: { unproven: number };
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

/**
 * How long `/readyz` waits for the database: well within a load balancer's health-check
 * timeout, so the probe reads a 503 with its code instead of timing out on its own. A
 * statement's own deadline (`statementTimeoutMs`, 15 s by default) is for requests.
 */
export const READINESS_DEADLINE_MS = 3_000;

/** Ready when the database answers within `deadlineMs` and every migration this code ships is applied. */
export async function databaseReadiness(
  database: Database,
  deadlineMs = READINESS_DEADLINE_MS,
): Promise<Readiness> {
  const unavailable = (error: string): Readiness => ({
    ready: false,
    code: 'DATABASE_UNAVAILABLE',
    database: { ok: false, kind: database.kind, error },
    migrations: { ok: false },
  });
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<'late'>((resolve) => {
    timer = setTimeout(() => resolve('late'), deadlineMs);
  });
  const tooLate = `database did not answer within ${deadlineMs} ms`;
  try {
    const answered = await Promise.race([ping(database).then(() => 'answered' as const), late]).catch(
      () => 'failed' as const,
    );
    if (answered !== 'answered') return unavailable(answered === 'late' ? tooLate : 'database unreachable');
    const status = await Promise.race([migrationStatus(database), late]).catch(() => null);
    if (status === 'late') return unavailable(tooLate);
    if (status === null) return unavailable('the migration journal could not be read');
    const ok = status.applied >= status.expected;
    // Only on the schema this code reads: the key tables are queried as it knows them.
    const unproven = ok ? await Promise.race([unprovenKeyIds(database), late]).catch(() => null) : null;
    return {
      ready: ok,
      ...(ok ? {} : { code: 'MIGRATIONS_PENDING' as const }),
      database: { ok: true, kind: database.kind },
      migrations: { ok, expected: status.expected, applied: status.applied },
      ...(Array.isArray(unproven) ? { keys: { unproven: unproven.length } } : {}),
    };
  } finally {
    clearTimeout(timer);
  }
}

const HealthSchema = z.object({ status: z.literal('ok') }).openapi('Health');
const ReadinessSchema = z
  .object({
    status: z.enum(['ready', 'not_ready']),
    code: z.enum(['INTEGRITY_ALARM', 'DATABASE_UNAVAILABLE', 'MIGRATIONS_PENDING']).optional().openapi({
      description:
        'Why not ready: INTEGRITY_ALARM once the integrity alarm is raised (see `integrity.alarms`; it wins), DATABASE_UNAVAILABLE when the database does not answer within 3 s, MIGRATIONS_PENDING when its schema is behind this code.',
    }),
    database: z.object({ ok: z.boolean(), kind: z.string().optional(), error: z.string().optional() }),
    migrations: z.object({
      ok: z.boolean(),
      expected: z.number().optional(),
      applied: z.number().optional(),
    }),
    draining: z.boolean().optional(),
    keys: z.object({ unproven: z.number().int() }).optional().openapi({
      description:
        'Keys issued before events committed to the key hash (before migration 0005) and not adopted: a verification of the system log reports each as KEY_UNPROVEN. Ready all the same; `vouch keys adopt` binds them (docs/operations.md, Upgrading).',
    }),
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
              'ROLLBACK_DETECTED',
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
