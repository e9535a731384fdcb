import { AuditError } from './errors';
import { bytesEqual, hashChildren, MERKLE_HASH_SIZE } from './merkle-hash';

// Proof verification, step by step from RFC 9162 §2.1.3.2 and §2.1.4.2, over plain
// arithmetic (x % 2 for LSB, Math.floor(x / 2) for a right shift) so sizes past 2^32 work.
//
// Contract, the same for both functions:
// - `true`: the proof proves the claim.
// - `false`: the proof has the right shape for these sizes, but its hashes do not lead to
//   the given root(s): the leaf is not in that tree, or the trees are not consistent.
// - throws `AuditError` `MALFORMED_PROOF`: the input cannot be a proof for these sizes at
//   all: a size or index that is not a non-negative safe integer, an index outside the
//   tree, size1 > size2 or size1 = 0 < size2, a hash that is not 32 bytes, or a proof with
//   the wrong number of nodes. Either failure means "not proven"; the error says the
//   prover sent something no honest prover sends.

/**
 * Verify that the leaf with hash `leafHash` sits at `index` in the tree of `treeSize`
 * leaves whose root is `root` (RFC 9162 §2.1.3.2). See the contract above.
 *
 * @example
 * verifyInclusion(eventLeafHash(event.hash), event.seq - 1, checkpoint.treeSize, proof, checkpoint.rootHash);
 */
export function verifyInclusion(
  leafHash: Uint8Array,
  index: number,
  treeSize: number,
  proof: readonly Uint8Array[],
  root: Uint8Array,
): boolean {
  requireCount(index, 'leaf index');
  requireCount(treeSize, 'tree size');
  requireHash(leafHash, 'leaf hash');
  requireHash(root, 'root hash');
  requireProofHashes(proof);
  // 1. leaf_index >= tree_size fails.
  if (index >= treeSize) {
    throw new AuditError('MALFORMED_PROOF', `leaf index ${index} is not in a tree of ${treeSize} leaves`);
  }
  // 2. fn = leaf_index, sn = tree_size - 1.  3. r = hash.
  let fn = index;
  let sn = treeSize - 1;
  let r = leafHash;
  // 4. For each p in inclusion_path:
  for (const p of proof) {
    if (sn === 0) throw wrongLength(proof.length);
    if (fn % 2 === 1 || fn === sn) {
      r = hashChildren(p, r);
      // If LSB(fn) is not set, right-shift both until LSB(fn) is set or fn is 0.
      while (fn % 2 === 0 && fn !== 0) {
        fn = Math.floor(fn / 2);
        sn = Math.floor(sn / 2);
      }
    } else {
      r = hashChildren(r, p);
    }
    fn = Math.floor(fn / 2);
    sn = Math.floor(sn / 2);
  }
  // 5. sn must be 0 (the path reached the root) and r must equal the root.
  if (sn !== 0) throw wrongLength(proof.length);
  return bytesEqual(r, root);
}

/**
 * Verify that the tree of `size2` leaves with root `root2` extends the tree of `size1`
 * leaves with root `root1` (RFC 9162 §2.1.4.2). Equal sizes need an empty proof and equal
 * roots. See the contract above; note `size1 = 0 < size2` throws, because every tree
 * extends the empty tree and there is nothing to check: skip the call instead.
 */
export function verifyConsistency(
  size1: number,
  size2: number,
  proof: readonly Uint8Array[],
  root1: Uint8Array,
  root2: Uint8Array,
): boolean {
  requireCount(size1, 'first tree size');
  requireCount(size2, 'second tree size');
  requireHash(root1, 'first root hash');
  requireHash(root2, 'second root hash');
  requireProofHashes(proof);
  if (size1 > size2) {
    throw new AuditError('MALFORMED_PROOF', `tree size ${size1} cannot grow into ${size2}`);
  }
  if (size1 === size2) {
    if (proof.length > 0) throw wrongLength(proof.length);
    return bytesEqual(root1, root2);
  }
  if (size1 === 0) {
    throw new AuditError('MALFORMED_PROOF', 'a consistency proof from the empty tree proves nothing');
  }
  // 1. An empty consistency_path fails.
  if (proof.length === 0) throw wrongLength(0);
  // 2. If first is an exact power of 2, prepend first_hash to the path.
  const path = isPowerOfTwo(size1) ? [root1, ...proof] : proof;
  // 3. fn = first - 1, sn = second - 1.
  let fn = size1 - 1;
  let sn = size2 - 1;
  // 4. While LSB(fn) is set, right-shift both.
  while (fn % 2 === 1) {
    fn = Math.floor(fn / 2);
    sn = Math.floor(sn / 2);
  }
  // 5. fr = sr = the first value in the path.
  let fr = path[0]!;
  let sr = path[0]!;
  // 6. For each subsequent value c in the path:
  for (let i = 1; i < path.length; i++) {
    const c = path[i]!;
    if (sn === 0) throw wrongLength(proof.length);
    if (fn % 2 === 1 || fn === sn) {
      fr = hashChildren(c, fr);
      sr = hashChildren(c, sr);
      while (fn % 2 === 0 && fn !== 0) {
        fn = Math.floor(fn / 2);
        sn = Math.floor(sn / 2);
      }
    } else {
      sr = hashChildren(sr, c);
    }
    fn = Math.floor(fn / 2);
    sn = Math.floor(sn / 2);
  }
  // 7. sn must be 0, fr must equal first_hash and sr second_hash.
  if (sn !== 0) throw wrongLength(proof.length);
  return bytesEqual(fr, root1) && bytesEqual(sr, root2);
}

function requireProofHashes(proof: readonly Uint8Array[]): void {
  for (const [i, node] of proof.entries()) requireHash(node, `proof node ${i}`);
}

function isPowerOfTwo(n: number): boolean {
  let k = 1;
  while (k < n) k *= 2;
  return k === n;
}

function wrongLength(length: number): AuditError {
  return new AuditError('MALFORMED_PROOF', `a proof of ${length} nodes does not fit these tree sizes`);
}

function requireCount(value: number, what: string): void {
  if (!Number.isSafeInteger(value) || value < 0) {
    throw new AuditError(
      'MALFORMED_PROOF',
      `${what} must be a non-negative safe integer, got ${String(value)}`,
    );
  }
}

function requireHash(value: Uint8Array, what: string): void {
  if (!(value instanceof Uint8Array) || value.length !== MERKLE_HASH_SIZE) {
    throw new AuditError('MALFORMED_PROOF', `${what} must be ${MERKLE_HASH_SIZE} bytes`);
  }
}
