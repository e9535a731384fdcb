import { bytesToHex, hexToBytes } from '@noble/hashes/utils.js';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { isAuditError } from './errors';
import reference from './fixtures/merkle/rfc6962-reference.json';
import { CompactRange } from './merkle-compact-range';
import { bytesEqual, EMPTY_TREE_ROOT, eventLeafHash, hashChildren, hashLeaf } from './merkle-hash';
import { MemoryMerkleTree } from './merkle-memory-tree';
import { consistencyProof, inclusionProof, type SubtreeSource, treeRoot } from './merkle-proofs';
import {
  consistencyProofPlan,
  inclusionProofPlan,
  rootSubtrees,
  type Subtree,
  subtreeRange,
  subtreesCompletedBy,
} from './merkle-subtrees';
import { verifyConsistency, verifyInclusion } from './merkle-verify';
import { sha256 } from './sha256';

// --- An independent model: RFC 9162 §2.1.1, §2.1.3.1 and §2.1.4.1 written as the RFC's own
// recursive definitions over the list of leaf hashes, recomputing every subtree from scratch.

function mth(leaves: readonly Uint8Array[]): Uint8Array {
  if (leaves.length === 0) return EMPTY_TREE_ROOT;
  if (leaves.length === 1) return leaves[0]!;
  const k = largestPowerOfTwoBelow(leaves.length);
  return hashChildren(mth(leaves.slice(0, k)), mth(leaves.slice(k)));
}

function path(m: number, leaves: readonly Uint8Array[]): Uint8Array[] {
  if (leaves.length <= 1) return [];
  const k = largestPowerOfTwoBelow(leaves.length);
  return m < k
    ? [...path(m, leaves.slice(0, k)), mth(leaves.slice(k))]
    : [...path(m - k, leaves.slice(k)), mth(leaves.slice(0, k))];
}

function subproof(m: number, leaves: readonly Uint8Array[], b: boolean): Uint8Array[] {
  if (m === leaves.length) return b ? [] : [mth(leaves)];
  const k = largestPowerOfTwoBelow(leaves.length);
  return m <= k
    ? [...subproof(m, leaves.slice(0, k), b), mth(leaves.slice(k))]
    : [...subproof(m - k, leaves.slice(k), false), mth(leaves.slice(0, k))];
}

function largestPowerOfTwoBelow(n: number): number {
  let k = 1;
  while (k * 2 < n) k *= 2;
  return k;
}

/** Deterministic distinct leaf hashes. */
function leavesOf(count: number, seed = 0): Uint8Array[] {
  return Array.from({ length: count }, (_, i) => hashLeaf(sha256(`leaf ${seed}/${i}`)));
}

const hex = (bytes: readonly Uint8Array[]) => bytes.map(bytesToHex);
const referenceLeaves = reference.leaves.map((leaf) => hashLeaf(hexToBytes(leaf)));

/** A source that counts what it was asked, to show proofs are O(log n) reads. */
class CountingSource implements SubtreeSource {
  calls = 0;
  requested = 0;
  constructor(private readonly tree: MemoryMerkleTree) {}
  async subtreeHashes(subtrees: readonly Subtree[]): Promise<readonly Uint8Array[]> {
    this.calls++;
    this.requested += subtrees.length;
    return this.tree.subtreeHashes(subtrees);
  }
}

function codeOf(work: () => unknown): string {
  try {
    work();
  } catch (error) {
    if (isAuditError(error)) return error.code;
    throw error;
  }
  return 'no error';
}

async function asyncCodeOf(work: () => Promise<unknown>): Promise<string> {
  try {
    await work();
  } catch (error) {
    if (isAuditError(error)) return error.code;
    throw error;
  }
  return 'no error';
}

