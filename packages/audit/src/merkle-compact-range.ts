import { AuditError } from './errors';
import { EMPTY_TREE_ROOT, hashChildren, MERKLE_HASH_SIZE } from './merkle-hash';
import { foldFromRight } from './merkle-proofs';
import { rootSubtrees, type SubtreeHash } from './merkle-subtrees';

/**
 * The right edge of a Merkle tree (a compact range over `[0, size)`): only the hashes of
 * the complete subtrees `rootSubtrees(size)` names, at most one per level, so O(log n)
 * memory for a tree of any size. Enough to append leaves and compute the root, which is
 * what bundle verification needs to rebuild a root from a stream, and what an append needs
 * to learn which subtree hashes it completes.
 *
 * @example
 * const range = new CompactRange();
 * for await (const event of events) range.append(eventLeafHash(event.hash));
 * bytesEqual(range.root(), checkpoint.rootHash);
 */
export class CompactRange {
  #size = 0;
  /** Hashes of `rootSubtrees(#size)`, left to right (largest first). */
  #frontier: Uint8Array[] = [];

  /**
   * Resume from stored state: `frontier` holds the hashes of `rootSubtrees(size)`, left to
   * right, for example read from the ledger's subtree table.
   */
  static fromFrontier(size: number, frontier: readonly Uint8Array[]): CompactRange {
    const expected = rootSubtrees(size).length;
    if (frontier.length !== expected || frontier.some((hash) => hash.length !== MERKLE_HASH_SIZE)) {
      throw new AuditError(
        'MALFORMED_PROOF',
        `a tree of ${size} leaves has ${expected} frontier hashes of ${MERKLE_HASH_SIZE} bytes, got ${frontier.length}`,
      );
    }
    const range = new CompactRange();
    range.#size = size;
    range.#frontier = [...frontier];
    return range;
  }

  /** Number of leaves appended so far. */
  get size(): number {
    return this.#size;
  }

  /** The frontier hashes, left to right (see `fromFrontier`). */
  frontier(): Uint8Array[] {
    return [...this.#frontier];
  }

  /**
   * Append one leaf hash. Returns the complete subtrees this leaf completed, from the leaf
   * itself (level 0) upward, with their hashes: exactly the rows the ledger stores.
   */
  append(leafHash: Uint8Array): SubtreeHash[] {
    if (leafHash.length !== MERKLE_HASH_SIZE) {
      throw new AuditError('MALFORMED_PROOF', `a leaf hash must be ${MERKLE_HASH_SIZE} bytes`);
    }
    let hash = leafHash;
    let index = this.#size;
    let level = 0;
    const completed: SubtreeHash[] = [{ level, index, hash }];
    // Each odd index at a level means its left sibling is the last frontier hash: merge.
    while (index % 2 === 1) {
      hash = hashChildren(this.#frontier.pop()!, hash);
      index = (index - 1) / 2;
      level++;
      completed.push({ level, index, hash });
    }
    this.#frontier.push(hash);
    this.#size++;
    return completed;
  }

  /** Root hash of the leaves appended so far (the empty-tree hash before the first). */
  root(): Uint8Array {
    return this.#frontier.length === 0 ? EMPTY_TREE_ROOT : foldFromRight(this.#frontier);
  }
}
