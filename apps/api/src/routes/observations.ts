import { createRoute, type z } from '@hono/zod-openapi';
import type { RecordedVerification, Records } from '@vouch/ledger';
import type { VouchApp } from '../app';
import { observeAndVerify, verifyObservation } from '../application/verify-observation';
import { assertRole, mayActIn, requireRole } from '../auth/authorize';
import { asStepRefusal } from '../error-response';
import { jsonBody } from '../http/json-body';
import type { Metrics } from '../metrics/metrics';
import { bearerSecurity, bodyErrors, commonErrors, errorResponseSpec } from '../schemas/common';
import {
  LogQuerySchema,
  ObservationIdParamSchema,
  ObservationInputSchema,
  ObservationResultSchema,
  ObserveQuerySchema,
  RecordedVerificationSchema,
  ReverificationInputSchema,
  VerificationInputSchema,
  VerificationJobAcceptedSchema,
  VerificationListQuerySchema,
  VerificationPageSchema,
} from '../schemas/records';
import { assertMaySupersede, type VerificationHost } from '../verification';
import type { VerificationQueue } from '../verification-queue';
import { ACCESS, rolesNote } from './access';
import { definedOnly, logOf, rawBody, recordContext } from './record-context';

const json = <T extends z.ZodType>(schema: T) => ({ 'application/json': { schema } });

const observe = createRoute({
  method: 'post',
  path: '/v1/observations',
  tags: ['observations'],
  summary: 'Record what the tool really returned',
  description: `A tool's output is not verified truth. Refused unless the proposal was allowed (or approved), the caller is the authorized identity, and it holds the execution claim \`POST /v1/proposals/{id}/authorize\` (or \`?authorize=\`) recorded (\`EXECUTION_NOT_CLAIMED\` otherwise: the preconditions and the approval were never checked); the refused attempt is itself recorded, under the caller, and never changes the story of a proposal the caller was not authorized to execute. With \`?verify=true\` the server's verifiers run on a new observation in the same request, as \`POST /v1/observations/{id}/verify\` would, and the answer carries \`verification\` (or \`verification_refused\`); the key then needs the roles of both routes. One proposal, one observation: the same post again, from the identity that executed, replays it (200, \`replayed: true\`); the body is compared as canonical JSON, so key order and omitted defaults do not matter. Any other account of the execution (another outcome, result, status or timing, another identity, a payload hash or approval request it was not recorded under) is refused with \`OBSERVATION_CONFLICT\` and kept as a refused execution that names the observation. After the server recorded a lapsed execution claim as \`unknown\` (no observation before the claim’s deadline), a late account is refused with \`EXECUTION_CLAIM_LAPSED\` and kept the same way. ${rolesNote(ACCESS.observe)}`,
  security: bearerSecurity,
  middleware: [requireRole(...ACCESS.observe), jsonBody({ required: true })] as const,
  request: { query: ObserveQuerySchema, body: { required: true, content: json(ObservationInputSchema) } },
  responses: {
    ...commonErrors,
    ...bodyErrors,
    201: {
      description: 'Recorded',
      content: json(ObservationResultSchema),
    },
    200: {
      description: 'Already recorded: the first observation, `replayed: true`',
      content: json(ObservationResultSchema),
    },
    403: errorResponseSpec('`EXECUTION_NOT_AUTHORIZED` or `IDENTITY_MISMATCH` (the attempt is recorded)'),
    404: errorResponseSpec('No such proposal (`NOT_FOUND`)'),
    409: errorResponseSpec(
      '`EXECUTION_NOT_CLAIMED` (no claim from `authorize`; the attempt is recorded), `OBSERVATION_CONFLICT` (another account of a recorded execution; the attempt is recorded), `EXECUTION_CLAIM_LAPSED` (the claim lapsed and its outcome was recorded as unknown; the attempt is recorded), `APPROVAL_EXPIRED`, `APPROVAL_CONSUMED`, `APPROVAL_PAYLOAD_MISMATCH`',
    ),
  },
});