describe('MemoryMerkleTree', () => {
  describe('when built from the RFC 6962 reference leaves', () => {
    const tree = MemoryMerkleTree.fromLeafHashes(referenceLeaves);

    it('has the published root at every size', () => {
      expect(reference.roots.map((_, size) => bytesToHex(tree.root(size)))).toEqual(reference.roots);
    });

    it('stores the published hash of every complete subtree', async () => {
      const subtrees = reference.nodeHashes.flatMap((row, level) =>
        row.map((_, index) => ({ level, index })),
      );
      expect(hex(await tree.subtreeHashes(subtrees))).toEqual(reference.nodeHashes.flat());
    });
  });

  describe('when asked for a subtree that is not complete', () => {
    it('throws MALFORMED_PROOF', async () => {
      const tree = MemoryMerkleTree.fromLeafHashes(leavesOf(5));
      expect(await asyncCodeOf(() => tree.subtreeHashes([{ level: 1, index: 2 }]))).toBe('MALFORMED_PROOF');
    });
  });

  describe('when asked for a root past its size', () => {
    it('throws MALFORMED_PROOF', () => {
      expect(codeOf(() => MemoryMerkleTree.fromLeafHashes(leavesOf(5)).root(6))).toBe('MALFORMED_PROOF');
    });
  });

  describe('when given a leaf hash that is not 32 bytes', () => {
    it('throws MALFORMED_PROOF', () => {
      expect(codeOf(() => new MemoryMerkleTree().append(new Uint8Array(31)))).toBe('MALFORMED_PROOF');
    });
  });

  describe('when hashing the draft-ietf-plants-merkle-tree-certs subtree vector', () => {
    // testonly/vectors_test.go TestSubtreeHashVectors: leaves d[i] = byte i for 130 leaves;
    // for every valid subtree [start, end) (start = 0 or a multiple of bit_ceil(end - start)),
    // the line "[start, end) <hex MTH(d[start:end])>\n", all fed to one SHA-256.
    it('gives the published digest', () => {
      const { leafCount, sha256: want } = reference.subtreeHashVector;
      const leaves = Array.from({ length: leafCount }, (_, i) => hashLeaf(Uint8Array.of(i)));
      let lines = '';
      for (let end = 1; end <= leafCount; end++) {
        for (let start = 0; start < end; start++) {
          let bitCeil = 1;
          while (bitCeil < end - start) bitCeil *= 2;
          if (start !== 0 && start % bitCeil !== 0) continue;
          lines += `[${start}, ${end}) ${bytesToHex(MemoryMerkleTree.fromLeafHashes(leaves.slice(start, end)).root())}\n`;
        }
      }
      expect(bytesToHex(sha256(lines))).toBe(want);
    });
  });
});

describe('inclusionProof', () => {
  describe('when reading the RFC 6962 reference tree', () => {
    it.each(reference.inclusionProofs)(
      'gives the published proof for leaf $leafIndex in $treeSize',
      async (vector) => {
        const tree = MemoryMerkleTree.fromLeafHashes(referenceLeaves);
        const proof = await inclusionProof(tree, { index: vector.leafIndex, treeSize: vector.treeSize });
        expect(hex(proof)).toEqual(vector.proof);
      },
    );
  });

  describe('when compared with the RFC recursive definition', () => {
    it('gives PATH(m, D[n]) for every leaf of every tree up to 33 leaves', async () => {
      const leaves = leavesOf(33);
      const tree = MemoryMerkleTree.fromLeafHashes(leaves);
      for (let n = 1; n <= leaves.length; n++) {
        for (let m = 0; m < n; m++) {
          const proof = await inclusionProof(tree, { index: m, treeSize: n });
          expect(hex(proof)).toEqual(hex(path(m, leaves.slice(0, n))));
        }
      }
    });
  });

  describe('when the tree is large', () => {
    it('reads O(log n) subtrees in one batch', async () => {
      const source = new CountingSource(MemoryMerkleTree.fromLeafHashes(leavesOf(1000)));
      await inclusionProof(source, { index: 3, treeSize: 999 });
      expect(source.calls).toBe(1);
      expect(source.requested).toBeLessThanOrEqual(2 * Math.ceil(Math.log2(999)));
    });
  });

  describe('when the source answers with the wrong number of hashes', () => {
    it('throws MALFORMED_PROOF', async () => {
      const source: SubtreeSource = { subtreeHashes: async () => [] };
      expect(await asyncCodeOf(() => inclusionProof(source, { index: 0, treeSize: 8 }))).toBe(
        'MALFORMED_PROOF',
      );
    });
  });
});

