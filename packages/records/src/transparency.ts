import { z } from 'zod';
import { hashSchema } from './fields';

/** A signed checkpoint of a log's Merkle tree, as the API answers with it. */
export const checkpointSchema = z.object({
  log: z.string(),
  origin: z.string().meta({ description: 'The checkpoint origin: `<VOUCH_LOG_ORIGIN>/<log>`' }),
  tree_size: z.number().int(),
  root_hash: hashSchema.meta({ description: 'RFC 9162 root over the first `tree_size` event hashes, hex' }),
  note: z.string().meta({
    description:
      'The c2sp.org/tlog-checkpoint signed note, exactly as signed: what an auditor keeps and verifies with the log public key',
  }),
  created_at: z.string().meta({ description: 'When it was stored (not covered by the signature)' }),
});
export type Checkpoint = z.output<typeof checkpointSchema>;

/** An inclusion proof of one event in a tree. */
export const inclusionProofSchema = z.object({
  log: z.string(),
  seq: z.number().int(),
  leaf_index: z.number().int(),
  tree_size: z.number().int(),
  proof: z.array(hashSchema).meta({ description: 'RFC 9162 §2.1.3 inclusion path, lowest node first, hex' }),
});
export type InclusionProof = z.output<typeof inclusionProofSchema>;

/** A consistency proof between two tree sizes. */
export const consistencyProofSchema = z.object({
  log: z.string(),
  first: z.number().int(),
  second: z.number().int(),
  proof: z.array(hashSchema).meta({ description: 'RFC 9162 §2.1.4 consistency proof, hex' }),
});
export type ConsistencyProof = z.output<typeof consistencyProofSchema>;
