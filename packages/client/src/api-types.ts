/**
 * The Vouch HTTP API as this client speaks it: records, request bodies and answers, in the
 * server's own snake_case. Declared once, in `@vouch/records`, which the server validates
 * and documents with; this file only gives them the client's names. Every import is
 * `import type`: the client ships no zod.
 */
import type {
  ApproveInput,
  AuthorizeInput,
  DecisionInput,
  DenyInput,
  ObservationInput,
  ProposalInput,
  ToolDefinitionApprovalInput,
  ToolInput,
  VerificationInput,
} from '@vouch/records';

export type {
  ApiKey,
  ApprovalDetail,
  ApprovalPage,
  ApprovalRequestRecord,
  ApprovalResolutionRecord,
  ApprovalStatus,
  ApprovalUseRecord,
  ApprovalView,
  AuditEvent,
  Authorization,
  ChainFailure,
  ChainHead,
  ChainReport,
  CheckInput,
  Condition,
  CreatedKey,
  CreateKeyInput as CreateKeyBody,
  DecisionRecord,
  DecisionResult as DecideResponse,
  EffectiveVerification,
  EventPage,
  ExecutionClaimRecord,
  HostCheck,
  JsonObject,
  JsonValue,
  LogHead,
  LogList,
  ObservationOutcome,
  ObservationRecord,
  ObservationResult as ObserveResponse,
  PolicyReason,
  ProposalListError,
  ProposalListItem,
  ProposalOutcome,
  ProposalPage,
  ProposalPayload,
  ProposalRecord,
  ProposalResult as ProposeResponse,
  ProposalStage,
  ProposalStory,
  ProposalSummary,
  RecordedVerification,
  RedactionReport,
  RedactionRequest as RedactBody,
  RedactionResult,
  RegisteredTool as RegisterToolResponse,
  Repair,
  Role,
  SideEffectClass,
  Target,
  ToolRecord,
  Verdict,
  VerificationCheck,
  VerificationPage,
  VerificationRecord,
  VerificationStatus,
  VerificationStatusReason,
} from '@vouch/records';

// ---- request bodies: the records' inputs, less the id the URL carries ----------------------

/** `POST /v1/tools`: register a tool (admin). A class left out means `irreversible`. */
export type RegisterToolBody = ToolInput;
/** `POST /v1/tools/definition-approvals`: pin a tool's changed definition (admin). */
export type ApproveToolDefinitionBody = ToolDefinitionApprovalInput;
/** `POST /v1/proposals`: what a gateway proposes; the requester comes from its key. */
export type ProposeBody = ProposalInput;
/** `POST /v1/proposals/{id}/decision`: an external policy engine's verdict. */
export type DecideBody = Omit<DecisionInput, 'proposal_id'>;
/** `POST /v1/proposals/{id}/authorize`: the claim right before the tool call. */
export type AuthorizeBody = Omit<AuthorizeInput, 'proposal_id'>;
/** `POST /v1/approvals/{id}/approve`. */
export type ApproveBody = Omit<ApproveInput, 'request_id'>;
/** `POST /v1/approvals/{id}/deny`. */
export type DenyBody = Omit<DenyInput, 'request_id'>;
/** `POST /v1/observations`: what the tool really returned, posted once. */
export type ObserveBody = ObservationInput;
/** `POST /v1/verifications`: checks from an external verifier. */
export type PostVerificationBody = VerificationInput;