describe('consistencyProof', () => {
  describe('when reading the RFC 6962 reference tree', () => {
    it.each(reference.consistencyProofs)('gives the published proof for $size1 -> $size2', async (vector) => {
      const tree = MemoryMerkleTree.fromLeafHashes(referenceLeaves);
      const proof = await consistencyProof(tree, { size1: vector.size1, size2: vector.size2 });
      expect(hex(proof)).toEqual(vector.proof);
    });
  });

  describe('when compared with the RFC recursive definition', () => {
    it('gives PROOF(m, D[n]) for every pair of sizes up to 33 leaves', async () => {
      const leaves = leavesOf(33);
      const tree = MemoryMerkleTree.fromLeafHashes(leaves);
      for (let n = 1; n <= leaves.length; n++) {
        for (let m = 1; m <= n; m++) {
          const proof = await consistencyProof(tree, { size1: m, size2: n });
          expect(hex(proof)).toEqual(hex(subproof(m, leaves.slice(0, n), true)));
        }
      }
    });
  });

  describe('when the first size is 0 or larger than the second', () => {
    it.each([
      [0, 5],
      [6, 5],
    ])('throws MALFORMED_PROOF for %i -> %i', async (size1, size2) => {
      const tree = MemoryMerkleTree.fromLeafHashes(leavesOf(6));
      expect(await asyncCodeOf(() => consistencyProof(tree, { size1, size2 }))).toBe('MALFORMED_PROOF');
    });
  });
});

describe('treeRoot', () => {
  describe('when reading stored subtrees', () => {
    it('equals the RFC recursive MTH at every size up to 40', async () => {
      const leaves = leavesOf(40);
      const tree = MemoryMerkleTree.fromLeafHashes(leaves);
      for (let n = 0; n <= leaves.length; n++) {
        expect(bytesToHex(await treeRoot(tree, n))).toBe(bytesToHex(mth(leaves.slice(0, n))));
      }
    });
  });
});

