import { describe, expect, it } from 'vitest';
import * as audit from './index';
import * as merkle from './merkle-entry';
import * as transport from './transport-entry';
import * as witness from './witness-entry';

// Pins the public surface: an export added or removed by accident shows up in review here.
describe('@vouch/audit public surface', () => {
  it('exports exactly these runtime names', () => {
    expect(Object.keys(audit).sort()).toMatchInlineSnapshot(`
      [
        "AuditError",
        "BUNDLE_EVENT_FIELDS",
        "BUNDLE_FORMAT",
        "GENESIS_PREV_HASH",
        "bytesEqual",
        "canonicalIdentity",
        "canonicalJson",
        "createChainChecker",
        "encodeBundle",
        "eventHashOf",
        "eventLeafHash",
        "formatVerifierKey",
        "generateNoteKeys",
        "isAuditError",
        "isValidKeyName",
        "openCheckpoint",
        "parseSignerKey",
        "parseVerifierKey",
        "payloadHashOf",
        "readCheckpointUnverified",
        "sameIdentity",
        "sha256",
        "sha256Hex",
        "sha256Implementation",
        "signCheckpoint",
        "signNote",
        "splitLines",
        "verifyBundle",
        "verifyConsistency",
        "verifyEvents",
        "verifyInclusion",
      ]
    `);
  });

  it('exports these from @vouch/audit/merkle, /witness and /transport', () => {
    expect({
      merkle: Object.keys(merkle).sort(),
      witness: Object.keys(witness).sort(),
      transport: Object.keys(transport).sort(),
    }).toMatchInlineSnapshot(`
      {
        "merkle": [
          "CompactRange",
          "EMPTY_TREE_ROOT",
          "MERKLE_HASH_SIZE",
          "MemoryMerkleTree",
          "MerkleHasher",
          "consistencyProof",
          "consistencyProofPlan",
          "foldFromRight",
          "hashChildren",
          "hashLeaf",
          "inclusionProof",
          "inclusionProofPlan",
          "rootSubtrees",
          "subtreeRange",
          "subtreesCompletedBy",
          "treeRoot",
        ],
        "transport": [
          "createHttpTransport",
          "readErrorEnvelope",
          "sleep",
        ],
        "witness": [
          "logOfOrigin",
          "nextTrustedNote",
          "witnessBundle",
          "witnessLog",
        ],
      }
    `);
  });
});
