import { createRoute, z } from '@hono/zod-openapi';
import { formatAuthorPublicKey } from '@vouch/audit';
import {
  currentKeyHistory,
  ENROLL_ACTION,
  enrollSigningKey,
  type Ledger,
  LedgerError,
  SYSTEM_LOG,
  signatureOfRequest,
} from '@vouch/ledger';
import type { VouchApp } from '../app';
import { requireRole } from '../auth/authorize';
import { jsonBody } from '../http/json-body';
import { bearerSecurity, bodyErrors, commonErrors } from '../schemas/common';
import { rawBody, recordContext } from './record-context';

const EnrollInputSchema = z
  .strictObject({
    identity: z.string().min(1).max(256),
    public_key: z.string().regex(/^ed25519:[A-Za-z0-9+/]{43}=$/, 'ed25519:<base64 of 32 bytes>'),
  })
  .openapi('SigningKeyEnrollment');

export const SigningKeySchema = z
  .object({
    key_id: z.string(),
    identity: z.string(),
    public_key: z.string(),
    enrolled_at: z.string(),
    revoked_at: z.string().nullable(),
  })
  .openapi('SigningKey');

const enroll = createRoute({
  method: 'post',
  path: '/v1/signing-keys',
  tags: ['keys'],
  summary: "Enrol an author's public signing key",
  description:
    'Binds an Ed25519 public key to an identity in the `system` log (`signing_key.enrolled`): from then on every approval, verification and decision that identity writes must carry its signature (`Vouch-Signature`), and verification reports any record in its name without one. An admin that holds a signing key signs the enrolment itself (action `signing_key.enroll`, claims: this body). Roles: `admin`.',
  security: bearerSecurity,
  middleware: [requireRole('admin'), jsonBody({ required: true })] as const,
  request: { body: { required: true, content: { 'application/json': { schema: EnrollInputSchema } } } },
  responses: {
    ...commonErrors,
    ...bodyErrors,
    201: { description: 'Enrolled', content: { 'application/json': { schema: SigningKeySchema } } },
  },
});

const list = createRoute({
  method: 'get',
  path: '/v1/signing-keys',
  tags: ['keys'],
  summary: "The authors' enrolled signing keys",
  description: 'Every signing key the `system` log enrols, with when it was enrolled and revoked. Any role.',
  security: bearerSecurity,
  responses: {
    ...commonErrors,
    200: {
      description: 'The keys',
      content: { 'application/json': { schema: z.object({ keys: z.array(SigningKeySchema) }) } },
    },
  },
});

const iso = (ms: number) => new Date(ms).toISOString();

/** `/v1/signing-keys`: the public keys authors sign their records with. */
export function registerSigningKeyRoutes(app: VouchApp, deps: { ledger: Ledger }): void {
  app.openapi(enroll, async (c) => {
    const body = c.req.valid('json');
    const ctx = recordContext(c, SYSTEM_LOG);
    const signature = await signatureOfRequest(
      deps.ledger.database,
      ctx,
      ENROLL_ACTION,
      rawBody(c),
      new Date().toISOString(),
    );
    const enrolled = await enrollSigningKey(deps.ledger, {
      identity: body.identity,
      publicKey: body.public_key,
      enrolledBy: ctx.caller.identity,
      ...(signature ? { signature } : {}),
    });
    const key = (await currentKeyHistory(deps.ledger.database)).signingKeys
      .all()
      .find((k) => k.keyId === enrolled.key_id);
    if (!key)
      throw new LedgerError(
        'SIGNATURE_INVALID',
        'the enrolment does not hold (see verification of the system log)',
      );
    return c.json(
      {
        key_id: key.keyId,
        identity: key.identity,
        public_key: formatAuthorPublicKey(key.publicKey),
        enrolled_at: iso(key.from),
        revoked_at: null,
      },
      201,
    );
  });
  app.openapi(list, async (c) => {
    const keys = (await currentKeyHistory(deps.ledger.database)).signingKeys.all();
    return c.json(
      {
        keys: keys.map((k) => ({
          key_id: k.keyId,
          identity: k.identity,
          public_key: formatAuthorPublicKey(k.publicKey),
          enrolled_at: iso(k.from),
          revoked_at: Number.isFinite(k.until) ? iso(k.until) : null,
        })),
      },
      200,
    );
  });
}
