import { createRoute, z } from '@hono/zod-openapi';
import {
  ENROLMENT_CODE_ACTION,
  enrolWithCode,
  issueEnrolmentCode,
  type Ledger,
  SYSTEM_LOG,
  signatureOfRequest,
} from '@vouch/ledger';
import type { VouchApp } from '../app';
import { requireRole } from '../auth/authorize';
import { jsonBody } from '../http/json-body';
import { bearerSecurity, bodyErrors, commonErrors, errorResponseSpec } from '../schemas/common';
import { rawBody, recordContext } from './record-context';
import { SigningKeySchema } from './signing-keys';

const CodeInputSchema = z
  .strictObject({
    identity: z.string().min(1).max(256),
    note: z.string().min(1).max(200).optional().openapi({
      description:
        'What the code is for (a device, a ticket), recorded with it. Two signed requests that differ in it issue two codes.',
    }),
  })
  .openapi('EnrolmentCodeRequest');

const CodeSchema = z
  .object({
    identity: z.string(),
    code: z.string().openapi({ description: 'The one-time code: shown here once, never stored.' }),
    code_commitment: z
      .string()
      .openapi({ description: 'sha256("vouch/enrolment-code/v1\\n" + code), hex: what the log records.' }),
    expires_at: z.string(),
  })
  .openapi('EnrolmentCode');

const EnrolInputSchema = z
  .strictObject({
    public_key: z.string().regex(/^ed25519:[A-Za-z0-9+/]{43}=$/, 'ed25519:<base64 of 32 bytes>'),
    code: z.string().min(1).max(100),
    proof: z
      .string()
      .regex(/^keyid=[0-9a-f]{64}; sig=[A-Za-z0-9+/]{86}==$/, 'keyid=<64 hex>; sig=<base64 of 64 bytes>')
      .openapi({
        description:
          "The new key's detached signature (as in `Vouch-Signature`) over the author statement of log `system`, action `signing_key.enrol_by_code`, signer the caller, claims `{identity, public_key, code_commitment}`: proof that the caller holds the key.",
      }),
  })
  .openapi('EnrolmentByCode');

const issue = createRoute({
  method: 'post',
  path: '/v1/signing-keys/enrolment-codes',
  tags: ['keys'],
  summary: 'Issue a one-time code to enrol a signing key',
  description:
    'A code with which `identity` enrols its own signing key (`POST /v1/signing-keys/enrol`, the console\'s "Signing key" page), valid for 24 hours and once. The `system` log records `signing_key.enrolment_code` with the code\'s commitment, never the code: the answer is the only place it is shown. An admin that holds a signing key signs the request (action `signing_key.enrolment_code`, claims: this body); one signed request issues one code (`409 SIGNATURE_REPLAYED`). Roles: `admin`.',
  security: bearerSecurity,
  middleware: [requireRole('admin'), jsonBody({ required: true })] as const,
  request: { body: { required: true, content: { 'application/json': { schema: CodeInputSchema } } } },
  responses: {
    ...commonErrors,
    ...bodyErrors,
    201: { description: 'Issued', content: { 'application/json': { schema: CodeSchema } } },
    409: errorResponseSpec('`SIGNATURE_REPLAYED`: this signed request already issued a code'),
  },
});

const enrol = createRoute({
  method: 'post',
  path: '/v1/signing-keys/enrol',
  tags: ['keys'],
  summary: 'Enrol your own signing key with a one-time code',
  description:
    "Enrols `public_key` for the identity of the calling API key, with a code an admin issued for that identity and the new key's proof of possession. The event (`signing_key.enrolled`, `enrolled_by` the identity itself) reveals the code, which is spent from then on. Refused, nothing written: `403 ENROLMENT_CODE_INVALID` (no code for this identity hashes so), `403 ENROLMENT_CODE_EXPIRED`, `409 ENROLMENT_CODE_USED`, `403 ENROLMENT_PROOF_INVALID`, `409 SIGNING_KEY_ENROLLED`. Any role.",
  security: bearerSecurity,
  middleware: [jsonBody({ required: true })] as const,
  request: { body: { required: true, content: { 'application/json': { schema: EnrolInputSchema } } } },
  responses: {
    ...commonErrors,
    ...bodyErrors,
    201: { description: 'Enrolled', content: { 'application/json': { schema: SigningKeySchema } } },
    409: errorResponseSpec('`ENROLMENT_CODE_USED` or `SIGNING_KEY_ENROLLED`'),
  },
});

/** `/v1/signing-keys/enrolment-codes` and `/v1/signing-keys/enrol`: a person enrols their own key. */
export function registerEnrolmentCodeRoutes(app: VouchApp, deps: { ledger: Ledger }): void {
  app.openapi(issue, async (c) => {
    const body = c.req.valid('json');
    const ctx = recordContext(c, SYSTEM_LOG);
    const signature = await signatureOfRequest(
      deps.ledger.database,
      ctx,
      ENROLMENT_CODE_ACTION,
      rawBody(c),
      new Date().toISOString(),
    );
    const issued = await issueEnrolmentCode(deps.ledger, {
      identity: body.identity,
      issuedBy: ctx.caller.identity,
      ...(body.note === undefined ? {} : { note: body.note }),
      ...(signature ? { signature } : {}),
    });
    return c.json(issued, 201);
  });
  app.openapi(enrol, async (c) => {
    const body = c.req.valid('json');
    const [, keyid = '', sig = ''] = /^keyid=(\S+); sig=(\S+)$/.exec(body.proof) ?? [];
    const enrolled = await enrolWithCode(deps.ledger, {
      identity: c.get('principal').identity,
      publicKey: body.public_key,
      code: body.code,
      proof: { keyid, sig },
    });
    return c.json(
      {
        key_id: enrolled.key_id,
        identity: enrolled.identity,
        public_key: enrolled.public_key,
        enrolled_at: enrolled.enrolled_at,
        revoked_at: null,
      },
      201,
    );
  });
}
