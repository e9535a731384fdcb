import { describe, expect, it } from 'vitest';
import * as audit from './index';

// Pins the public surface: an export added or removed by accident shows up in review here.
describe('@vouch/audit public surface', () => {
  it('exports exactly these runtime names', () => {
    expect(Object.keys(audit).sort()).toMatchInlineSnapshot(`
      [
        "AuditError",
        "BUNDLE_EVENT_FIELDS",
        "BUNDLE_FORMAT",
        "CompactRange",
        "EMPTY_TREE_ROOT",
        "GENESIS_PREV_HASH",
        "MAX_NOTE_SIGNATURES",
        "MERKLE_HASH_SIZE",
        "MemoryMerkleTree",
        "bytesEqual",
        "canonicalIdentity",
        "canonicalJson",
        "consistencyProof",
        "consistencyProofPlan",
        "createChainChecker",
        "decodeBase64",
        "encodeBase64",
        "encodeBundle",
        "eventHashOf",
        "eventLeafHash",
        "foldFromRight",
        "formatCheckpoint",
        "formatVerifierKey",
        "generateNoteKeys",
        "hashChildren",
        "hashLeaf",
        "inclusionProof",
        "inclusionProofPlan",
        "isAuditError",
        "isValidKeyName",
        "noteKeyId",
        "openCheckpoint",
        "openNote",
        "parseSignerKey",
        "parseVerifierKey",
        "payloadHashOf",
        "rootSubtrees",
        "sameIdentity",
        "sha256",
        "sha256Hex",
        "sha256Implementation",
        "signCheckpoint",
        "signNote",
        "splitLines",
        "subtreeRange",
        "subtreesCompletedBy",
        "treeRoot",
        "verifyBundle",
        "verifyConsistency",
        "verifyEvents",
        "verifyInclusion",
      ]
    `);
  });
});
