import { canonicalJson } from './canonical-json';
import { sha256Hex } from './sha256';

/**
 * What a gateway signs when it proposes and when it observes (docs/chain.md, "Records signed
 * by their authors"): the body it posts, with the one erasable member replaced by its hash.
 * The envelope a record keeps is stored whole and can never be erased, so it must not hold
 * the `arguments` or the `result` in clear. The client signs these and the server rebuilds
 * them from the body it received: both call these functions, so the two cannot drift apart.
 *
 * The hash is SHA-256 of the canonical JSON (RFC 8785), unsalted like the proposal's
 * `payload_hash`: a value from a small set (a yes/no, an amount) can be found by hashing
 * every candidate. The proposal's `payload_hash` already exposes its arguments so.
 */

type JsonBody = Record<string, unknown>;

/** The hex SHA-256 of the canonical JSON of an erasable member (`null` when absent). */
export const memberSha256 = (value: unknown): string => sha256Hex(canonicalJson(value ?? null));

/** The claims of `proposal.propose`: the proposal body with `arguments` replaced by `arguments_sha256`. */
export function proposalClaims(body: JsonBody): JsonBody {
  const { arguments: args, ...rest } = body;
  return { ...rest, arguments_sha256: memberSha256(args) };
}

/** The claims of `execution.observe`: the observation body with `result` replaced by `result_sha256`. */
export function observationClaims(body: JsonBody): JsonBody {
  const { result, ...rest } = body;
  return { ...rest, result_sha256: memberSha256(result) };
}
