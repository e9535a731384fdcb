/**
 * `@vouch/client`: the typed Vouch client and the `execute()` flow for gateways. The records,
 * bodies and answers it speaks are `@vouch/records`' types (import them from there, as types);
 * the few a gateway names when it calls `execute()` are re-exported here. The in-memory fake
 * and the client conformance suite are `@vouch/client/testing`.
 */
export type {
  Condition,
  JsonObject,
  JsonValue,
  PolicyReason,
  Repair,
  Role,
  SideEffectClass,
  Target,
  Verdict,
} from './api-types';
/** The client and its options. */
export type {
  CallOptions,
  ObserveOptions,
  ProposalListQuery,
  ProposeOptions,
  VouchClient,
  VouchClientOptions,
} from './client';
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
/** Webhooks: check a delivery's `Vouch-Signature` (and the server's signer, so both agree). */
export type { WebhookSignatureCheck, WebhookSignatureFailure } from './webhook-signature';
export {
  DEFAULT_WEBHOOK_TOLERANCE_SECONDS,
  signWebhook,
  verifyWebhookSignature,
  WEBHOOK_SIGNATURE_HEADER,
} from './webhook-signature';
