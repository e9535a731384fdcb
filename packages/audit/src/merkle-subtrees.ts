import { AuditError } from './errors';

// Pure index arithmetic for RFC 9162 Merkle trees: which stored subtrees a root or a proof
// is made of. Plain arithmetic rather than bitwise operators throughout, because JavaScript
// bitwise operators truncate to 32 bits and a log may outgrow 2^32 leaves.

/**
 * A complete, aligned subtree: the leaves `[index * 2^level, (index + 1) * 2^level)`.
 * A store that keeps the hash of every such subtree once its last leaf is appended can
 * answer any root or proof with O(log n) reads.
 */
export interface Subtree {
  level: number;
  index: number;
}

/** A complete subtree with its hash. */
export interface SubtreeHash extends Subtree {
  hash: Uint8Array;
}

/**
 * One node of a proof: the Merkle tree hash of leaves `[start, end)`. `subtrees` are the
 * complete aligned subtrees covering that range, left to right and largest first; when
 * there are several (a node on the right edge of the tree), the node hash folds them from
 * the right: `H(s0, H(s1, ... H(s[k-2], s[k-1])))`.
 */
export interface ProofNodePlan {
  start: number;
  end: number;
  subtrees: Subtree[];
}

/** The complete aligned subtrees whose hashes, folded from the right, give the root at `treeSize`. */
export function rootSubtrees(treeSize: number): Subtree[] {
  requireCount(treeSize, 'tree size');
  return rangeSubtrees(0, treeSize);
}

/**
 * The nodes of the inclusion proof for the leaf at `index` in a tree of `treeSize` leaves,
 * in proof order (lowest first): RFC 9162 §2.1.3.1 PATH(m, D[n]), unrolled.
 *
 * At most one node is a right-edge partial subtree, so the whole proof needs O(log n)
 * complete subtrees. Throws `AuditError` `MALFORMED_PROOF` unless `0 <= index < treeSize`.
 */
export function inclusionProofPlan(index: number, treeSize: number): ProofNodePlan[] {
  requireCount(index, 'leaf index');
  requireCount(treeSize, 'tree size');
  if (index >= treeSize) {
    throw new AuditError('MALFORMED_PROOF', `leaf index ${index} is not in a tree of ${treeSize} leaves`);
  }
  // PATH(m, D[n]) = PATH(m, D[0:k]) : MTH(D[k:n])      for m < k
  //              = PATH(m - k, D[k:n]) : MTH(D[0:k])  for m >= k
  // Walking down from the root meets the siblings top first; the proof lists them bottom first.
  const nodes: ProofNodePlan[] = [];
  let start = 0;
  let end = treeSize;
  let m = index;
  while (end - start > 1) {
    const k = largestPowerOfTwoBelow(end - start);
    if (m < k) {
      nodes.push(node(start + k, end));
      end = start + k;
    } else {
      nodes.push(node(start, start + k));
      m -= k;
      start += k;
    }
  }
  return nodes.reverse();
}

/**
 * The nodes of the consistency proof from `size1` to `size2`, in proof order:
 * RFC 9162 §2.1.4.1 SUBPROOF(m, D[n], true), unrolled. Empty when the sizes are equal.
 *
 * Throws `AuditError` `MALFORMED_PROOF` unless `0 < size1 <= size2`: every tree extends
 * the empty tree, so there is nothing to prove from size 0.
 */
export function consistencyProofPlan(size1: number, size2: number): ProofNodePlan[] {
  requireCount(size1, 'first tree size');
  requireCount(size2, 'second tree size');
  if (size1 === 0 || size1 > size2) {
    throw new AuditError(
      'MALFORMED_PROOF',
      `no consistency proof exists from size ${size1} to size ${size2}`,
    );
  }
  // SUBPROOF(m, D[m], true) = {};  SUBPROOF(m, D[m], false) = {MTH(D[m])}
  // SUBPROOF(m, D[n], b) = SUBPROOF(m, D[0:k], b) : MTH(D[k:n])          for m <= k
  //                      = SUBPROOF(m - k, D[k:n], false) : MTH(D[0:k])  for m > k
  const nodes: ProofNodePlan[] = [];
  let start = 0;
  let end = size2;
  let m = size1;
  let wholeOldTree = true;
  while (m !== end - start) {
    const k = largestPowerOfTwoBelow(end - start);
    if (m <= k) {
      nodes.push(node(start + k, end));
      end = start + k;
    } else {
      nodes.push(node(start, start + k));
      m -= k;
      start += k;
      wholeOldTree = false;
    }
  }
  if (!wholeOldTree) nodes.push(node(start, end));
  return nodes.reverse();
}

/**
 * The complete subtrees that appending the leaf at `leafIndex` completes, from the leaf
 * itself (level 0) upward: the rows an append must store so that later proofs are reads.
 */
export function subtreesCompletedBy(leafIndex: number): Subtree[] {
  requireCount(leafIndex, 'leaf index');
  const completed: Subtree[] = [{ level: 0, index: leafIndex }];
  let index = leafIndex;
  let level = 0;
  while (index % 2 === 1) {
    index = (index - 1) / 2;
    level++;
    completed.push({ level, index });
  }
  return completed;
}

/** `[start, end)` of the leaves under a complete subtree. */
export function subtreeRange(subtree: Subtree): { start: number; end: number } {
  const width = 2 ** subtree.level;
  return { start: subtree.index * width, end: (subtree.index + 1) * width };
}

function node(start: number, end: number): ProofNodePlan {
  return { start, end, subtrees: rangeSubtrees(start, end) };
}

// Every range a proof or root needs starts at 0 or at a multiple of a power of two at
// least as large as the range, so it splits into complete aligned subtrees by the binary
// digits of its length, largest first.
function rangeSubtrees(start: number, end: number): Subtree[] {
  const subtrees: Subtree[] = [];
  let remaining = end - start;
  let position = start;
  let width = 1;
  let level = 0;
  while (width * 2 <= remaining) {
    width *= 2;
    level++;
  }
  while (remaining > 0) {
    if (width <= remaining) {
      subtrees.push({ level, index: position / width });
      position += width;
      remaining -= width;
    }
    width /= 2;
    level--;
  }
  return subtrees;
}

/** The largest power of two strictly below `n`, for `n >= 2` (RFC 9162 §2.1.1 `k`). */
function largestPowerOfTwoBelow(n: number): number {
  let k = 1;
  while (k * 2 < n) k *= 2;
  return k;
}

function requireCount(value: number, what: string): void {
  if (!Number.isSafeInteger(value) || value < 0) {
    throw new AuditError(
      'MALFORMED_PROOF',
      `${what} must be a non-negative safe integer, got ${String(value)}`,
    );
  }
}
