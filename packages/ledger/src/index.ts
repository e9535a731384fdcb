/** Signed checkpoints: the store, the signer, the coalescing scheduler, and the log signing key. */

export type { ConflictKeys } from './batch-plan';
export { anyOf, selectRows } from './batched-sql';
export type { StoredCheckpoint } from './checkpoints/checkpoint-store';
export { checkpointAt, latestCheckpoint } from './checkpoints/checkpoint-store';
export type { Checkpointer, CheckpointerOptions } from './checkpoints/checkpointer';
export { createCheckpointer } from './checkpoints/checkpointer';
export type { SigningKeyFile } from './checkpoints/log-signing-key';
export {
  parseLogSigners,
  readOrCreateSigningKeyFile,
  SIGNING_KEY_FILE,
  verifierKeysOf,
} from './checkpoints/log-signing-key';
export type { CheckpointSigning } from './checkpoints/sign-log-checkpoint';
export { logOrigin, signLogCheckpoint } from './checkpoints/sign-log-checkpoint';
export type { Database, Db, OpenDatabaseOptions } from './database';
export { isDatabaseUnavailable, openDatabase, ping, redactUrl, sqlStateOf } from './database';
export type { LedgerErrorCode } from './errors';
export { isLedgerError, LEDGER_ERROR_CODES, LedgerError } from './errors';
export type { AppendInput, EventLimits } from './event-input';
export { identitiesCollide, identitySkeleton } from './identity/identity';
export type {
  IntegrityAlarm,
  IntegrityAlarmCode,
  IntegrityAlarmOptions,
  IntegrityAlarmReport,
  RaisedIntegrityAlarm,
} from './integrity-alarm';
export { createIntegrityAlarm } from './integrity-alarm';
export type { ApiKeyRecord, KeyProof } from './keys/api-key-events';
export { keyHashCommitment, SYSTEM_LOG } from './keys/api-key-events';
export type { FoundApiKey, IssueApiKeyInput } from './keys/api-keys';
export { countApiKeys, findApiKeysByHash, issueApiKey, listApiKeys, revokeApiKey } from './keys/api-keys';
export type { ApiKeyFailure, CheckApiKeyTablesOptions } from './keys/check-api-key-tables';
export { checkApiKeyTables } from './keys/check-api-key-tables';
export type {
  AppendHook,
  EventLink,
  Ledger,
  LedgerOptions,
  LedgerTransaction,
  StagedRow,
  StagingTransaction,
} from './ledger';
export { createLedger } from './ledger';
export { logExists, requireLog } from './log-exists';
/** Merkle storage: the append hook that keeps every complete subtree, and proofs read from it. */
export { merkleAppendHook } from './merkle/merkle-append-hook';
export {
  merkleConsistencyProof,
  merkleInclusionProof,
  merkleRoot,
  merkleTreeSize,
  storedSubtrees,
} from './merkle/merkle-proofs';
export { merkleRootFromEvents } from './merkle/recompute-root';
export { migrate, migrationStatus, migrationsFolder } from './migrate';
export type { ApprovalCheck, ApprovalRefusalCode, WindowRule } from './policy/approval-validity';
export { checkApproval, isReusableRequest, shortestWindow } from './policy/approval-validity';
export type { PolicyInput, PolicyReasonCode, PolicyResult } from './policy/built-in-policy';
export { evaluatePolicy, POLICY_REASON_CODES } from './policy/built-in-policy';
export type { CheckRecordTablesOptions, RecordFailure } from './records/check-record-tables';
export { checkRecordTables } from './records/check-record-tables';
export type {
  ApprovalView,
  Authorization,
  ProposalResult,
  ProposalStory,
  RecordContext,
  RecordedVerification,
  Records,
  RecordsOptions,
  RecordVerificationOptions,
} from './records/create-records';
export { createRecords } from './records/create-records';
export type {
  ApproveInput,
  AuthorizeInput,
  CheckInput,
  DecisionInput,
  DenyInput,
  ObservationInput,
  ProposalInput,
  ReverificationInput,
  ToolInput,
  VerificationInput,
} from './records/inputs';
export {
  approveInputSchema,
  authorizeInputSchema,
  checkInputSchema,
  DEFAULT_MAX_INPUT_BYTES,
  decisionInputSchema,
  denyInputSchema,
  observationInputSchema,
  proposalInputSchema,
  reverificationInputSchema,
  toolInputSchema,
  verificationInputSchema,
} from './records/inputs';
export type { ProposalStage, StageApproval } from './records/outcome';
export { deriveOutcome, deriveStage, PROPOSAL_OUTCOMES, PROPOSAL_STAGES } from './records/outcome';
export { proposalPayloadHash, proposalPayloadOf } from './records/payload-hash';
export type { ApprovalStatus } from './records/queries';
export type { IntegrityViolation } from './records/record-integrity';
export type {
  ApprovalRequestRecord,
  ApprovalResolutionRecord,
  ApprovalUseRecord,
  ApprovalValidity,
  Caller,
  Condition,
  DecisionRecord,
  ObservationOutcome,
  ObservationRecord,
  PolicyReason,
  ProposalOutcome,
  ProposalPayload,
  ProposalRecord,
  RecordKind,
  RefusedExecutionRecord,
  Repair,
  SideEffectClass,
  Target,
  ToolRecord,
  Verdict,
  VerificationCheck,
  VerificationHold,
  VerificationRecord,
  VerificationStatus,
} from './records/types';
export { SIDE_EFFECT_CLASSES } from './records/types';
export type {
  EffectiveVerification,
  PostconditionVerdict,
  VerificationStatusReason,
} from './records/verification-status';
export { effectiveVerification } from './records/verification-status';
export type { RoleStatus, RuntimeRoleOptions } from './runtime-role';
export {
  assertMigrationsCurrent,
  checkRuntimeRole,
  grantRuntimeRole,
  postgresReason,
  roleStatus,
} from './runtime-role';
export { apiKeyRevocations, apiKeys, auditEvents, checkpoints, merkleNodes } from './schema/index';
export type { LogVerificationReport, TableCheck, VerifyChainOptions } from './verify-chain';
export { DEFAULT_TABLE_CHECKS, verifyChain } from './verify-chain';
export type { CheckpointKeys } from './verify-checkpoints';
export { checkStoredCheckpoint } from './verify-checkpoints';
