import { createRoute, z } from '@hono/zod-openapi';
import type { Records } from '@vouch/ledger';
import type { VouchApp } from '../app';
import { requireRole } from '../auth/authorize';
import { jsonBody } from '../http/json-body';
import { bearerSecurity, bodyErrors, commonErrors, errorResponseSpec } from '../schemas/common';
import {
  LogQuerySchema,
  ObservationIdParamSchema,
  ObservationInputSchema,
  ObservationSchema,
  VerificationInputSchema,
  VerificationSchema,
} from '../schemas/records';
import { runPhase, type VerificationHost } from '../verification';
import { ACCESS, rolesNote } from './access';
import { logOf, rawBody, recordContext } from './record-context';

const json = <T extends z.ZodType>(schema: T) => ({ 'application/json': { schema } });

const observe = createRoute({
  method: 'post',
  path: '/v1/observations',
  tags: ['observations'],
  summary: 'Record what the tool really returned',
  description: `A tool's output is not verified truth. Refused unless the proposal was allowed (or approved) and the caller is the authorized identity; the refused attempt is itself recorded. One proposal, one observation: the same post again, from the identity that executed, replays it (200, \`replayed: true\`); the body is compared as canonical JSON, so key order and omitted defaults do not matter. Any other account of the execution (another outcome, result, status or timing, another identity, a payload hash or approval request it was not recorded under) is refused with \`OBSERVATION_CONFLICT\` and kept as a refused execution that names the observation. ${rolesNote(ACCESS.observe)}`,
  security: bearerSecurity,
  middleware: [requireRole(...ACCESS.observe), jsonBody({ required: true })] as const,
  request: { query: LogQuerySchema, body: { required: true, content: json(ObservationInputSchema) } },
  responses: {
    ...commonErrors,
    ...bodyErrors,
    201: {
      description: 'Recorded',
      content: json(z.object({ observation: ObservationSchema, replayed: z.boolean() })),
    },
    200: {
      description: 'Already recorded: the first observation, `replayed: true`',
      content: json(z.object({ observation: ObservationSchema, replayed: z.boolean() })),
    },
    403: errorResponseSpec('`EXECUTION_NOT_AUTHORIZED` or `IDENTITY_MISMATCH` (the attempt is recorded)'),
    404: errorResponseSpec('No such proposal (`NOT_FOUND`)'),
    409: errorResponseSpec(
      '`OBSERVATION_CONFLICT` (another account of a recorded execution; the attempt is recorded), `APPROVAL_EXPIRED`, `APPROVAL_CONSUMED`, `APPROVAL_PAYLOAD_MISMATCH`',
    ),
  },
});

const verify = createRoute({
  method: 'post',
  path: '/v1/observations/{id}/verify',
  tags: ['observations'],
  summary: 'Run the configured verifiers on an observation',
  description: `Every postcondition is checked by the verifiers registered for it against an independent source; the status is derived: any failed check → \`failed\`; none, or any inconclusive (no verifier, timeout, error, source not independent) → \`inconclusive\`; all passed → \`passed\`. ${rolesNote(ACCESS.runVerifiers)}`,
  security: bearerSecurity,
  middleware: [requireRole(...ACCESS.runVerifiers)] as const,
  request: { params: ObservationIdParamSchema, query: LogQuerySchema },
  responses: {
    ...commonErrors,
    201: { description: 'Verified (whatever the status)', content: json(VerificationSchema) },
    404: errorResponseSpec('No such observation (`NOT_FOUND`)'),
  },
});

const postVerification = createRoute({
  method: 'post',
  path: '/v1/verifications',
  tags: ['observations'],
  summary: 'Record checks from an external verifier',
  description: `The status is still derived from the checks, never supplied; a check whose source is the system that performed the write counts as inconclusive. ${rolesNote(ACCESS.postVerification)}`,
  security: bearerSecurity,
  middleware: [requireRole(...ACCESS.postVerification), jsonBody({ required: true })] as const,
  request: { query: LogQuerySchema, body: { required: true, content: json(VerificationInputSchema) } },
  responses: {
    ...commonErrors,
    ...bodyErrors,
    201: { description: 'Recorded with its derived status', content: json(VerificationSchema) },
    404: errorResponseSpec('No such observation (`NOT_FOUND`)'),
  },
});

/** `/v1/observations` and `/v1/verifications`: what happened, and whether it is true. */
export function registerObservationRoutes(
  app: VouchApp,
  deps: { records: Records; verification: VerificationHost },
): void {
  const { records } = deps;

  app.openapi(observe, async (c) => {
    const log = logOf(c);
    const { observation, replayed } = await records.observe(recordContext(c, log), rawBody(c));
    return c.json({ observation, replayed } as never, replayed ? 200 : 201);
  });

  app.openapi(verify, async (c) => {
    const log = logOf(c);
    const { id } = c.req.valid('param');
    const observation = await records.getObservation(log, id);
    const proposal = await records.getProposal(log, observation.proposal_id);
    const outcome = await runPhase(deps.verification, {
      phase: 'post',
      proposal,
      observation,
      signal: c.req.raw.signal,
    });
    const verification = await records.recordVerification(recordContext(c, log), {
      observation_id: observation.id,
      checks: outcome.checks,
    });
    return c.json(verification as never, 201);
  });

  app.openapi(postVerification, async (c) => {
    const log = logOf(c);
    const verification = await records.recordVerification(recordContext(c, log), rawBody(c));
    return c.json(verification as never, 201);
  });
}
