/** The Vouch API's records, request bodies and answers, as this client speaks them. */
export type {
  ApiKey,
  ApprovalDetail,
  ApprovalPage,
  ApprovalRequestRecord,
  ApprovalResolutionRecord,
  ApprovalStatus,
  ApprovalUseRecord,
  ApprovalView,
  ApproveBody,
  AuditEvent,
  Authorization,
  AuthorizeBody,
  ChainFailure,
  ChainHead,
  ChainReport,
  CheckInput,
  Condition,
  CreateKeyBody,
  DecideBody,
  DecideResponse,
  DecisionRecord,
  DenyBody,
  EffectiveVerification,
  EventPage,
  JsonObject,
  JsonValue,
  ObservationOutcome,
  ObservationRecord,
  ObserveBody,
  ObserveResponse,
  PolicyReason,
  PostVerificationBody,
  ProposalOutcome,
  ProposalPayload,
  ProposalRecord,
  ProposalStage,
  ProposalStory,
  ProposeBody,
  ProposeResponse,
  RecordedVerification,
  RegisterToolBody,
  RegisterToolResponse,
  Repair,
  Role,
  RouteContract,
  SideEffectClass,
  Target,
  ToolRecord,
  Verdict,
  VerificationCheck,
  VerificationRecord,
  VerificationStatus,
  VerificationStatusReason,
} from './api-types';
/** Every route the client calls, for contract tests against the server's OpenAPI document. */
export { API_CONTRACT, PROPOSAL_OUTCOMES, PROPOSAL_STAGES } from './api-types';
/** Whether an approval authorizes a proposal now, as the client checks before invoking. */
export type { ApprovalState } from './approval-state';
export { approvalStateOf } from './approval-state';
/** The client and its options. */
export type { CallOptions, VouchClient, VouchClientOptions } from './client';
export { createVouchClient } from './client';
/** The one error class, its codes, and how to recognize it. */
export type {
  ClientErrorCode,
  ServerErrorCode,
  VouchClientErrorCode,
  VouchClientErrorOptions,
} from './errors';
export {
  CLIENT_ERROR_CODES,
  isServerErrorCode,
  isVouchClientError,
  SERVER_ERROR_CODES,
  VouchClientError,
} from './errors';
/** The execute flow's inputs and results. */
export type {
  DeniedResult,
  ExecuteAction,
  ExecutedResult,
  ExecuteOptions,
  ExecuteResult,
  ExecutionJournal,
  Invoke,
  InvokeContext,
  NotAuthorizedCode,
  NotAuthorizedResult,
  Observed,
  PendingResult,
  PreconditionFailedResult,
  RepairResult,
  WaitOptions,
} from './execute';
/** Transport options. */
export type { HttpOptions, RetryOptions, RetryPolicy } from './http';
/** Payload hashing and deterministic idempotency keys, computed like the server computes them. */
export { deriveIdempotencyKey, payloadHashOf, proposalPayloadOf } from './idempotency-key';