describe('generated proofs (property)', () => {
  const leaves = leavesOf(300, 1);
  const tree = MemoryMerkleTree.fromLeafHashes(leaves);
  const sizeAndIndex = fc
    .integer({ min: 1, max: leaves.length })
    .chain((size) => fc.tuple(fc.constant(size), fc.integer({ min: 0, max: size - 1 })));
  const sizePair = fc
    .integer({ min: 1, max: leaves.length })
    .chain((size2) => fc.tuple(fc.integer({ min: 1, max: size2 }), fc.constant(size2)));

  const rejected = (verify: () => boolean) => {
    try {
      return !verify();
    } catch (error) {
      return isAuditError(error) && error.code === 'MALFORMED_PROOF';
    }
  };

  describe('when an inclusion proof is checked as generated', () => {
    it('verifies', async () => {
      await fc.assert(
        fc.asyncProperty(sizeAndIndex, async ([size, index]) => {
          const proof = await inclusionProof(tree, { index, treeSize: size });
          expect(verifyInclusion(leaves[index]!, index, size, proof, tree.root(size))).toBe(true);
        }),
        { numRuns: 200 },
      );
    });
  });

  describe('when one bit of an inclusion proof, leaf or root is flipped', () => {
    it('is rejected', async () => {
      await fc.assert(
        fc.asyncProperty(sizeAndIndex, fc.nat(), async ([size, index], pick) => {
          const proof = await inclusionProof(tree, { index, treeSize: size });
          // One buffer of bits: the proof nodes, then the leaf hash, then the root.
          const parts = [...proof, leaves[index]!, tree.root(size)];
          const bit = pick % (parts.length * 256);
          const part = Math.floor(bit / 256);
          const flipped = parts.map((p, i) => (i === part ? flip(p, bit % 256) : p));
          const root = flipped.pop()!;
          const leaf = flipped.pop()!;
          expect(rejected(() => verifyInclusion(leaf, index, size, flipped, root))).toBe(true);
        }),
        { numRuns: 300 },
      );
    });
  });

  describe('when the index or size of an inclusion proof is changed', () => {
    it('is rejected', async () => {
      await fc.assert(
        fc.asyncProperty(sizeAndIndex, fc.integer({ min: 1, max: 64 }), async ([size, index], delta) => {
          const proof = await inclusionProof(tree, { index, treeSize: size });
          const root = tree.root(size);
          expect(rejected(() => verifyInclusion(leaves[index]!, index + delta, size, proof, root))).toBe(
            true,
          );
          if (index >= delta) {
            expect(rejected(() => verifyInclusion(leaves[index]!, index - delta, size, proof, root))).toBe(
              true,
            );
          }
        }),
        { numRuns: 200 },
      );
    });
  });

  describe('when a consistency proof is checked as generated', () => {
    it('verifies', async () => {
      await fc.assert(
        fc.asyncProperty(sizePair, async ([size1, size2]) => {
          const proof = await consistencyProof(tree, { size1, size2 });
          expect(verifyConsistency(size1, size2, proof, tree.root(size1), tree.root(size2))).toBe(true);
        }),
        { numRuns: 200 },
      );
    });
  });

  describe('when one bit of a consistency proof or either root is flipped', () => {
    it('is rejected', async () => {
      await fc.assert(
        fc.asyncProperty(sizePair, fc.nat(), async ([size1, size2], pick) => {
          const proof = await consistencyProof(tree, { size1, size2 });
          const parts = [...proof, tree.root(size1), tree.root(size2)];
          const bit = pick % (parts.length * 256);
          const part = Math.floor(bit / 256);
          const flipped = parts.map((p, i) => (i === part ? flip(p, bit % 256) : p));
          const root2 = flipped.pop()!;
          const root1 = flipped.pop()!;
          expect(rejected(() => verifyConsistency(size1, size2, flipped, root1, root2))).toBe(true);
        }),
        { numRuns: 300 },
      );
    });
  });

  describe('when a consistency proof loses or gains a node', () => {
    it('throws MALFORMED_PROOF', async () => {
      await fc.assert(
        fc.asyncProperty(sizePair, async ([size1, size2]) => {
          fc.pre(size1 < size2);
          const proof = await consistencyProof(tree, { size1, size2 });
          const [root1, root2] = [tree.root(size1), tree.root(size2)];
          const longer = [...proof, root2];
          expect(codeOf(() => verifyConsistency(size1, size2, proof.slice(1), root1, root2))).toBe(
            'MALFORMED_PROOF',
          );
          expect(codeOf(() => verifyConsistency(size1, size2, longer, root1, root2))).toBe('MALFORMED_PROOF');
        }),
        { numRuns: 200 },
      );
    });
  });
});

function flip(bytes: Uint8Array, bit: number): Uint8Array {
  const copy = bytes.slice();
  copy[Math.floor(bit / 8)]! ^= 1 << (bit % 8);
  return copy;
}

describe('proof plans', () => {
  describe('when planning proofs in trees of any size', () => {
    it('covers each node range exactly with aligned subtrees, at most one node partial', () => {
      fc.assert(
        fc.property(fc.integer({ min: 1, max: 2 ** 40 }), fc.nat(), fc.nat(), (size, a, b) => {
          const plans = [inclusionProofPlan(a % size, size), consistencyProofPlan((b % size) + 1, size)];
          for (const plan of plans) {
            for (const node of plan) {
              let position = node.start;
              for (const subtree of node.subtrees) {
                const range = subtreeRange(subtree);
                expect(range.start).toBe(position);
                position = range.end;
              }
              expect(position).toBe(node.end);
            }
            expect(plan.filter((node) => node.subtrees.length > 1).length).toBeLessThanOrEqual(1);
            expect(plan.flatMap((node) => node.subtrees).length).toBeLessThanOrEqual(2 * Math.log2(size) + 2);
          }
        }),
      );
    });
  });

  describe('when the numbers are out of range', () => {
    it.each([
      ['an index equal to the size', () => inclusionProofPlan(4, 4)],
      ['a negative index', () => inclusionProofPlan(-1, 4)],
      ['an unsafe size', () => rootSubtrees(2 ** 53)],
      ['a fractional leaf index', () => subtreesCompletedBy(1.5)],
    ])('throws MALFORMED_PROOF for %s', (_, work) => {
      expect(codeOf(work)).toBe('MALFORMED_PROOF');
    });
  });
});

