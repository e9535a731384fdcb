import { z } from '@hono/zod-openapi';
import { LogIdSchema } from './common';

const HexHash = z.string().regex(/^[0-9a-f]{64}$/);
// A fresh schema per use: OpenAPI metadata (path vs optional query parameter) must not be shared.
const treeSize = () => z.coerce.number().int().min(0).max(Number.MAX_SAFE_INTEGER);

export const CheckpointSchema = z
  .object({
    log: z.string(),
    origin: z.string().openapi({ description: 'The checkpoint origin: `<VOUCH_LOG_ORIGIN>/<log>`' }),
    tree_size: z.number().int(),
    root_hash: HexHash.openapi({ description: 'RFC 9162 root over the first `tree_size` event hashes, hex' }),
    note: z.string().openapi({
      description:
        'The c2sp.org/tlog-checkpoint signed note, exactly as signed: what an auditor keeps and verifies with the log public key',
    }),
    created_at: z.string().openapi({ description: 'When it was stored (not covered by the signature)' }),
  })
  .openapi('Checkpoint');

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

export const InclusionProofSchema = z
  .object({
    log: z.string(),
    seq: z.number().int(),
    leaf_index: z.number().int(),
    tree_size: z.number().int(),
    proof: z
      .array(HexHash)
      .openapi({ description: 'RFC 9162 §2.1.3 inclusion path, lowest node first, hex' }),
  })
  .openapi('InclusionProof');

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

export const ConsistencyProofSchema = z
  .object({
    log: z.string(),
    first: z.number().int(),
    second: z.number().int(),
    proof: z.array(HexHash).openapi({ description: 'RFC 9162 §2.1.4 consistency proof, hex' }),
  })
  .openapi('ConsistencyProof');
