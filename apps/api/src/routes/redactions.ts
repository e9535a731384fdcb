import { createRoute } from '@hono/zod-openapi';
import { type Ledger, REDACT_ACTION, redactFields, signatureOfRequest } from '@vouch/ledger';
import type { VouchApp } from '../app';
import { assertLog, requireRole } from '../auth/authorize';
import { jsonBody } from '../http/json-body';
import { EventParamSchema, RedactionRequestSchema, RedactionResultSchema } from '../schemas/audit';
import { bearerSecurity, bodyErrors, commonErrors, errorResponseSpec } from '../schemas/common';
import { ACCESS, rolesNote } from './access';
import { rawBody, recordContext } from './record-context';

const redact = createRoute({
  method: 'post',
  path: '/v1/logs/{log}/events/{seq}/redactions',
  tags: ['audit'],
  summary: 'Erase fields of an event, keeping every proof valid (redactor)',
  description: `Erases the value and salt of the named top-level fields of a \`fields/1\` event (docs/chain.md, "Erasing a field"), or of the named keys of a proposal's \`arguments\`, an observation's \`result\`, a decision's \`repair\` or a refused execution's \`attempted\` (\`member-fields/1\`: the story's \`events\` give the record's seq) and appends an \`event.redacted\` event naming the event, the fields, the reason and the caller, in one transaction. The event's field hashes stay in the chain, so the chain, the Merkle tree and every signed checkpoint verify as before, and verification reports the erasure. Nothing is written when the request is refused. The caller may not be the event's own actor (\`SELF_REDACTION\`, 403): whoever proposed, executed or appended an event never erases it. A redactor who holds an enrolled signing key (or once \`signatures.required\` is recorded) signs the request (\`Vouch-Signature\`, action \`event.redact\`, claims: this body with the path's \`seq\` added), or is refused with 403 \`SIGNATURE_REQUIRED\` / \`SIGNATURE_INVALID\`. ${rolesNote(ACCESS.redact)}`,
  security: bearerSecurity,
  middleware: [requireRole(...ACCESS.redact), jsonBody({ required: true })] as const,
  request: {
    params: EventParamSchema,
    body: { required: true, content: { 'application/json': { schema: RedactionRequestSchema } } },
  },
  responses: {
    ...commonErrors,
    ...bodyErrors,
    201: { description: 'Erased', content: { 'application/json': { schema: RedactionResultSchema } } },
    404: errorResponseSpec('No such event in the log (`EVENT_NOT_FOUND`)'),
    409: errorResponseSpec(
      'The event commits to its whole payload, so no single field can be erased (`EVENT_NOT_REDACTABLE`: a record the server acts on, or an event written before its commitment existed), or a field is already erased (`FIELD_ALREADY_REDACTED`)',
    ),
    422: errorResponseSpec('The event has no such field (`FIELD_NOT_FOUND`)'),
  },
});

/** `POST /v1/logs/{log}/events/{seq}/redactions`: erase fields of a field-committed event. */
export function registerRedactionRoutes(app: VouchApp, deps: { ledger: Ledger }): void {
  app.openapi(redact, async (c) => {
    const { log, seq } = c.req.valid('param');
    const principal = c.get('principal');
    assertLog(principal, log);
    const body = c.req.valid('json');
    const signature = await signatureOfRequest(
      deps.ledger.database,
      recordContext(c, log),
      REDACT_ACTION,
      { ...rawBody(c), seq },
      new Date().toISOString(),
    );
    const result = await redactFields(deps.ledger, {
      log,
      seq,
      fields: body.fields,
      reason: body.reason,
      actor: principal.identity,
      ...(principal.keyIssuedAt === undefined ? {} : { keyIssuedAt: principal.keyIssuedAt }),
      ...(signature ? { signature } : {}),
    });
    return c.json({ log, target: result.target, fields: result.fields, event: result.event }, 201);
  });
}
