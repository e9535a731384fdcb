export { decodeBase64, encodeBase64 } from './base64';
export type { BundleHeader } from './bundle-format';
export { BUNDLE_EVENT_FIELDS, BUNDLE_FORMAT, encodeBundle, splitLines } from './bundle-format';
export type { BundleFailure, BundleFailureCode, BundleReport, VerifyBundleOptions } from './bundle-verify';
export { verifyBundle } from './bundle-verify';
export { canonicalJson } from './canonical-json';
export type { Checkpoint, CheckpointFailureCode, OpenedCheckpoint } from './checkpoint';
export { formatCheckpoint, openCheckpoint, readCheckpointUnverified, signCheckpoint } from './checkpoint';
export type { AuditErrorCode } from './errors';
export { AuditError, isAuditError } from './errors';
export type { EventHeader, StoredEvent } from './event-hash';
export { eventHashOf, GENESIS_PREV_HASH, payloadHashOf } from './event-hash';
export { canonicalIdentity, sameIdentity } from './identity';
export { CompactRange } from './merkle-compact-range';
export {
  bytesEqual,
  EMPTY_TREE_ROOT,
  eventLeafHash,
  hashChildren,
  hashLeaf,
  MERKLE_HASH_SIZE,
  MerkleHasher,
} from './merkle-hash';
export { MemoryMerkleTree } from './merkle-memory-tree';
export type { SubtreeSource } from './merkle-proofs';
export { consistencyProof, foldFromRight, inclusionProof, treeRoot } from './merkle-proofs';
export type { ProofNodePlan, Subtree, SubtreeHash } from './merkle-subtrees';
export {
  consistencyProofPlan,
  inclusionProofPlan,
  rootSubtrees,
  subtreeRange,
  subtreesCompletedBy,
} from './merkle-subtrees';
export { verifyConsistency, verifyInclusion } from './merkle-verify';
export type { NoteFailureCode, NoteSignature, OpenedNote } from './note';
export { MAX_NOTE_SIGNATURES, openNote, signNote } from './note';
export type { NoteSigner, NoteVerifier } from './note-keys';
export {
  formatVerifierKey,
  generateNoteKeys,
  isValidKeyName,
  noteKeyId,
  parseSignerKey,
  parseVerifierKey,
} from './note-keys';
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
export type {
  WitnessBundleOptions,
  WitnessCheckpointView,
  WitnessLogOptions,
  WitnessOutcome,
  WitnessReport,
  WitnessStatus,
} from './witness';
export { logOfOrigin, witnessBundle, witnessLog } from './witness';
export type { WitnessFetch, WitnessResponse } from './witness-http';
export type { NextTrustedNote } from './witness-trusted-note';
export { nextTrustedNote } from './witness-trusted-note';
