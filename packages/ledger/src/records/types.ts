/**
 * The records, as stored and as hashed into their audit events: plain JSON, snake_case, the
 * same shapes `@vouch/verifier-sdk` reads. A record never carries its own `log` or event
 * seq: those belong to the event, and the event's payload is this object exactly.
 */

/** A JSON value: what arguments, results, evidence and impact estimates are made of. */
export type JsonValue = null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue };
/** A JSON object. */
export type JsonObject = { [key: string]: JsonValue };

/**
 * How much harm a tool call can do, least to most. The order matters: when a proposal and
 * the registry disagree, the stricter class applies.
 */
export const SIDE_EFFECT_CLASSES = ['read_only', 'idempotent', 'compensatable', 'irreversible'] as const;
/** One of {@link SIDE_EFFECT_CLASSES}. */
export type SideEffectClass = (typeof SIDE_EFFECT_CLASSES)[number];

/** What the policy concluded. Only `allow` and an approved `require_approval` can lead to execution. */
export type Verdict = 'allow' | 'deny' | 'repair' | 'require_approval';

/** What the tool call did, as far as the gateway knows; `unknown` (timeout) is never retried automatically. */
export type ObservationOutcome = 'succeeded' | 'failed' | 'unknown';

/** Derived from the verification checks, never supplied. */
export type VerificationStatus = 'passed' | 'failed' | 'inconclusive';

/** What is known about a proposal's result, derived from its records (`records/outcome.ts` says how). */
export type ProposalOutcome =
  | 'not_executed'
  | 'awaiting_verification'
  | 'awaiting_resolution'
  | 'verified'
  | 'verification_failed'
  | 'unverified';

/** What an action touches. `id` and `env` may be missing; the policy denies such a target as ambiguous. */
export interface Target {
  kind: string;
  id: string | null;
  env: string | null;
}

/** A named condition on the world with parameters, checked by a verifier. */
export interface Condition {
  name: string;
  params?: JsonObject;
}

/** A tool in the registry of one log. A new registration of the same tool is a new version. */
export interface ToolRecord {
  id: string;
  server_id: string;
  tool_name: string;
  version: number;
  side_effect: SideEffectClass;
  required_scopes: string[];
  /** `null`: the tool itself does not restrict environments (the caller's key still may). */
  allowed_environments: string[] | null;
  dry_run_tool: string | null;
  compensation_tool: string | null;
  approval_required: boolean;
  /** Whether a proposal must name the target's id; a missing one is an ambiguous target. */
  requires_target_id: boolean;
  /** Longest approval window this tool allows, in seconds; the shortest of all such rules wins. */
  max_approval_window_seconds: number | null;
  /** `discovery`: registered automatically from a tool list; discovery is not authorization. */
  source: 'manual' | 'discovery';
  registered_by: string;
  registered_at: string;
}

/** The part of a proposal an approver is shown; `payload_hash` is SHA-256 of its canonical JSON. */
export interface ProposalPayload {
  action: string;
  server_id: string;
  tool_name: string;
  target: Target;
  arguments: JsonObject;
  side_effect: SideEffectClass;
  preconditions: Condition[];
  postconditions: Condition[];
  /** Supplied by the gateway, e.g. a dry run's rows affected; null when none. */
  impact: JsonValue;
}

/** What an agent asked to do. A proposal is not a decision. */
export interface ProposalRecord extends ProposalPayload {
  id: string;
  idempotency_key: string;
  /** From the caller's API key, never from the request body. */
  requester: string;
  /** The scopes and environments of the requester's key when it proposed: the policy's inputs. */
  requester_scopes: string[];
  requester_environments: string[] | null;
  payload_hash: string;
  proposed_at: string;
}

/** One reason of a decision, with a stable code. */
export interface PolicyReason {
  code: string;
  /** What the reason does to the verdict; `note` changes nothing. */
  effect: 'deny' | 'repair' | 'require_approval' | 'allow' | 'note';
  message: string;
  details?: JsonObject;
}

/** A corrected action the gateway may propose instead; the original never becomes executable. */
export interface Repair {
  kind: 'dry_run_first' | 'pin_environment';
  action: string;
  server_id: string;
  tool_name: string;
  target: Target;
  arguments: JsonObject;
  message: string;
}

/** The verdict on one proposal, by the built-in policy or an external engine (`source`). */
export interface DecisionRecord {
  id: string;
  proposal_id: string;
  verdict: Verdict;
  reasons: PolicyReason[];
  repair: Repair | null;
  /** Who may execute: the requester for allow / require_approval, nobody otherwise. */
  authorized_identity: string | null;
  /** `built_in`, or the external engine's name as it posted the decision. */
  source: string;
  /** The tool registration the decision read, when there was one. */
  tool_id: string | null;
  /** The approval request this decision waits on (created or reused), for require_approval. */
  approval_request_id: string | null;
  decided_by: string;
  decided_at: string;
}

