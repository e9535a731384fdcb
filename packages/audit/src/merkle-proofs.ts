import { AuditError } from './errors';
import { EMPTY_TREE_ROOT, hashChildren, MERKLE_HASH_SIZE } from './merkle-hash';
import {
  consistencyProofPlan,
  inclusionProofPlan,
  type ProofNodePlan,
  rootSubtrees,
  type Subtree,
} from './merkle-subtrees';

/**
 * Where proofs read stored subtree hashes from: the ledger's `merkle_nodes` table, or a
 * `MemoryMerkleTree`. Proofs never rebuild the tree; each one asks for O(log n) subtrees in
 * one batch, so a database answers with a single query.
 */
export interface SubtreeSource {
  /**
   * Hashes of complete, aligned subtrees (`[index * 2^level, (index + 1) * 2^level)`), one
   * per request and in the same order. Every requested subtree lies inside the tree the
   * caller asked about, so it exists once that many leaves were appended.
   */
  subtreeHashes(subtrees: readonly Subtree[]): Promise<readonly Uint8Array[]>;
}

/**
 * The inclusion proof (RFC 9162 §2.1.3.1) for the leaf at `index` in the tree of
 * `treeSize` leaves, lowest node first. For an event, `index = seq - 1`.
 *
 * @example
 * const proof = await inclusionProof(tree, { index: event.seq - 1, treeSize: checkpoint.treeSize });
 * verifyInclusion(eventLeafHash(event.hash), event.seq - 1, checkpoint.treeSize, proof, checkpoint.rootHash); // true
 */
export async function inclusionProof(
  source: SubtreeSource,
  request: { index: number; treeSize: number },
): Promise<Uint8Array[]> {
  return resolve(source, inclusionProofPlan(request.index, request.treeSize));
}

/** The consistency proof (RFC 9162 §2.1.4.1) from tree size `size1` to `size2`, for `0 < size1 <= size2`. */
export async function consistencyProof(
  source: SubtreeSource,
  request: { size1: number; size2: number },
): Promise<Uint8Array[]> {
  return resolve(source, consistencyProofPlan(request.size1, request.size2));
}

/** The root hash of the tree of the first `treeSize` leaves (RFC 9162 §2.1.1 MTH). */
export async function treeRoot(source: SubtreeSource, treeSize: number): Promise<Uint8Array> {
  const subtrees = rootSubtrees(treeSize);
  if (subtrees.length === 0) return EMPTY_TREE_ROOT;
  return foldFromRight(await fetchHashes(source, subtrees));
}

/**
 * Hash of a range from the hashes of the complete subtrees that cover it, left to right:
 * `H(h0, H(h1, ... H(h[k-2], h[k-1])))` (RFC 9162 §2.1.1 MTH, with every complete subtree
 * already reduced to its hash). Used for roots and right-edge proof nodes.
 */
export function foldFromRight(hashes: readonly Uint8Array[]): Uint8Array {
  let hash = hashes[hashes.length - 1]!;
  for (let i = hashes.length - 2; i >= 0; i--) hash = hashChildren(hashes[i]!, hash);
  return hash;
}

async function resolve(source: SubtreeSource, plan: ProofNodePlan[]): Promise<Uint8Array[]> {
  const hashes = await fetchHashes(
    source,
    plan.flatMap((node) => node.subtrees),
  );
  const proof: Uint8Array[] = [];
  let next = 0;
  for (const node of plan) {
    proof.push(foldFromRight(hashes.slice(next, next + node.subtrees.length)));
    next += node.subtrees.length;
  }
  return proof;
}

async function fetchHashes(
  source: SubtreeSource,
  subtrees: readonly Subtree[],
): Promise<readonly Uint8Array[]> {
  if (subtrees.length === 0) return [];
  const hashes = await source.subtreeHashes(subtrees);
  // The source is our own storage, but a short or mis-sized answer would silently build a
  // wrong proof; refuse it here where the cause is still visible.
  if (hashes.length !== subtrees.length || hashes.some((hash) => hash.length !== MERKLE_HASH_SIZE)) {
    throw new AuditError(
      'MALFORMED_PROOF',
      `subtree source answered ${hashes.length} hashes for ${subtrees.length} subtrees, or a hash that is not ${MERKLE_HASH_SIZE} bytes`,
    );
  }
  return hashes;
}
