import { AuditError } from './errors';
import { EMPTY_TREE_ROOT, hashChildren, MERKLE_HASH_SIZE } from './merkle-hash';
import { foldFromRight, type SubtreeSource } from './merkle-proofs';
import { rootSubtrees, type Subtree } from './merkle-subtrees';

/**
 * A whole Merkle tree in memory: every complete subtree hash, level by level (about 2n
 * hashes). It answers proofs exactly as the ledger's stored subtrees do, which makes it the
 * reference for tests and small exports. For a stream of any length use `CompactRange`.
 */
export class MemoryMerkleTree implements SubtreeSource {
  /** `levels[L][k]`: hash of the complete subtree over leaves `[k * 2^L, (k + 1) * 2^L)`. */
  readonly #levels: Uint8Array[][] = [[]];

  /** A tree over the given leaf hashes (RFC 9162 leaf hashes, not raw leaves). */
  static fromLeafHashes(leafHashes: Iterable<Uint8Array>): MemoryMerkleTree {
    const tree = new MemoryMerkleTree();
    for (const leafHash of leafHashes) tree.append(leafHash);
    return tree;
  }

  /** Number of leaves. */
  get size(): number {
    return this.#levels[0]!.length;
  }

  /** Append one leaf hash and store every subtree it completes. */
  append(leafHash: Uint8Array): void {
    if (leafHash.length !== MERKLE_HASH_SIZE) {
      throw new AuditError('MALFORMED_PROOF', `a leaf hash must be ${MERKLE_HASH_SIZE} bytes`);
    }
    let level = 0;
    let hash = leafHash;
    this.#levels[0]!.push(hash);
    while (this.#levels[level]!.length % 2 === 0) {
      const row = this.#levels[level]!;
      hash = hashChildren(row[row.length - 2]!, hash);
      level++;
      this.#levels[level] ??= [];
      this.#levels[level]!.push(hash);
    }
  }

  /** Root hash at `treeSize` leaves (default: all of them). */
  root(treeSize: number = this.size): Uint8Array {
    if (treeSize > this.size) {
      throw new AuditError('MALFORMED_PROOF', `tree has ${this.size} leaves, not ${treeSize}`);
    }
    const subtrees = rootSubtrees(treeSize);
    return subtrees.length === 0 ? EMPTY_TREE_ROOT : foldFromRight(subtrees.map((s) => this.#hashOf(s)));
  }

  async subtreeHashes(subtrees: readonly Subtree[]): Promise<readonly Uint8Array[]> {
    return subtrees.map((subtree) => this.#hashOf(subtree));
  }

  #hashOf(subtree: Subtree): Uint8Array {
    const hash = this.#levels[subtree.level]?.[subtree.index];
    if (hash === undefined) {
      throw new AuditError(
        'MALFORMED_PROOF',
        `subtree at level ${subtree.level}, index ${subtree.index} is not complete in a tree of ${this.size} leaves`,
      );
    }
    return hash;
  }
}