const SEMANTICS =
  'What must be proven is what the proposal declared: a check proves only the postcondition it answers, undeclared names are reported in `undeclared` and never counted, and a declared postcondition without a check is unproven. The record’s `status`: any declared postcondition failed → `failed`; all passed → `passed`; otherwise `inconclusive`. The proposal’s `verification_status` counts every record not superseded, so a later inconclusive record never replaces a definitive result; a `failed` becomes `passed` only through a re-verification that names the records it `supersedes` with a `reason`. While an observation’s outcome is `unknown` and has not settled, every record is held at `inconclusive` (`held: OUTCOME_UNKNOWN`); once it has settled with no record counted, the server runs its verifiers on it by itself and records them as `vouch:settle-verifier`.';

const supersessionErrors = {
  403: errorResponseSpec(
    '`SUPERSESSION_FORBIDDEN`: the audited party (a gateway key, the identity that executed or proposed) may not supersede',
  ),
  404: errorResponseSpec(
    'No such observation, or a superseded id that is no verification of this proposal (`NOT_FOUND`)',
  ),
  409: errorResponseSpec(
    '`SUPERSESSION_INVALID`: a named record is already superseded or was not definitive, or the re-verification is not definitive itself',
  ),
};

const verify = createRoute({
  method: 'post',
  path: '/v1/observations/{id}/verify',
  tags: ['observations'],
  summary: 'Run the configured verifiers on an observation',
  description: `Every postcondition is checked by the verifiers registered for it against an independent source; a check that could not be made (no verifier, timeout, error, source not independent) is inconclusive. ${SEMANTICS} ${rolesNote(ACCESS.runVerifiers)} Superseding needs the \`verifier\` role and no \`gateway\` role.\n\nBy default the answer waits for the verifiers, measurement policies included (201). With \`Prefer: respond-async\` (RFC 7240) the verification is queued durably and runs in the background (202, the job): the story shows \`verifying: true\` until the record is written, and a server that restarts meanwhile resumes it.`,
  security: bearerSecurity,
  middleware: [requireRole(...ACCESS.runVerifiers), jsonBody({ required: false })] as const,
  request: {
    params: ObservationIdParamSchema,
    query: LogQuerySchema,
    body: { required: false, content: json(ReverificationInputSchema) },
  },
  responses: {
    ...commonErrors,
    ...bodyErrors,
    201: { description: 'Verified (whatever the status)', content: json(RecordedVerificationSchema) },
    202: {
      description: 'Queued (`Prefer: respond-async`): the job that will record the verification',
      content: json(VerificationJobAcceptedSchema),
    },
    ...supersessionErrors,
  },
});

const postVerification = createRoute({
  method: 'post',
  path: '/v1/verifications',
  tags: ['observations'],
  summary: 'Record checks from an external verifier',
  description: `The status is still derived from the checks, never supplied; a check whose source is the system that performed the write counts as inconclusive, and so does every check the audited party (the identity that executed or proposed) posts about its own action. ${SEMANTICS} ${rolesNote(ACCESS.postVerification)} Superseding needs no \`gateway\` role besides.`,
  security: bearerSecurity,
  middleware: [requireRole(...ACCESS.postVerification), jsonBody({ required: true })] as const,
  request: { query: LogQuerySchema, body: { required: true, content: json(VerificationInputSchema) } },
  responses: {
    ...commonErrors,
    ...bodyErrors,
    201: { description: 'Recorded with its derived status', content: json(RecordedVerificationSchema) },
    ...supersessionErrors,
  },
});

const listVerifications = createRoute({
  method: 'get',
  path: '/v1/verifications',
  tags: ['observations'],
  summary: 'Verification records in chain order (e.g. `?status=failed`)',
  description: `Each record with the status it was given when recorded; a later re-verification may supersede it (the story says which count). Keyset-paged by event seq. A key limited to environments sees only records of proposals in them. ${rolesNote(ACCESS.listVerifications)}`,
  security: bearerSecurity,
  middleware: [requireRole(...ACCESS.listVerifications)] as const,
  request: { query: VerificationListQuerySchema },
  responses: {
    ...commonErrors,
    200: {
      description: 'One page; pass `next` as `after` for the next',
      content: json(VerificationPageSchema),
    },
  },
});

