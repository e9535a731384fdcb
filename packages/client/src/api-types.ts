/**
 * The Vouch HTTP API as this client speaks it: records, request bodies and answers, in the
 * server's own snake_case. Written by hand in this one file because the client must not
 * import the server (it runs in browsers); `test/mcp-gateway-client-openapi.test.ts` walks
 * the server's `GET /openapi.json` and fails when a route, a field the client sends, or a
 * field the client reads is missing there. {@link API_CONTRACT} below is what it compares,
 * and the `satisfies` clauses tie that list to these types at compile time.
 */

/** A JSON value: what arguments, results, evidence and impact estimates are made of. */
export type JsonValue = null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue };
/** A JSON object. */
export type JsonObject = { [key: string]: JsonValue };

/** How much harm a tool call can do, least to most. */
export type SideEffectClass = 'read_only' | 'idempotent' | 'compensatable' | 'irreversible';
/** What the policy concluded. Only `allow` and an approved `require_approval` lead to execution. */
export type Verdict = 'allow' | 'deny' | 'repair' | 'require_approval';
/** What the tool call did as far as the gateway knows; `unknown` (timeout) is never retried. */
export type ObservationOutcome = 'succeeded' | 'failed' | 'unknown';
/** Derived by the server from the checks, never supplied. */
export type VerificationStatus = 'passed' | 'failed' | 'inconclusive';
/**
 * What is known about a proposal's result: `not_executed`; executed and `awaiting_verification`,
 * or `awaiting_resolution` (outcome `unknown`); then `verified`, `verification_failed` or
 * `unverified` (the verification was inconclusive). The server's OpenAPI document describes each.
 */
export const PROPOSAL_OUTCOMES = [
  'not_executed',
  'awaiting_verification',
  'awaiting_resolution',
  'verified',
  'verification_failed',
  'unverified',
] as const;
/** One of {@link PROPOSAL_OUTCOMES}. */
export type ProposalOutcome = (typeof PROPOSAL_OUTCOMES)[number];
/** How far a proposal got on its way to execution; `outcome` says what is known about the result. */
export const PROPOSAL_STAGES = [
  'awaiting_decision',
  'denied',
  'repair_proposed',
  'awaiting_approval',
  'approval_denied',
  'approval_expired',
  'approval_used',
  'authorized',
  'execution_refused',
  'executed',
] as const;
/** One of {@link PROPOSAL_STAGES}. */
export type ProposalStage = (typeof PROPOSAL_STAGES)[number];
/** A key's role. */
export type Role = 'gateway' | 'policy' | 'approver' | 'verifier' | 'auditor' | 'admin';

/** What an action touches; a missing `id` or `env` is an ambiguous target, which policy denies. */
export interface Target {
  kind: string;
  id: string | null;
  env: string | null;
}

/** A named condition on the world, checked by a verifier. */
export interface Condition {
  name: string;
  params?: JsonObject;
}

/** A tool in the registry of one log. */
export interface ToolRecord {
  id: string;
  server_id: string;
  tool_name: string;
  version: number;
  side_effect: SideEffectClass;
  required_scopes: string[];
  allowed_environments: string[] | null;
  dry_run_tool: string | null;
  compensation_tool: string | null;
  approval_required: boolean;
  requires_target_id: boolean;
  max_approval_window_seconds: number | null;
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
  impact: JsonValue;
}

/** What an agent asked to do. A proposal is not a decision. */
export interface ProposalRecord extends ProposalPayload {
  id: string;
  idempotency_key: string;
  requester: string;
  requester_scopes: string[];
  requester_environments: string[] | null;
  payload_hash: string;
  proposed_at: string;
}

