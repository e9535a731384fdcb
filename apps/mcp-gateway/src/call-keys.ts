import { deriveIdempotencyKey, type ExecuteAction, proposalPayloadOf } from '@vouch/client';

/**
 * Idempotency keys for calls through the gateway. MCP gives a call no key of its own, so the
 * gateway derives one from the action (same tool, same arguments, same target: same key)
 * plus a generation per action:
 *
 * - A call that is waiting for an approval keeps its key, so calling again with the same
 *   arguments continues that proposal and runs it once it is approved.
 * - A call that ran (or failed for good: denied, approval denied or expired) moves its action
 *   to the next generation, so the next identical call is a new action with its own
 *   decision, and its own approval when one is needed.
 * - A call that ended in an error (Vouch unreachable, observation not recorded) keeps its
 *   key, so the retry replays instead of running the tool a second time.
 *
 * `session` separates gateway processes: generations live in memory, and without it a
 * restarted gateway would replay results recorded by an earlier one.
 */
export interface CallKeys {
  /** The key for the next call of `action`. */
  keyFor(action: ExecuteAction): { key: string; settle: (finished: boolean) => void };
}

/** Build the key source for one gateway session. */
export function createCallKeys(session: string): CallKeys {
  const generations = new Map<string, number>();
  return {
    keyFor(action) {
      const payload = proposalPayloadOf(action);
      const base = deriveIdempotencyKey(payload, session);
      const generation = generations.get(base) ?? 0;
      return {
        key: deriveIdempotencyKey(payload, `${session}:${generation}`),
        settle(finished) {
          // Concurrent identical calls share one run and settle together: advance once.
          if (finished && (generations.get(base) ?? 0) === generation) generations.set(base, generation + 1);
        },
      };
    },
  };
}