/** `/v1/observations` and `/v1/verifications`: what happened, and whether it is true. */
export function registerObservationRoutes(
  app: VouchApp,
  deps: { records: Records; verification: VerificationHost; metrics: Metrics; queue: VerificationQueue },
): void {
  const { records, metrics } = deps;
  const services = { records, host: deps.verification, metrics };

  app.openapi(observe, async (c) => {
    const log = logOf(c);
    const verify = c.req.valid('query').verify === 'true';
    // Refused before anything is written: a key asking for what it could not ask for on its own.
    if (verify) assertRole(c.get('principal'), ACCESS.runVerifiers);
    const done = await observeAndVerify(services, {
      ctx: recordContext(c, log),
      body: rawBody(c),
      verify,
      signal: c.req.raw.signal,
    });
    const { observation, replayed } = done;
    const status = replayed ? 200 : 201;
    if (!verify) return c.json({ observation, replayed }, status);
    return c.json(
      {
        observation,
        replayed,
        verification: done.verification && asResponse(done.verification),
        verification_refused:
          done.verificationError === null ? null : asStepRefusal(done.verificationError, c),
      },
      status,
    );
  });

  app.openapi(verify, async (c) => {
    const log = logOf(c);
    const { id } = c.req.valid('param');
    const body = rawBody(c);
    // Refused before any verifier reads a source on behalf of a caller who may not supersede.
    if (body.supersedes !== undefined) assertMaySupersede(c.get('principal'));
    const observation = await records.getObservation(log, id);
    if (/\brespond-async\b/i.test(c.req.header('prefer') ?? '')) {
      // The signature is judged now, as the record will be: a refusal is answered, not queued.
      const ctx = recordContext(c, log);
      await records.requestSignature(ctx, 'verification.run', { ...body, observation_id: observation.id });
      const job = await deps.queue.enqueue({
        log,
        observation,
        requestedBy: c.get('principal').identity,
        body,
        ...(ctx.caller.signature ? { signature: ctx.caller.signature } : {}),
      });
      c.header('Preference-Applied', 'respond-async');
      return c.json(
        {
          verification_job: {
            id: job.id,
            observation_id: job.observationId,
            proposal_id: job.proposalId,
            requested_by: job.requestedBy,
            requested_at: job.requestedAt,
            status: 'queued' as const,
          },
        },
        202,
      );
    }

    const recorded = await verifyObservation(services, {
      ctx: recordContext(c, log),
      observation,
      body,
      signal: c.req.raw.signal,
    });
    return c.json(asResponse(recorded), 201);
  });

  app.openapi(listVerifications, async (c) => {
    const log = logOf(c);
    const { status, after, limit } = c.req.valid('query');
    const page = await records.listVerifications(log, definedOnly({ status, after, limit }));
    const principal = c.get('principal');
    const visible = [];
    for (const item of page.items) {
      if (principal.environments !== null) {
        const proposal = await records.getProposal(log, item.verification.proposal_id);
        if (!mayActIn(principal, proposal.target.env)) continue;
      }
      visible.push(item);
    }
    return c.json({ verifications: visible, next: page.next }, 200);
  });

  app.openapi(postVerification, async (c) => {
    const log = logOf(c);
    const body = rawBody(c);
    if (body.supersedes !== undefined) assertMaySupersede(c.get('principal'));
    const recorded = await records.recordVerification(recordContext(c, log), body);
    metrics.countVerification(recorded.verification.status);
    return c.json(asResponse(recorded), 201);
  });
}

// The record's own fields, and beside them (not part of the record) the proposal's status.
function asResponse(recorded: RecordedVerification) {
  return { ...recorded.verification, verification_status: recorded.verification_status };
}
