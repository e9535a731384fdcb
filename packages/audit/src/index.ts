export { canonicalJson } from './canonical-json';
export type { AuditErrorCode } from './errors';
export { AuditError, isAuditError } from './errors';
export type { EventHeader, StoredEvent } from './event-hash';
export { eventHashOf, GENESIS_PREV_HASH, payloadHashOf } from './event-hash';
export { sha256, sha256Hex, sha256Implementation } from './sha256';
export type {
  ChainChecker,
  ChainFailure,
  ChainFailureCode,
  ChainHead,
  ChainReport,
  VerifyEventsOptions,
} from './verify-events';
export { createChainChecker, verifyEvents } from './verify-events';
