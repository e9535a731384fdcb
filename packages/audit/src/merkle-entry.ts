// `@vouch/audit/merkle`: building Merkle trees and proofs (RFC 9162), for whoever writes a log
// (the ledger stores subtrees and answers proofs with these). Verifying a proof needs only
// `verifyInclusion` / `verifyConsistency` from `@vouch/audit`.
export { CompactRange } from './merkle-compact-range';
export { EMPTY_TREE_ROOT, hashChildren, hashLeaf, MERKLE_HASH_SIZE, MerkleHasher } from './merkle-hash';
export { MemoryMerkleTree } from './merkle-memory-tree';
export type { SubtreeSource } from './merkle-proofs';
export { consistencyProof, foldFromRight, inclusionProof, treeRoot } from './merkle-proofs';
export { SubtreeStack } from './merkle-subtree-stack';
export type { ProofNodePlan, Subtree, SubtreeHash } from './merkle-subtrees';
export {
  consistencyProofPlan,
  inclusionProofPlan,
  rootSubtrees,
  subtreeRange,
  subtreesCompletedBy,
} from './merkle-subtrees';
