import { canonicalJson } from '@vouch/audit';

/**
 * The byte limit for a verification's input. A caller's body is bounded by `maxInputBytes`.
 * Checks the server's own verifier host ran are bounded by the host (each result at most the
 * SDK's `MAX_CHECK_RESULT_BYTES`, longer ones recorded as `RESULT_INVALID`) and do not count
 * against it: one verbose check must not turn the whole verification into a 413 and lose
 * every other check with it. The event's payload limit still bounds the record.
 */
export function verificationInputBytes(
  body: unknown,
  maxInputBytes: number,
  options: { checksRunByServer?: boolean },
): number {
  if (!options.checksRunByServer) return maxInputBytes;
  const checks = (body as { checks?: unknown } | null)?.checks;
  if (!Array.isArray(checks)) return maxInputBytes;
  try {
    return maxInputBytes + Buffer.byteLength(canonicalJson(checks), 'utf8');
  } catch {
    return maxInputBytes; // not JSON: parseInput reports it
  }
}
