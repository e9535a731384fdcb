import { z } from '@hono/zod-openapi';
import { checkpointSchema, consistencyProofSchema, inclusionProofSchema } from '@vouch/records';
import { LogIdSchema } from './common';
import { component } from './component';

// A fresh schema per use: OpenAPI metadata (path vs optional query parameter) must not be shared.
const treeSize = () => z.coerce.number().int().min(0).max(Number.MAX_SAFE_INTEGER);

export const CheckpointSchema = component(checkpointSchema, 'Checkpoint');

export const CheckpointParamSchema = z.object({
  log: LogIdSchema.clone().openapi({ param: { name: 'log', in: 'path' }, example: 'default' }),
  // A path segment is a string: a decimal without leading zeros, at most 16 digits.
  tree_size: z
    .string()
    .regex(/^(0|[1-9][0-9]{0,15})$/)
    .transform(Number)
    .openapi({ param: { name: 'tree_size', in: 'path' }, example: '42' }),
});

export const InclusionQuerySchema = z.strictObject({
  seq: z.coerce
    .number()
    .int()
    .min(1)
    .max(Number.MAX_SAFE_INTEGER)
    .openapi({ param: { name: 'seq', in: 'query' }, description: 'The event (leaf index = seq - 1)' }),
  tree_size: treeSize()
    .optional()
    .openapi({
      param: { name: 'tree_size', in: 'query' },
      description: 'The tree to prove inclusion in; default: the latest checkpoint',
    }),
});

export const InclusionProofSchema = component(inclusionProofSchema, 'InclusionProof');

export const ConsistencyQuerySchema = z.strictObject({
  first: z.coerce
    .number()
    .int()
    .min(1)
    .max(Number.MAX_SAFE_INTEGER)
    .openapi({
      param: { name: 'first', in: 'query' },
      description: 'The older tree size (your trusted checkpoint)',
    }),
  second: treeSize()
    .optional()
    .openapi({
      param: { name: 'second', in: 'query' },
      description: 'The newer tree size; default: the latest checkpoint',
    }),
});

export const ConsistencyProofSchema = component(consistencyProofSchema, 'ConsistencyProof');

export const CosignaturesBodySchema = z
  .strictObject({
    cosignatures: z.array(z.string().min(1).max(512)).min(1).max(32).openapi({
      description:
        "c2sp.org/tlog-cosignature signature lines (`— <witness name> <base64>`), as a witness's `add-checkpoint` answers them",
    }),
  })
  .openapi('CosignaturesBody');

export const CosignaturesAcceptedSchema = z
  .object({
    log: z.string(),
    tree_size: z.number().int(),
    accepted: z.number().int().openapi({ description: 'Lines that verified under a configured witness key' }),
    stored: z.number().int().openapi({ description: 'Of those, lines not kept before' }),
    note: z.string().openapi({ description: 'The checkpoint with every cosignature kept so far' }),
  })
  .openapi('CosignaturesAccepted');

export const BundleQuerySchema = z.strictObject({
  tree_size: treeSize()
    .optional()
    .openapi({
      param: { name: 'tree_size', in: 'query' },
      description: 'The checkpoint the bundle ends at (a stored one); default the latest',
    }),
});
