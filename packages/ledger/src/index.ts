/**
 * The ledger's public surface: what the API, the CLI, the gateway's end-to-end tests and the
 * benchmarks use. Tables, SQL helpers and the pieces the ledger is built from are not
 * exported; tests reach for `@vouch/ledger/testing`, the benchmarks for
 * `@vouch/ledger/internal/benchmark`.
 */

// The append-only ledger, its logs, and its verification against the database.
export type { ConflictKeys } from './batch-plan';
export { OPERATOR_ACTOR, REDACT_ACTION } from './check-redaction-rules';
// Signed checkpoints: the store, the signer, the coalescing scheduler, and the log signing key.
export type { CheckpointState, SavedCheckpoint } from './checkpoints/checkpoint-state';
export {
  CHECKPOINT_STATE_FORMAT,
  checkpointStateDir,
  defaultCheckpointStateDir,
  keptCheckpointOf,
} from './checkpoints/checkpoint-state';
export type { StoredCheckpoint } from './checkpoints/checkpoint-store';
export { checkpointAt, latestCheckpoint } from './checkpoints/checkpoint-store';
export type { Checkpointer, CheckpointerOptions } from './checkpoints/checkpointer';
export { createCheckpointer } from './checkpoints/checkpointer';
export type { StoredCosignature } from './checkpoints/cosignature-store';
export { cosignaturesAt, storeCosignatures } from './checkpoints/cosignature-store';
export type { SigningKeyFile } from './checkpoints/log-signing-key';
export {
  parseLogSigners,
  readOrCreateSigningKeyFile,
  SIGNING_KEY_FILE,
  verifierKeysOf,
} from './checkpoints/log-signing-key';
export type { SavedComparison } from './checkpoints/saved-state-guard';
export { compareWithSaved } from './checkpoints/saved-state-guard';
export type { CheckpointSigning } from './checkpoints/sign-log-checkpoint';
export { logOrigin, signLogCheckpoint } from './checkpoints/sign-log-checkpoint';
// The database: open it, migrate it, the runtime role.
export type { Database, Db, OpenDatabaseOptions, PoolStats } from './database';
export { isDatabaseUnavailable, openDatabase, ping, redactUrl, sqlStateOf } from './database';
// Errors and the integrity alarm.
export type { LedgerErrorCode } from './errors';
export { isLedgerError, LEDGER_ERROR_CODES, LedgerError } from './errors';
export type { AppendInput, EventLimits } from './event-input';
export type { BatchListener, CommittedBatch } from './group-commit';
export type {
  IntegrityAlarm,
  IntegrityAlarmCode,
  IntegrityAlarmOptions,
  IntegrityAlarmReport,
  RaisedIntegrityAlarm,
} from './integrity-alarm';
export { createIntegrityAlarm } from './integrity-alarm';
// The key store: API keys and revocations, bound to their events in the system log.
export type { ApiKeyRecord, KeyProof } from './keys/api-key-events';
export { KEY_CREATE_ACTION, KEY_REVOKE_ACTION, keyHashCommitment, SYSTEM_LOG } from './keys/api-key-events';
export type { FoundApiKey, IssueApiKeyInput } from './keys/api-keys';
export {
  countApiKeys,
  findApiKeysByHash,
  issueApiKey,
  listApiKeys,
  revokeApiKey,
  scheduleApiKeyExpiry,
} from './keys/api-keys';
export type { ApiKeyFailure, CheckApiKeyTablesOptions } from './keys/check-api-key-tables';
export { checkApiKeyTables } from './keys/check-api-key-tables';
export { createKeyAuthorityCheck, KEY_EVENT_KINDS } from './keys/check-key-authority';
export { adoptLegacyKeys, type KeyAdoption } from './keys/key-adoption';
export { BOOTSTRAP_ACTOR } from './keys/key-history';
export {
  KEY_REVOKED_CHANNEL,
  type KeyRevocationHandlers,
  watchKeyRevocations,
} from './keys/key-revocation-feed';
export { type LoadedKeyHistory, loadKeyHistory } from './keys/load-key-history';
export { unprovenKeyIds } from './keys/unproven-keys';
export type {
  AppendHook,
  BatchOptions,
  EventLink,
  Ledger,
  LedgerOptions,
  LedgerTransaction,
  StagedRow,
  StagingTransaction,
} from './ledger';
export { createLedger } from './ledger';
export { listLogs, logExists, requireLog } from './log-exists';
// Merkle storage: the append hook that keeps every complete subtree, and proofs read from it.
export { merkleAppendHook } from './merkle/merkle-append-hook';
export { merkleConsistencyProof, merkleInclusionProof, merkleRoot } from './merkle/merkle-proofs';
export type { TileRequest } from './merkle/merkle-tiles';
export { readTile, TILE_WIDTH } from './merkle/merkle-tiles';
export { migrate, migrationStatus } from './migrate';
// The policy a server pins in each log it decides in (docs/chain.md, "The policy is pinned").
export type { PolicyConfiguration, PolicyConfiguredPayload } from './policy/policy-configuration';
export {
  decisionSourceBreak,
  POLICY_CONFIGURED_KIND,
  POLICY_PINNER,
  samePolicy,
} from './policy/policy-configuration';
// The records service, its inputs and the records it returns.
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
  decisionInputSchema,
  denyInputSchema,
  observationInputSchema,
  proposalInputSchema,
  reverificationInputSchema,
  toolInputSchema,
  verificationInputSchema,
} from './records/inputs';
export type { ProposalStage, StageApproval } from './records/outcome';
export { PROPOSAL_OUTCOMES, PROPOSAL_STAGES } from './records/outcome';
export { proposalPayloadOf } from './records/payload-hash';
export { createPolicyPinCheck, POLICY_PIN_KINDS } from './records/policy-pin-check';
export type { ApprovalStatus } from './records/queries';
export type { IntegrityViolation } from './records/record-integrity';
export type {
  Page,
  ProposalListError,
  ProposalListFilter,
  ProposalListItem,
  ProposalSummary,
} from './records/record-lists';
export { createRecordRuleCheck, type RecordRule, type RecordRuleCheck } from './records/record-rules';
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
export type {
  EffectiveVerification,
  PostconditionVerdict,
  VerificationStatusReason,
} from './records/verification-status';
export { effectiveVerification } from './records/verification-status';
export type { FieldsAppendInput, RedactionInput, RedactionResult } from './redaction';
export { appendWithFields, redactedAfter, redactFields } from './redaction';
export type { RoleStatus, RuntimeRoleOptions } from './runtime-role';
export {
  assertMigrationsCurrent,
  checkRuntimeRole,
  grantRuntimeRole,
  postgresReason,
  roleStatus,
} from './runtime-role';
export { createBundleSignatureCheck } from './signatures/author-signature-check';
export type { ServerKeyState } from './signatures/enrol-signing-key';
export { enrollSigningKey, ensureServerKeyEnrolled } from './signatures/enrol-signing-key';
export type { IssuedEnrolmentCode } from './signatures/enrolment-code-events';
export { enrolWithCode, issueEnrolmentCode } from './signatures/enrolment-code-events';
export type { CodeRefusal } from './signatures/enrolment-codes';
export {
  ENROL_BY_CODE_ACTION,
  ENROLMENT_CODE_ACTION,
  ENROLMENT_CODE_TTL_MS,
  enrolByCodeClaims,
  enrolmentCodeCommitment,
  SIGNING_KEY_ENROLMENT_CODE,
} from './signatures/enrolment-codes';
export { currentKeyHistory, signatureOfRequest } from './signatures/request-signature';
export { isServerIdentity, SERVER_SIGNER } from './signatures/server-signer';
export type { EnrolledKey } from './signatures/signing-key-events';
export {
  ENROLL_ACTION,
  REVOKE_SIGNING_KEY_ACTION,
  requireSignatures,
  revokeSigningKey,
  SIGNATURES_REQUIRED,
  SIGNING_KEY_ENROLLED,
  SIGNING_KEY_REVOKED,
} from './signatures/signing-key-events';
// Reads on a hot standby, consistent with what the primary acknowledged.
export { isHotStandby, primaryWalPosition, standbyReplayedTo } from './standby';
// The verification queue: verifications asked to run in the background (operational data, not the chain).
export type {
  VerificationJob,
  VerificationJobLease,
  VerificationJobResult,
  VerificationJobStore,
} from './verification-jobs/verification-job-store';
export { createVerificationJobStore } from './verification-jobs/verification-job-store';
export type { LogVerificationReport, TableCheck, VerifyChainOptions } from './verify-chain';
export { verifyChain } from './verify-chain';
export type { CheckpointKeys } from './verify-checkpoints';
// Outbound webhooks: the dispatcher's cursors, deliveries and attempts (operational data, not the chain).
export type {
  ClaimedWebhookDelivery,
  ListWebhookDeliveriesOptions,
  NewWebhookDelivery,
  WebhookAttemptOutcome,
  WebhookAttemptResult,
  WebhookCursorBeyondHead,
  WebhookDeliveryStatus,
  WebhookDeliveryView,
  WebhookSourceEvent,
  WebhookStore,
} from './webhooks/webhook-store';
export { createWebhookStore } from './webhooks/webhook-store';
