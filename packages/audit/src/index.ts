// `@vouch/audit`: what an auditor verifies a Vouch ledger with, and the primitives the ledger
// writes with, so the writer and the checker cannot drift apart. Specialised parts have their
// own entry points: `@vouch/audit/merkle` (building trees and proofs, for a log's writer),
// `@vouch/audit/witness` (checking a live log or a bundle against a trusted checkpoint) and
// `@vouch/audit/transport` (the HTTP transport to a Vouch server). All of it runs in browsers.

export type { AuthorKey, AuthorSignatureFailure, AuthorStatement } from './author-signature';
export {
  AUTHOR_STATEMENT_TYPE,
  AUTHOR_STATEMENT_V1,
  attachSignature,
  authorKeyFromSeed,
  authorKeyId,
  authorStatement,
  detachedSignature,
  formatAuthorPrivateKey,
  formatAuthorPublicKey,
  generateAuthorKey,
  openAuthorSignature,
  parseAuthorPrivateKey,
  parseAuthorPublicKey,
  parseDetachedSignature,
  readAuthorStatementUnverified,
  signAuthorStatement,
} from './author-signature';
export type { BundleHeader } from './bundle-format';
export {
  BUNDLE_EVENT_FIELDS,
  BUNDLE_FORMAT,
  BUNDLE_FORMATS,
  encodeBundle,
  splitLines,
} from './bundle-format';
export type { SystemPart } from './bundle-system-part';
export { systemOriginOf, verifySystemLog, verifySystemPart } from './bundle-system-part';
export type { BundleFailure, BundleFailureCode, BundleReport, VerifyBundleOptions } from './bundle-verify';
export { verifyBundle } from './bundle-verify';
export { canonicalJson } from './canonical-json';
export type { Checkpoint, CheckpointFailureCode, OpenedCheckpoint } from './checkpoint';
export { openCheckpoint, readCheckpointUnverified, signCheckpoint } from './checkpoint';
export type { CosignatureCheck, CosignatureVerifier, Cosigner } from './cosignature';
export {
  acceptedCosignatures,
  cosignedMessage,
  decodeCosignatureLine,
  formatCosignerKey,
  generateCosignerKeys,
  parseCosignerKey,
  parseCosignerSignerKey,
  verifyCosignatures,
} from './cosignature';
export { deriveAuthorKey } from './derive-author-key';
export type { DsseEnvelope, DsseFailure, DsseSignature } from './dsse';
export { preAuthEncoding, signDsse, verifyDsse } from './dsse';
export type { AuditErrorCode } from './errors';
export { AuditError, isAuditError } from './errors';
export type { EventHeader, StoredEvent } from './event-hash';
export { eventHashOf, GENESIS_PREV_HASH, payloadHashOf } from './event-hash';
export { memberSha256, observationClaims, proposalClaims } from './gateway-claims';
export { canonicalIdentity, sameIdentity } from './identity';
export { bytesEqual, eventLeafHash } from './merkle-hash';
export { verifyConsistency, verifyInclusion } from './merkle-verify';
export { signNote } from './note';
export type { NoteSigner, NoteVerifier } from './note-keys';
export {
  deriveSignerKey,
  formatVerifierKey,
  generateNoteKeys,
  isValidKeyName,
  parseSignerKey,
  parseVerifierKey,
} from './note-keys';
export type { FieldCheck, FieldOpening, RedactionPayload } from './payload-fields';
export {
  checkFieldOpenings,
  commitFields,
  commitMember,
  committedFieldHashes,
  committedMemberOf,
  FIELDS_COMMITMENT,
  fieldHashOf,
  memberFieldsCommitment,
  newFieldSalt,
  parseFieldHashes,
  parseRedaction,
  REDACTION_KIND,
} from './payload-fields';
export { sha256, sha256Hex, sha256Implementation } from './sha256';
export type {
  ChainChecker,
  ChainFailure,
  ChainFailureCode,
  ChainHead,
  ChainReport,
  RedactionEvidence,
  RedactionReport,
  VerifyEventsOptions,
} from './verify-events';
export { createChainChecker, matchRedactions, timeRegression, verifyEvents } from './verify-events';
