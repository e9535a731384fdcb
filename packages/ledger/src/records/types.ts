/**
 * The records, as stored and as hashed into their audit events. Declared once, as zod
 * schemas, in `@vouch/records` (the API and the client take the same ones); the names the
 * ledger has always exported are kept here so its code and its users need not change.
 */

import type { StoredEvent } from '@vouch/audit';
import type * as records from '@vouch/records';
import type { ApprovalView, Authorization, ProposalResult, ProposalStory } from './create-records';

export type {
  ApprovalRequestRecord,
  ApprovalResolutionRecord,
  ApprovalUseRecord,
  ApprovalValidity,
  Condition,
  DecisionRecord,
  ExecutionClaimRecord,
  JsonObject,
  JsonValue,
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
} from '@vouch/records';
export { SIDE_EFFECT_CLASSES } from '@vouch/records';

// Shapes declared outside @vouch/records must stay the records' own: `@vouch/audit` (which
// depends on nothing) declares the event an auditor checks, and the records service declares
// what it returns. Either side changing alone fails the build here.
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
const shapesAgree: [
  Same<StoredEvent, records.AuditEvent>,
  Same<ProposalResult, records.ProposalResult>,
  Same<ApprovalView, records.ApprovalView>,
  Same<Authorization, Omit<records.Authorization, 'preconditions'>>,
  Same<ProposalStory, records.ProposalStory>,
] = [true, true, true, true, true];
void shapesAgree;

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
  /**
   * When the caller's key was issued (its `api_key.created` event's time): what it writes is
   * recorded no earlier (`BatchOptions.notBefore`), so the key rules find the key live at
   * every record it wrote, even when this server's clock lags the one that issued the key.
   */
  keyIssuedAt?: string;
  /**
   * The author's detached signature over the request (the `Vouch-Signature` header): the
   * operation rebuilds the statement from the request and keeps the envelope in the record.
   */
  signature?: { keyid: string; sig: string };
}
