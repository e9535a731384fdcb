import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { hashChildren, hashLeaf, MerkleHasher } from './merkle-hash';

describe('MerkleHasher', () => {
  describe('when one hasher hashes many leaves and nodes in a row', () => {
    it('gives exactly what hashLeaf and hashChildren give, whatever it hashed before', () => {
      const hasher = new MerkleHasher();
      fc.assert(
        fc.property(
          fc.uint8Array({ minLength: 0, maxLength: 40 }),
          fc.uint8Array({ minLength: 32, maxLength: 32 }),
          fc.uint8Array({ minLength: 31, maxLength: 33 }),
          (leaf, left, right) => {
            expect(hasher.leaf(leaf)).toEqual(hashLeaf(leaf));
            expect(hasher.children(left, right)).toEqual(hashChildren(left, right));
            const first = hasher.leaf(left);
            const second = hasher.leaf(left.map((b) => b ^ 0xff));
            // A result is never a view of the reused input: the second call left the first alone.
            expect(first).toEqual(hashLeaf(left));
            expect(second).not.toEqual(first);
          },
        ),
      );
    });
  });
});