describe('CompactRange', () => {
  describe('when fed the RFC 6962 reference leaves', () => {
    it('has the published root after every append', () => {
      const range = new CompactRange();
      const seen = [bytesToHex(range.root())];
      for (const leaf of referenceLeaves) {
        range.append(leaf);
        seen.push(bytesToHex(range.root()));
      }
      expect(seen).toEqual(reference.roots);
    });

    it('reports exactly the complete subtrees each leaf completes, with their published hashes', () => {
      const range = new CompactRange();
      referenceLeaves.forEach((leaf, i) => {
        const completed = range.append(leaf);
        expect(completed.map(({ level, index }) => ({ level, index }))).toEqual(subtreesCompletedBy(i));
        for (const { level, index, hash } of completed) {
          expect(bytesToHex(hash)).toBe(reference.nodeHashes[level]![index]);
        }
      });
    });
  });

  describe('when resumed from a stored frontier', () => {
    it('continues to the same roots as an uninterrupted range', async () => {
      const leaves = leavesOf(200, 2);
      const tree = MemoryMerkleTree.fromLeafHashes(leaves);
      await fc.assert(
        fc.asyncProperty(fc.integer({ min: 0, max: 199 }), async (split) => {
          const frontier = await tree.subtreeHashes(rootSubtrees(split));
          const range = CompactRange.fromFrontier(split, frontier);
          for (const leaf of leaves.slice(split)) range.append(leaf);
          expect(range.size).toBe(200);
          expect(bytesToHex(range.root())).toBe(bytesToHex(tree.root()));
          expect(hex(range.frontier())).toEqual(hex(await tree.subtreeHashes(rootSubtrees(200))));
        }),
        { numRuns: 50 },
      );
    });
  });

  describe('when the frontier does not fit the size', () => {
    it('throws MALFORMED_PROOF', () => {
      expect(codeOf(() => CompactRange.fromFrontier(3, [EMPTY_TREE_ROOT]))).toBe('MALFORMED_PROOF');
    });
  });

  describe('when given a leaf hash that is not 32 bytes', () => {
    it('throws MALFORMED_PROOF', () => {
      expect(codeOf(() => new CompactRange().append(new Uint8Array(33)))).toBe('MALFORMED_PROOF');
    });
  });
});

describe('eventLeafHash', () => {
  describe('when given an event hash', () => {
    it('hashes its 32 decoded bytes as an RFC 6962 leaf', () => {
      const eventHash = 'ab'.repeat(32);
      expect(bytesToHex(eventLeafHash(eventHash))).toBe(
        bytesToHex(sha256(Uint8Array.of(0, ...hexToBytes(eventHash)))),
      );
    });
  });

  describe('when the event hash is not 64 lowercase hex digits', () => {
    it.each(['AB'.repeat(32), 'ab'.repeat(31), `${'ab'.repeat(31)}zz`])(
      'throws MALFORMED_PROOF for %s',
      (text) => {
        expect(codeOf(() => eventLeafHash(text))).toBe('MALFORMED_PROOF');
      },
    );
  });
});

describe('bytesEqual', () => {
  describe('when the lengths differ', () => {
    it('returns false even when one is a prefix of the other', () => {
      expect(bytesEqual(Uint8Array.of(1, 2), Uint8Array.of(1, 2, 3))).toBe(false);
    });
  });

  describe('when one byte differs', () => {
    it('returns false', () => {
      expect(bytesEqual(Uint8Array.of(1, 2, 3), Uint8Array.of(1, 2, 4))).toBe(false);
    });
  });
});
