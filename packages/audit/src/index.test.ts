import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import * as audit from './index';
import * as merkle from './merkle-entry';
import * as node from './node-entry';
import * as transport from './transport-entry';
import * as witness from './witness-entry';

// Pins the public surface: an export added or removed by accident shows up in review here.
describe('@vouch/audit public surface', () => {
  it('exports exactly these runtime names', () => {
    expect(Object.keys(audit).sort()).toMatchInlineSnapshot(`
      [
        "AUTHOR_STATEMENT_TYPE",
        "AUTHOR_STATEMENT_V1",
        "AuditError",
        "BUNDLE_EVENT_FIELDS",
        "BUNDLE_FORMAT",
        "BUNDLE_FORMATS",
        "FIELDS_COMMITMENT",
        "GENESIS_PREV_HASH",
        "REDACTION_KIND",
        "acceptedCosignatures",
        "attachSignature",
        "authorKeyFromSeed",
        "authorKeyId",
        "authorStatement",
        "bytesEqual",
        "canonicalIdentity",
        "canonicalJson",
        "checkFieldOpenings",
        "commitFields",
        "commitMember",
        "committedFieldHashes",
        "committedMemberOf",
        "cosignedMessage",
        "createChainChecker",
        "decodeCosignatureLine",
        "deriveAuthorKey",
        "deriveSignerKey",
        "detachedSignature",
        "encodeBundle",
        "eventHashOf",
        "eventLeafHash",
        "fieldHashOf",
        "formatAuthorPrivateKey",
        "formatAuthorPublicKey",
        "formatCosignerKey",
        "formatVerifierKey",
        "generateAuthorKey",
        "generateCosignerKeys",
        "generateNoteKeys",
        "isAuditError",
        "isValidKeyName",
        "matchRedactions",
        "memberFieldsCommitment",
        "memberSha256",
        "newFieldSalt",
        "observationClaims",
        "openAuthorSignature",
        "openCheckpoint",
        "parseAuthorPrivateKey",
        "parseAuthorPublicKey",
        "parseCosignerKey",
        "parseCosignerSignerKey",
        "parseDetachedSignature",
        "parseFieldHashes",
        "parseRedaction",
        "parseSignerKey",
        "parseVerifierKey",
        "payloadHashOf",
        "preAuthEncoding",
        "proposalClaims",
        "readAuthorStatementUnverified",
        "readCheckpointUnverified",
        "sameIdentity",
        "sha256",
        "sha256Hex",
        "sha256Implementation",
        "signAuthorStatement",
        "signCheckpoint",
        "signDsse",
        "signNote",
        "splitLines",
        "systemOriginOf",
        "timeRegression",
        "verifyBundle",
        "verifyConsistency",
        "verifyCosignatures",
        "verifyDsse",
        "verifyEvents",
        "verifyInclusion",
        "verifySystemLog",
        "verifySystemPart",
      ]
    `);
  });

  it('exports these from @vouch/audit/merkle, /witness, /transport and /node', () => {
    expect({
      node: Object.keys(node).sort(),
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
          "SubtreeStack",
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
        "node": [
          "WorkerPool",
          "startModuleWorker",
          "verifyBundleFile",
        ],
        "transport": [
          "createHttpTransport",
          "readErrorEnvelope",
          "sleep",
        ],
        "witness": [
          "addCheckpoint",
          "logOfOrigin",
          "memoryWitnessState",
          "nextTrustedNote",
          "witnessBundle",
          "witnessLog",
        ],
      }
    `);
  });

  it('imports nothing from node: in the entries a browser loads, and needs node: only in /node', () => {
    const reached = (entry: string) => {
      const seen = new Set<string>();
      const visit = (file: string) => {
        if (seen.has(file)) return;
        seen.add(file);
        const source = readFileSync(new URL(file, import.meta.url), 'utf8');
        for (const [, specifier] of source.matchAll(/^(?:import|export)\s[^;]*?from '([^']+)'/gm)) {
          // #sha256 resolves to the portable file outside Node.
          if (specifier === '#sha256') visit('./sha256-portable.ts');
          else if (specifier!.startsWith('./')) visit(`${specifier}.ts`);
          else seen.add(specifier!);
        }
      };
      visit(entry);
      return [...seen];
    };
    for (const entry of ['./index.ts', './merkle-entry.ts', './witness-entry.ts', './transport-entry.ts']) {
      expect(reached(entry).filter((s) => s.startsWith('node:'))).toEqual([]);
    }
    expect(reached('./node-entry.ts')).toContain('node:worker_threads');
  });
});