/** One reason of a decision, with a stable code. */
export interface PolicyReason {
  code: string;
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

/** The verdict on one proposal. */
export interface DecisionRecord {
  id: string;
  proposal_id: string;
  verdict: Verdict;
  reasons: PolicyReason[];
  repair: Repair | null;
  authorized_identity: string | null;
  source: string;
  tool_id: string | null;
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
  expires_at: string;
  max_window_seconds: number;
  requested_at: string;
}

/** The answer to one approval request. */
export interface ApprovalResolutionRecord {
  id: string;
  request_id: string;
  resolution: 'approved' | 'denied';
  resolver: string;
  validity: 'once' | 'window' | null;
  window_seconds: number | null;
  window_source: string | null;
  valid_until: string | null;
  comment: string | null;
  resolved_at: string;
}

/** One execution under an approval, claimed by `authorize` right before the tool call. */
export interface ApprovalUseRecord {
  id: string;
  request_id: string;
  resolution_id: string;
  proposal_id: string;
  validity: 'once' | 'window';
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
  transport_status: number | null;
  tool_error: boolean | null;
  started_at: string | null;
  finished_at: string | null;
  observed_at: string;
}

/** One check of a verification, as counted by the server. */
export interface VerificationCheck {
  name: string;
  status: string;
  source: string | null;
  reason?: string | null;
  [key: string]: JsonValue | undefined;
}

/** The checks on one observation and what they alone prove about the declared postconditions. */
export interface VerificationRecord {
  id: string;
  observation_id: string;
  proposal_id: string;
  checks: VerificationCheck[];
  /** This record's status; the proposal's is `verification_status`. */
  status: VerificationStatus;
  verifier: string;
  verified_at: string;
  /** Names of checks that answer no declared postcondition: kept, never counted. */
  undeclared?: string[];
  /** Held at inconclusive: the tool's outcome was unknown (timeout) and had not settled. */
  held?: 'OUTCOME_UNKNOWN';
  /** The records this re-verification replaces; they stay in the chain. */
  supersedes?: string[];
  /** Why it supersedes them. */
  reason?: string;
}

/** Why a proposal's verification status is not definitive yet. */
export type VerificationStatusReason = 'NOT_VERIFIED' | 'NO_POSTCONDITIONS' | 'OUTCOME_UNKNOWN' | 'UNPROVEN';

/** A proposal's status, derived from every verification record not superseded, per declared postcondition. */
export interface EffectiveVerification {
  status: VerificationStatus;
  /** Why it is inconclusive; null when definitive. */
  reason: VerificationStatusReason | null;
  postconditions: Array<{ name: string; status: VerificationStatus; decided_by: string[] }>;
  superseded: Array<{ id: string; by: string }>;
  /** For an unknown outcome: from when a verification can be definitive. */
  settles_at: string | null;
}

/** `POST /v1/verifications` and `/v1/observations/{id}/verify`: the new record and the proposal's status. */
export interface RecordedVerification extends VerificationRecord {
  verification_status: EffectiveVerification;
}

/** Where an approval request stands, as the server derives it (`used`: a single-use approval was used). */
export type ApprovalStatus = 'pending' | 'approved' | 'denied' | 'expired' | 'used';

/** An approval request with its answer, its uses and the proposal it was opened for. */
export interface ApprovalView {
  request: ApprovalRequestRecord;
  resolution: ApprovalResolutionRecord | null;
  uses: ApprovalUseRecord[];
  status: ApprovalStatus;
  proposal: ProposalRecord;
}

/** What an approver is shown: the view plus exactly what will run, and its canonical bytes. */
export interface ApprovalDetail extends ApprovalView {
  payload: ProposalPayload;
  /** RFC 8785 canonical JSON of `payload`: SHA-256 of these bytes is `request.payload_hash`. */
  canonical_payload: string;
}

/** One audit event as stored and exported; `payload` is the canonical JSON text that was hashed. */
export interface AuditEvent {
  log: string;
  seq: number;
  kind: string;
  entity: string;
  actor: string;
  at: string;
  payload: string;
  payload_hash: string;
  prev_hash: string;
  hash: string;
}

/** A log's head: its last seq and hash. */
export interface ChainHead {
  seq: number;
  hash: string;
}

/** One break the chain verification found. */
export interface ChainFailure {
  seq: number;
  code: string;
  message: string;
  [key: string]: unknown;
}

/** The chain verification report of one log. */
export interface ChainReport {
  ok: boolean;
  log: string;
  checked: number;
  head: ChainHead | null;
  failures: ChainFailure[];
  failuresOmitted?: number;
  /** Merkle nodes the server recomputed from the event hashes, each compared with its stored row. */
  merkle: { nodes: number };
  /** Stored checkpoints compared with the recomputed roots, and whether their signatures were checked. */
  checkpoints: { checked: number; signatures: 'verified' | 'not_checked' };
}

/** An API key as listed (never its secret). */
export interface ApiKey {
  id: string;
  identity: string;
  roles: Role[];
  scopes: string[];
  environments: string[] | null;
  logs: string[] | null;
  created_by: string;
  created_at: string;
  revoked_at: string | null;
}

// ---- request bodies -------------------------------------------------------------------

/** `POST /v1/tools`: register a tool (admin). A class left out means `irreversible`. */
export interface RegisterToolBody {
  /** Required to change a manual registration: the version it replaces. */
  replaces_version?: number;
  server_id: string;
  tool_name: string;
  side_effect?: SideEffectClass;
  required_scopes?: string[];
  allowed_environments?: string[] | null;
  dry_run_tool?: string | null;
  compensation_tool?: string | null;
  approval_required?: boolean;
  requires_target_id?: boolean;
  max_approval_window_seconds?: number | null;
  source?: 'manual' | 'discovery';
}

/** `POST /v1/proposals`: what a gateway proposes; the requester comes from its key. */
export interface ProposeBody {
  idempotency_key: string;
  action: string;
  server_id: string;
  tool_name: string;
  target: { kind: string; id?: string | null; env?: string | null };
  arguments: JsonObject;
  side_effect: SideEffectClass;
  preconditions?: Condition[];
  postconditions?: Condition[];
  impact?: JsonValue;
}

/** `POST /v1/proposals/{id}/decision`: an external policy engine's verdict. */
export interface DecideBody {
  verdict: Verdict;
  reasons: PolicyReason[];
  source: string;
  repair?: Repair | null;
  authorized_identity?: string | null;
}

/** `POST /v1/proposals/{id}/authorize`: the claim right before the tool call. */
export interface AuthorizeBody {
  approval_request_id?: string;
  /** Hash of the payload about to run; the server refuses one that is not the approved one. */
  payload_hash?: string;
}

/** `POST /v1/approvals/{id}/approve`. */
export interface ApproveBody {
  validity?: 'once' | 'window';
  window_seconds?: number | null;
  comment?: string | null;
}

/** `POST /v1/approvals/{id}/deny`. */
export interface DenyBody {
  comment?: string | null;
}

/** `POST /v1/observations`: what the tool really returned, posted once. */
export interface ObserveBody {
  proposal_id: string;
  outcome: ObservationOutcome;
  result?: JsonValue;
  transport_status?: number | null;
  tool_error?: boolean | null;
  started_at?: string | null;
  finished_at?: string | null;
  /** The payload hash of what was executed; the server refuses one that is not the proposal's. */
  payload_hash?: string;
  /** The approval request the execution ran under. */
  approval_request_id?: string;
}

/** One check as an external verifier posts it; the status of the verification is derived. */
export interface CheckInput {
  name: string;
  status: 'pass' | 'fail' | 'inconclusive' | 'error';
  source: string | null;
  reason?: string | null;
  [key: string]: JsonValue | undefined;
}

/** `POST /v1/verifications`: checks from an external verifier. */
export interface PostVerificationBody {
  observation_id: string;
  checks: CheckInput[];
  /** A re-verification: the records it supersedes (with `reason`; a verifier that is not the audited party). */
  supersedes?: string[];
  reason?: string;
}

/** `POST /v1/keys` (admin). */
export interface CreateKeyBody {
  identity: string;
  roles: Role[];
  /** Scopes a tool may require, e.g. `billing:write`. */
  scopes?: string[];
  environments?: string[] | null;
  logs?: string[] | null;
}

// ---- answers ----------------------------------------------------------------------------

/** `POST /v1/tools`. */
export interface RegisterToolResponse {
  tool: ToolRecord;
  /** The same registration (or a discovery of a registered tool): the stored one, unchanged. */
  replayed: boolean;
}

/** `POST /v1/proposals`: the proposal and its decision (null while an external engine decides). */
export interface ProposeResponse {
  proposal: ProposalRecord;
  decision: DecisionRecord | null;
  /** The approval request the decision waits on, for `require_approval`. */
  approval: ApprovalRequestRecord | null;
  /** True when the idempotency key matched an earlier proposal: nothing new was written. */
  replayed: boolean;
}

/** `GET /v1/proposals/{id}`: the whole story of one proposal. */
export interface ProposalStory {
  proposal: ProposalRecord;
  decision: DecisionRecord | null;
  approval: ApprovalView | null;
  observation: ObservationRecord | null;
  /** Executions the ledger refused; each attempt is kept as evidence. */
  refusals: JsonObject[];
  /** Every verification record, superseded ones included, in chain order. */
  verifications: VerificationRecord[];
  /** The latest record, not the status: see `verification_status`. */
  verification: VerificationRecord | null;
  /** The status derived from all the records; `outcome` follows it. */
  verification_status: EffectiveVerification;
  outcome: ProposalOutcome;
  stage: ProposalStage;
  events: AuditEvent[];
}

/** `POST /v1/proposals/{id}/decision`. */
export interface DecideResponse {
  decision: DecisionRecord;
  approval: ApprovalRequestRecord | null;
}

/** `POST /v1/proposals/{id}/authorize`: execute now. */
export interface Authorization {
  proposal: ProposalRecord;
  decision: DecisionRecord;
  /** The approval use claimed for this execution, for `require_approval`. */
  approval_use: ApprovalUseRecord | null;
  /** The precondition checks, when the proposal has preconditions. */
  preconditions: { status: VerificationStatus; checks: VerificationCheck[] } | null;
}

/** `GET /v1/approvals`. */
export interface ApprovalPage {
  approvals: ApprovalDetail[];
  /** Pass as `after` for the next page; null at the end. */
  next: number | null;
}

/** `POST /v1/observations`. */
export interface ObserveResponse {
  observation: ObservationRecord;
  /** True when an observation for this proposal already existed; it is returned unchanged. */
  replayed: boolean;
}

/** `GET /v1/logs/{log}/events`. */
export interface EventPage {
  log: string;
  events: AuditEvent[];
  next_after: number | null;
}

// ---- the contract the OpenAPI test walks -------------------------------------------------

type Keys<T> = readonly (keyof T & string)[];

/** One route the client calls, the body fields it sends and the answer fields it reads. */
export interface RouteContract {
  method: 'get' | 'post';
  path: string;
  /** Every field of the request body this client can send. */
  body?: readonly string[];
  /** The status codes the client treats as success. */
  success: readonly number[];
  /** Top-level answer fields this client reads. */
  reads?: readonly string[];
}

/**
 * Every route `createVouchClient` calls. The `satisfies` clauses make the compiler refuse a
 * field here that the types above do not have, so this list cannot drift from the types;
 * the contract test makes sure the server has each of them.
 */
export const API_CONTRACT = {
  registerTool: {
    method: 'post',
    path: '/v1/tools',
    body: [
      'server_id',
      'tool_name',
      'side_effect',
      'required_scopes',
      'allowed_environments',
      'dry_run_tool',
      'compensation_tool',
      'approval_required',
      'requires_target_id',
      'max_approval_window_seconds',
      'source',
      'replaces_version',
    ] satisfies Keys<RegisterToolBody>,
    success: [200, 201],
    reads: ['tool', 'replayed'] satisfies Keys<RegisterToolResponse>,
  },
  listTools: { method: 'get', path: '/v1/tools', success: [200], reads: ['tools'] },
  propose: {
    method: 'post',
    path: '/v1/proposals',
    body: [
      'idempotency_key',
      'action',
      'server_id',
      'tool_name',
      'target',
      'arguments',
      'side_effect',
      'preconditions',
      'postconditions',
      'impact',
    ] satisfies Keys<ProposeBody>,
    success: [200, 201, 202],
    reads: ['proposal', 'decision', 'approval', 'replayed'] satisfies Keys<ProposeResponse>,
  },
  getProposal: {
    method: 'get',
    path: '/v1/proposals/{id}',
    success: [200],
    reads: [
      'proposal',
      'decision',
      'approval',
      'observation',
      'verification',
      'verification_status',
    ] satisfies Keys<ProposalStory>,
  },
  decide: {
    method: 'post',
    path: '/v1/proposals/{id}/decision',
    body: ['verdict', 'reasons', 'source', 'repair', 'authorized_identity'] satisfies Keys<DecideBody>,
    success: [201],
    reads: ['decision', 'approval'] satisfies Keys<DecideResponse>,
  },
  authorize: {
    method: 'post',
    path: '/v1/proposals/{id}/authorize',
    body: ['approval_request_id', 'payload_hash'] satisfies Keys<AuthorizeBody>,
    success: [200],
    reads: ['proposal', 'decision', 'approval_use', 'preconditions'] satisfies Keys<Authorization>,
  },
  listApprovals: {
    method: 'get',
    path: '/v1/approvals',
    success: [200],
    reads: ['approvals', 'next'] satisfies Keys<ApprovalPage>,
  },
  getApproval: {
    method: 'get',
    path: '/v1/approvals/{id}',
    success: [200],
    reads: [
      'request',
      'resolution',
      'uses',
      'status',
      'proposal',
      'payload',
      'canonical_payload',
    ] satisfies Keys<ApprovalDetail>,
  },
  approve: {
    method: 'post',
    path: '/v1/approvals/{id}/approve',
    body: ['validity', 'window_seconds', 'comment'] satisfies Keys<ApproveBody>,
    success: [200],
    reads: ['request', 'resolution', 'status'] satisfies Keys<ApprovalDetail>,
  },
  deny: {
    method: 'post',
    path: '/v1/approvals/{id}/deny',
    body: ['comment'] satisfies Keys<DenyBody>,
    success: [200],
    reads: ['request', 'resolution', 'status'] satisfies Keys<ApprovalDetail>,
  },
  observe: {
    method: 'post',
    path: '/v1/observations',
    body: [
      'proposal_id',
      'outcome',
      'result',
      'transport_status',
      'tool_error',
      'started_at',
      'finished_at',
      'payload_hash',
      'approval_request_id',
    ] satisfies Keys<ObserveBody>,
    success: [200, 201],
    reads: ['observation', 'replayed'] satisfies Keys<ObserveResponse>,
  },
  verifyObservation: {
    method: 'post',
    path: '/v1/observations/{id}/verify',
    success: [201],
    reads: ['id', 'status', 'checks', 'verification_status'] satisfies Keys<RecordedVerification>,
  },
  postVerification: {
    method: 'post',
    path: '/v1/verifications',
    body: ['observation_id', 'checks', 'supersedes', 'reason'] satisfies Keys<PostVerificationBody>,
    success: [201],
    reads: ['id', 'status', 'checks', 'verification_status'] satisfies Keys<RecordedVerification>,
  },
  listEvents: {
    method: 'get',
    path: '/v1/logs/{log}/events',
    success: [200],
    reads: ['log', 'events', 'next_after'] satisfies Keys<EventPage>,
  },
  logHead: { method: 'get', path: '/v1/logs/{log}/head', success: [200], reads: ['log', 'head'] },
  verifyLog: {
    method: 'get',
    path: '/v1/logs/{log}/verify',
    success: [200],
    reads: ['ok', 'log', 'checked', 'head', 'failures'] satisfies Keys<ChainReport>,
  },
  exportLog: { method: 'get', path: '/v1/logs/{log}/export', success: [200] },
  createKey: {
    method: 'post',
    path: '/v1/keys',
    body: ['identity', 'roles', 'scopes', 'environments', 'logs'] satisfies Keys<CreateKeyBody>,
    success: [201],
    reads: ['key', 'secret'],
  },
} as const satisfies Record<string, RouteContract>;
