import { hexToBytes } from '@noble/hashes/utils.js';
import { AuditError } from './errors';
import { isHex64 } from './hex64';
import { sha256 } from './sha256';

/** Width in bytes of every Merkle hash (SHA-256). */
export const MERKLE_HASH_SIZE = 32;

/** RFC 6962 §2.1 / RFC 9162 §2.1.1: the root of the empty tree is SHA-256 of nothing. */
export const EMPTY_TREE_ROOT: Uint8Array = sha256(new Uint8Array(0));

const LEAF_PREFIX = 0x00;
const NODE_PREFIX = 0x01;

/**
 * RFC 9162 §2.1.1 leaf hash: `SHA-256(0x00 || leaf)`. The prefix separates leaves from
 * interior nodes, so no interior node can be passed off as a leaf (second preimage).
 */
export function hashLeaf(leaf: Uint8Array): Uint8Array {
  const input = new Uint8Array(1 + leaf.length);
  input[0] = LEAF_PREFIX;
  input.set(leaf, 1);
  return sha256(input);
}

/** RFC 9162 §2.1.1 interior node hash: `SHA-256(0x01 || left || right)`. */
export function hashChildren(left: Uint8Array, right: Uint8Array): Uint8Array {
  const input = new Uint8Array(1 + left.length + right.length);
  input[0] = NODE_PREFIX;
  input.set(left, 1);
  input.set(right, 1 + left.length);
  return sha256(input);
}

/**
 * {@link hashLeaf} and {@link hashChildren} with one input buffer each, reused from call to
 * call: the same hashes without allocating and copying into a fresh input for every node,
 * for loops that hash a whole log (verification recomputes about two nodes per event).
 * Inputs of another size than a hash take the plain functions.
 */
export class MerkleHasher {
  readonly #leaf = new Uint8Array(1 + MERKLE_HASH_SIZE);
  readonly #node = new Uint8Array(1 + 2 * MERKLE_HASH_SIZE);

  constructor() {
    this.#leaf[0] = LEAF_PREFIX;
    this.#node[0] = NODE_PREFIX;
  }

  /** `hashLeaf(leaf)`. */
  leaf(leaf: Uint8Array): Uint8Array {
    if (leaf.length !== MERKLE_HASH_SIZE) return hashLeaf(leaf);
    this.#leaf.set(leaf, 1);
    return sha256(this.#leaf);
  }

  /** `hashChildren(left, right)`. */
  children(left: Uint8Array, right: Uint8Array): Uint8Array {
    if (left.length !== MERKLE_HASH_SIZE || right.length !== MERKLE_HASH_SIZE)
      return hashChildren(left, right);
    this.#node.set(left, 1);
    this.#node.set(right, 1 + MERKLE_HASH_SIZE);
    return sha256(this.#node);
  }
}

/**
 * The Merkle leaf hash of an audit event: the leaf is the event's 32-byte `hash`
 * (hex-decoded), not its payload, so a payload can later be redacted from storage while
 * every inclusion and consistency proof stays valid.
 *
 * Throws `AuditError` `MALFORMED_PROOF` when `eventHash` is not 64 lowercase hex digits.
 */
export function eventLeafHash(eventHash: string): Uint8Array {
  if (!isHex64(eventHash)) {
    throw new AuditError('MALFORMED_PROOF', 'an event hash must be 64 lowercase hex digits');
  }
  return hashLeaf(hexToBytes(eventHash));
}

/** True when both are byte-for-byte equal. Merkle hashes are public, so no constant time is needed. */
export function bytesEqual(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}
