import { createHash, randomUUID } from 'node:crypto';
import { deriveIdempotencyKey, type ExecuteAction, payloadHashOf, proposalPayloadOf } from '@vouch/client';
import type { CallJournal } from './call-journal';

/** How a call ended, for what an identical call does next. */
export type CallEnd =
  /** Nothing ran and the call can go on (waiting for an approval or a decision, a precondition, Vouch unreachable). */
  | 'open'
  /** The tool may have run and its outcome is `unknown`: an identical call gets that record, not a second run. */
  | 'in_doubt'
  /** It ran, or was refused for good: the next identical call is a new call. */
  | 'finished'
  /** The agent cancelled it: the next identical call is a new call. */
  | 'cancelled';

/** The idempotency key of one call, and what to do once it ended. */
export interface CallKey {
  key: string;
  /** The agent named the call with its own key: the server alone decides what replays. */
  explicit: boolean;
  settle(end: CallEnd): void;
}

/**
 * Idempotency keys for calls through the gateway, for one agent. A replay is explicit: a
 * recorded result is given back only for the same agent and the same logical call.
 *
 * - An agent that names its call (`_meta["vouch.dev/idempotency_key"]`) gets a key derived
 *   from its name and that key only: the same key again is the same call (replayed once it
 *   ran), and the same key with other arguments is `IDEMPOTENCY_CONFLICT`. Not for a read.
 * - Otherwise every call is a new one, with a key of its own (random, never derived from the
 *   arguments alone), except that an identical call from the same agent goes on with a call
 *   that is still open: one waiting for an approval continues that proposal (and runs once
 *   approved), and one whose outcome is in doubt (or that was running when the gateway died)
 *   gets its `unknown` record instead of a second run. A read is never in doubt for this: the
 *   next read reads again.
 *
 * Open calls are kept in the journal, so with a file journal they carry over a restart.
 */
export interface CallKeys {
  keyFor(action: ExecuteAction, agentKey?: string): CallKey;
}

/** The keys of one agent (`agent`: its name over HTTP, `stdio` for the one agent on stdio). */
export function createCallKeys(options: { agent: string; journal: CallJournal }): CallKeys {
  const { agent, journal } = options;
  return {
    keyFor(action, agentKey) {
      const payload = proposalPayloadOf(action);
      const readOnly = action.side_effect === 'read_only';
      if (agentKey !== undefined && !readOnly) {
        return { key: explicitKey(agent, agentKey), explicit: true, settle: () => {} };
      }
      const base = digest(['call', agent, payloadHashOf(payload)]);
      const key = journal.continuation(base) ?? deriveIdempotencyKey(payload, `${agent}:${randomUUID()}`);
      // Carried from the start: if the gateway dies mid-call, the identical call after the
      // restart goes on with this one (and finds it in doubt) instead of running a second time.
      if (!readOnly) journal.carryOn(base, key);
      return {
        key,
        explicit: false,
        settle(end) {
          const carried = end === 'open' || (end === 'in_doubt' && !readOnly);
          if (carried) journal.carryOn(base, key);
          else journal.end(base, key);
        },
      };
    },
  };
}

/** An agent's key is its own: the same text from another agent is another key. */
function explicitKey(agent: string, agentKey: string): string {
  return `ik1_${digest(['agent-key', agent, agentKey])}`;
}

function digest(parts: string[]): string {
  return createHash('sha256').update(JSON.stringify(parts)).digest('hex');
}

/** The `_meta` key under which an agent names its call. */
export const IDEMPOTENCY_KEY_META = 'vouch.dev/idempotency_key';

/**
 * The key an agent sent with its request, if any. Bad keys are refused rather than ignored:
 * a call the agent meant to make idempotent must not silently become a new call each time.
 */
export function agentKeyOf(
  params: { _meta?: Record<string, unknown> } | undefined,
): string | undefined | Error {
  const value = params?._meta?.[IDEMPOTENCY_KEY_META];
  if (value === undefined) return undefined;
  if (typeof value !== 'string' || !/^[\x21-\x7e]{1,200}$/.test(value)) {
    return new Error(`${IDEMPOTENCY_KEY_META} must be 1 to 200 printable ASCII characters without spaces`);
  }
  return value;
}