/** A request for a human to approve one payload of one requester on one server + tool. */
export interface ApprovalRequestRecord {
  id: string;
  proposal_id: string;
  payload_hash: string;
  requester: string;
  server_id: string;
  tool_name: string;
  environment: string | null;
  /** The request must be answered before this time. */
  expires_at: string;
  /** Longest window any rule allows for this request (tool or service), in seconds. */
  max_window_seconds: number;
  requested_at: string;
}

/** How long an approval lasts: one execution, or any number of the same payload within a window. */
export type ApprovalValidity = 'once' | 'window';

/** The answer to one approval request. A denial answers only that request. */
export interface ApprovalResolutionRecord {
  id: string;
  request_id: string;
  resolution: 'approved' | 'denied';
  resolver: string;
  validity: ApprovalValidity | null;
  window_seconds: number | null;
  /** Which rule set the window: the shortest wins (`approver`, `tool`, `service`). */
  window_source: string | null;
  valid_until: string | null;
  comment: string | null;
  resolved_at: string;
}

/** One execution under an approval; a `once` approval has at most one. */
export interface ApprovalUseRecord {
  id: string;
  request_id: string;
  resolution_id: string;
  proposal_id: string;
  /** Copied from the resolution so the database can allow one use of a `once` approval. */
  validity: ApprovalValidity;
  used_by: string;
  used_at: string;
}

/** What the tool really returned. A tool's output is not verified truth. */
export interface ObservationRecord {
  id: string;
  proposal_id: string;
  decision_id: string;
  approval_use_id: string | null;
  server_id: string;
  tool_name: string;
  executed_by: string;
  outcome: ObservationOutcome;
  result: JsonValue;
  /** The transport's status (e.g. HTTP 200), kept apart from the tool's own error flag. */
  transport_status: number | null;
  tool_error: boolean | null;
  started_at: string | null;
  finished_at: string | null;
  observed_at: string;
}

/** An execution the ledger refused to record as authorized; the attempt itself is evidence. */
export interface RefusedExecutionRecord {
  id: string;
  proposal_id: string;
  code: string;
  message: string;
  attempted_by: string;
  /** What the gateway posted, as it posted it. */
  attempted: JsonValue;
  refused_at: string;
}

/** One check of a verification, as counted (a check by the writer itself is `inconclusive`). */
export interface VerificationCheck {
  name: string;
  status: string;
  source: string | null;
  reason?: string | null;
  reported?: string;
  [key: string]: JsonValue | undefined;
}

/**
 * Why a verification record is `inconclusive` whatever its checks say: `OUTCOME_UNKNOWN`, the
 * tool's outcome was unknown (a timeout: it may still act) and had not settled yet.
 */
export type VerificationHold = 'OUTCOME_UNKNOWN';

/**
 * The checks on one observation and the status derived from them against the proposal's
 * declared postconditions. Records written before migration 0006 have none of the optional
 * fields; a field that does not apply is left out, never `null`, so a row rebuilds its
 * event's payload exactly.
 */
export interface VerificationRecord {
  id: string;
  observation_id: string;
  proposal_id: string;
  checks: VerificationCheck[];
  /** What these checks alone prove about the declared postconditions (see `verification_status` for the proposal's). */
  status: VerificationStatus;
  verifier: string;
  verified_at: string;
  /** Names of checks that answer no declared postcondition: kept, never counted. */
  undeclared?: string[];
  /** Present when the status is held at `inconclusive` whatever the checks say. */
  held?: VerificationHold;
  /** The verification records this re-verification replaces; they stay in the chain. */
  supersedes?: string[];
  /** Why it supersedes them; present exactly when `supersedes` is. */
  reason?: string;
}

/** The record kinds; each is also the `kind` of its audit event. */
export type RecordKind =
  | 'tool'
  | 'proposal'
  | 'decision'
  | 'approval_request'
  | 'approval_resolution'
  | 'approval_use'
  | 'observation'
  | 'execution_refused'
  | 'verification';

/**
 * Who is calling, as the API established it from the API key. Never taken from a request
 * body: a body can claim any identity.
 */
export interface Caller {
  identity: string;
  /** The key's scopes; the policy denies a tool whose required scopes are not all here. */
  scopes?: readonly string[];
  /** The environments the key may act in; `null` or absent: any. */
  environments?: readonly string[] | null;
}
