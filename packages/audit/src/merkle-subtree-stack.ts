import { decodeHex64Into } from './hex64';
import { EMPTY_TREE_ROOT, MERKLE_HASH_SIZE, MerkleHasher } from './merkle-hash';
import { foldFromRight } from './merkle-proofs';
import type { SubtreeHash } from './merkle-subtrees';

/**
 * A compact range `[begin, end)` of a Merkle tree that may start anywhere: the complete
 * aligned subtrees covering it, left to right, merged as soon as two siblings meet. Built
 * from `[0, n)` it is a `CompactRange`'s frontier; built from a part of the leaves, it is
 * what verifying that part in parallel hands back, and pushing those subtrees in order
 * onto the stack of the leaves before joins the two (the same merges, in another order).
 *
 * Leaves are event hashes in hex, hashed through one reused buffer: verifying a bundle
 * hashes about two nodes per event, and allocating for each was a tenth of the time.
 */
export class SubtreeStack {
  readonly #hasher = new MerkleHasher();
  readonly #leaf = new Uint8Array(MERKLE_HASH_SIZE);
  readonly #nodes: SubtreeHash[] = [];
  #end: number;

  /** An empty range starting at leaf `begin`. */
  constructor(begin = 0) {
    this.#end = begin;
  }

  /** Index of the next leaf. */
  get end(): number {
    return this.#end;
  }

  /** The subtrees, left to right. */
  subtrees(): SubtreeHash[] {
    return [...this.#nodes];
  }

  /** Append the leaf of an event hash (64 lowercase hex digits, checked by the caller). */
  appendEventHash(hex: string, onMerged?: (node: SubtreeHash) => void): void {
    decodeHex64Into(hex, this.#leaf);
    this.push({ level: 0, index: this.#end, hash: this.#hasher.leaf(this.#leaf) }, onMerged);
  }

  /**
   * Append a complete subtree that starts where this range ends. `onMerged` sees every node
   * the append completes by merging siblings, lowest first (a verifier compares each with its
   * stored copy).
   */
  push(subtree: SubtreeHash, onMerged?: (node: SubtreeHash) => void): void {
    const size = 2 ** subtree.level;
    if (subtree.index * size !== this.#end) {
      throw new RangeError(`subtree ${subtree.level}/${subtree.index} does not start at leaf ${this.#end}`);
    }
    this.#end += size;
    let node = subtree;
    let left = this.#nodes.at(-1);
    while (left !== undefined && left.level === node.level && left.index % 2 === 0) {
      this.#nodes.pop();
      node = {
        level: node.level + 1,
        index: left.index / 2,
        hash: this.#hasher.children(left.hash, node.hash),
      };
      onMerged?.(node);
      left = this.#nodes.at(-1);
    }
    this.#nodes.push(node);
  }

  /** The Merkle root of a range that starts at leaf 0. */
  root(): Uint8Array {
    return this.#nodes.length === 0 ? EMPTY_TREE_ROOT : foldFromRight(this.#nodes.map((node) => node.hash));
  }
}
