import { z } from 'zod';

/**
 * What a key may do. A key holds one or more roles; no role implies another, so an admin
 * who registers tools cannot approve a payload, and a gateway that proposes cannot decide.
 *
 * - `gateway`: propose, observe, ask for verification, read the stories it wrote.
 * - `policy`: record the decision of an external policy engine (a proposal is not a decision,
 *   so the gateway that proposed may not decide).
 * - `approver`: see pending approvals with their exact payload, approve or deny.
 * - `verifier`: post checks from an external verifier, run the configured verifiers.
 * - `auditor`: read everything, verify the chain, export a log.
 * - `admin`: register tools, create and revoke keys.
 * - `redactor`: erase fields of field-committed events (an erasure request), and nothing
 *   else: not the auditor, who must be able to trust that evidence stays; not the audited
 *   gateway; not the admin, whose keys and tools are not personal data. Every erasure is
 *   itself an `event.redacted` event naming the key's identity.
 */
export const ROLES = ['gateway', 'policy', 'approver', 'verifier', 'auditor', 'admin', 'redactor'] as const;
/** One role a key can hold (see {@link ROLES}). */
export type Role = (typeof ROLES)[number];

/** A JSON Pointer-free identity: `agent:…`, `service:…`, `user:…`. */
export const identityInput = z
  .string()
  .regex(/^(agent|service|user):[A-Za-z0-9._@+-]{1,200}$/)
  .meta({ example: 'user:alice', description: '`agent:…`, `service:…` or `user:…`' });

/** A log id, as the ledger accepts it. */
export const logIdInput = z
  .string()
  .regex(/^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$/)
  .meta({ example: 'default', description: 'Log id: 1-128 letters, digits and . _ : -' });

const environmentInput = z
  .string()
  .regex(/^[a-z0-9][a-z0-9_-]{0,63}$/)
  .meta({ example: 'staging' });

/** `POST /v1/keys` (admin). */
export const createKeyInputSchema = z.strictObject({
  identity: identityInput,
  roles: z.array(z.enum(ROLES)).min(1).max(ROLES.length),
  /** Scopes a tool may require, e.g. `billing:write`. */
  scopes: z
    .array(z.string().regex(/^[A-Za-z0-9][A-Za-z0-9._:*-]{0,127}$/))
    .max(64)
    .optional()
    .meta({ description: 'Scopes a tool may require, e.g. `billing:write`', example: ['billing:write'] }),
  environments: z
    .array(environmentInput)
    .min(1)
    .max(32)
    .nullable()
    .optional()
    .meta({ description: 'Limit the key to these environments; omit or null for any.' }),
  logs: z
    .array(logIdInput)
    .min(1)
    .max(32)
    .nullable()
    .optional()
    .meta({ description: 'Limit the key to these logs; omit or null for any.' }),
});
export type CreateKeyInput = z.input<typeof createKeyInputSchema>;

/** An API key as listed (never its secret). */
export const apiKeySchema = z.object({
  id: z.string().meta({ example: 'key_3q2-7wVj0p8xW5aH' }),
  identity: z.string(),
  roles: z.array(z.enum(ROLES)),
  scopes: z.array(z.string()),
  environments: z.array(z.string()).nullable(),
  logs: z.array(z.string()).nullable(),
  created_by: z.string(),
  created_at: z.string(),
  revoked_at: z.string().nullable(),
  /** When the key stops authenticating (a rotation's grace period, in the chain); null: never. */
  expires_at: z.string().nullable(),
});
export type ApiKey = z.output<typeof apiKeySchema>;

/** `POST /v1/keys`: the key, and its secret shown this once. */
export const createdKeySchema = z.object({
  key: apiKeySchema,
  secret: z.string().meta({ description: 'The API key. Shown this once; only its SHA-256 is stored.' }),
});
export type CreatedKey = z.output<typeof createdKeySchema>;

/** `GET /v1/keys`. */
export const apiKeyListSchema = z.object({ keys: z.array(apiKeySchema) });
export type ApiKeyList = z.output<typeof apiKeyListSchema>;

/** `POST /v1/keys/{id}/revoke`: the key as it is now. */
export const revokedKeySchema = z.object({ key: apiKeySchema });
export type RevokedKey = z.output<typeof revokedKeySchema>;
