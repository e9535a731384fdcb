import type { JsonObject, JsonValue } from './json';

/**
 * The records a verifier reads. They are the ledger's records as plain JSON (snake_case, as
 * stored), so the ledger, the HTTP API and the test harness can hand them over unchanged.
 * Extra fields are allowed: a verifier reads what it needs and ignores the rest.
 */

/** What an action touches: its kind (`payment`, `file`, `row`), its id, and the environment. */
export interface Target {
  readonly kind: string;
  readonly id: string;
  readonly env: string;
  readonly [key: string]: JsonValue;
}

/** A named condition on the world, with parameters: `{ name: 'refund.recorded', params: { refund_id } }`. */
export interface Postcondition {
  readonly name: string;
  readonly params?: JsonObject;
  /** `registry`: the operator's tool registration requires it; absent: the agent declared it. */
  readonly origin?: 'registry';
  /** The verifiers the operator lets prove it; absent: any. */
  readonly verifiers?: readonly string[];
}

/** A precondition has the same shape; it runs in the `pre` phase, before execution. */
export type Precondition = Postcondition;

/** What the agent proposed to do. A proposal is not a decision. */
export interface Proposal {
  readonly id: string;
  readonly action: string;
  readonly target: Target;
  readonly arguments: JsonObject;
  readonly postconditions: readonly Postcondition[];
  readonly preconditions?: readonly Precondition[];
  /** Who asked: an identity string or an identity object, as the gateway sent it. */
  readonly requester: JsonValue;
  /** The tool server that will perform the write. */
  readonly server_id: string;
  readonly tool_name: string;
  readonly [key: string]: unknown;
}

/** What the tool actually returned. A tool's output is not verified truth. */
export interface Observation {
  readonly id: string;
  readonly outcome: 'succeeded' | 'failed' | 'unknown';
  readonly result: JsonValue;
  /** The system that performed the write: a pass sourced here is not independent. */
  readonly server_id: string;
  readonly tool_name: string;
  readonly executed_by: JsonValue;
  /** Where `result` came from when it was not the tool's own answer: the gateway's claim, never a reason to discount a check. */
  readonly result_source?: string;
  readonly [key: string]: unknown;
}

/** `post` checks postconditions after execution; `pre` checks preconditions before it. */
export type VerifierPhase = 'pre' | 'post';
