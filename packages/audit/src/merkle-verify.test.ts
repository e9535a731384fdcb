import { hexToBytes } from '@noble/hashes/utils.js';
import { describe, expect, it } from 'vitest';
import { decodeBase64 } from './base64';
import { isAuditError } from './errors';
import reference from './fixtures/merkle/rfc6962-reference.json';
import probes from './fixtures/merkle/transparency-dev-probes.json';
import { EMPTY_TREE_ROOT, hashLeaf } from './merkle-hash';
import { verifyConsistency, verifyInclusion } from './merkle-verify';

type Outcome = 'proven' | 'not proven' | 'MALFORMED_PROOF';

/** What a verifier call said: true, false, or the AuditError code it threw. */
function outcomeOf(verify: () => boolean): Outcome {
  try {
    return verify() ? 'proven' : 'not proven';
  } catch (error) {
    if (isAuditError(error) && error.code === 'MALFORMED_PROOF') return 'MALFORMED_PROOF';
    throw error;
  }
}

function b64(text: string): Uint8Array {
  const bytes = decodeBase64(text);
  if (bytes === undefined) throw new Error(`fixture holds invalid base64 ${text}`);
  return bytes;
}

const leafHashes = reference.leaves.map((leaf) => hashLeaf(hexToBytes(leaf)));
const roots = reference.roots.map((root) => hexToBytes(root));
const someHash = hexToBytes(reference.someHash);
const text = (s: string) => new TextEncoder().encode(s);

function flipBit(bytes: Uint8Array, bit: number): Uint8Array {
  const copy = bytes.slice();
  copy[Math.floor(bit / 8)]! ^= 1 << (bit % 8);
  return copy;
}

// The corruptions transparency-dev/merkle applies to every known-good proof
// (cmd/proofgen/main.go invalidInclusionProof / invalidConsistencyProof, ported): each must
// be refused, whether by `false` or by MALFORMED_PROOF.
interface InclusionProbe {
  desc: string;
  index: number;
  treeSize: number;
  leafHash: Uint8Array;
  proof: Uint8Array[];
  root: Uint8Array;
}

function corruptInclusion(good: Omit<InclusionProbe, 'desc'>): InclusionProbe[] {
  const { index, treeSize, proof, root } = good;
  const probes: InclusionProbe[] = [
    { ...good, desc: 'leafIdx - 1', index: index - 1 },
    { ...good, desc: 'leafIdx + 1', index: index + 1 },
    { ...good, desc: 'leafIdx ^ 2', index: index ^ 2 },
    { ...good, desc: 'treeSize * 2', treeSize: treeSize * 2 },
    { ...good, desc: 'treeSize / 2', treeSize: Math.floor(treeSize / 2) },
    { ...good, desc: 'wrong leaf', leafHash: text('WrongLeaf') },
    { ...good, desc: 'empty root', root: EMPTY_TREE_ROOT },
    { ...good, desc: 'random root', root: someHash },
    { ...good, desc: 'trailing garbage', proof: [...proof, new Uint8Array(0)] },
    { ...good, desc: 'trailing root', proof: [...proof, root] },
    { ...good, desc: 'preceding garbage', proof: [new Uint8Array(0), ...proof] },
    { ...good, desc: 'preceding root', proof: [root, ...proof] },
  ];
  proof.forEach((_, i) => {
    const wrong = [...proof];
    wrong[i] = flipBit(proof[i]!, 3);
    probes.push({ ...good, desc: `modified proof[${i}] bit 3`, proof: wrong });
  });
  if (proof.length > 0) probes.push({ ...good, desc: 'removed component', proof: proof.slice(0, -1) });
  if (proof.length > 1) {
    probes.push({ ...good, desc: 'inserted component', proof: [proof[0]!, someHash, ...proof.slice(1)] });
  }
  return probes;
}

interface ConsistencyProbe {
  desc: string;
  size1: number;
  size2: number;
  proof: Uint8Array[];
  root1: Uint8Array;
  root2: Uint8Array;
}

function corruptConsistency(good: Omit<ConsistencyProbe, 'desc'>): ConsistencyProbe[] {
  const { size1, size2, proof, root1, root2 } = good;
  const probes: ConsistencyProbe[] = [
    { ...good, desc: 'size1 - 1', size1: size1 - 1 },
    { ...good, desc: 'size1 + 1', size1: size1 + 1 },
    { ...good, desc: 'size1 ^ 2', size1: size1 ^ 2 },
    { ...good, desc: 'size2 * 2', size2: size2 * 2 },
    { ...good, desc: 'size2 / 2', size2: Math.floor(size2 / 2) },
    { ...good, desc: 'wrong root1', root1: text('WrongRoot') },
    { ...good, desc: 'wrong root2', root2: text('WrongRoot') },
    { ...good, desc: 'swapped roots', root1: root2, root2: root1 },
    { ...good, desc: 'empty proof', proof: [] },
    { ...good, desc: 'trailing garbage', proof: [...proof, new Uint8Array(0)] },
    { ...good, desc: 'trailing root1', proof: [...proof, root1] },
    { ...good, desc: 'trailing root2', proof: [...proof, root2] },
    { ...good, desc: 'preceding garbage', proof: [new Uint8Array(0), ...proof] },
    { ...good, desc: 'preceding root1', proof: [root1, ...proof] },
    { ...good, desc: 'preceding root2', proof: [root2, ...proof] },
    { ...good, desc: 'preceding proof[0]', proof: [proof[0]!, ...proof] },
    { ...good, desc: 'truncated proof', proof: proof.slice(0, -1) },
  ];
  proof.forEach((_, i) => {
    const wrong = [...proof];
    wrong[i] = flipBit(proof[i]!, 4);
    probes.push({ ...good, desc: `modified proof[${i}] bit 4`, proof: wrong });
  });
  return probes;
}

describe('verifyInclusion', () => {
  describe('when given the published transparency-dev/merkle probes', () => {
    it.each(probes.inclusion)('$source is $desc (wantErr $wantErr)', (probe) => {
      const outcome = outcomeOf(() =>
        verifyInclusion(
          b64(probe.leafHash),
          probe.leafIdx,
          probe.treeSize,
          (probe.proof ?? []).map(b64),
          b64(probe.root),
        ),
      );
      if (probe.wantErr) expect(outcome).not.toBe('proven');
      else expect(outcome).toBe('proven');
    });
  });

  describe('when given the RFC 6962 reference proofs', () => {
    it.each(reference.inclusionProofs)('proves leaf $leafIndex in a tree of $treeSize', (vector) => {
      const proof = vector.proof.map((hex) => hexToBytes(hex));
      expect(
        verifyInclusion(
          leafHashes[vector.leafIndex]!,
          vector.leafIndex,
          vector.treeSize,
          proof,
          roots[vector.treeSize]!,
        ),
      ).toBe(true);
    });

    it.each(reference.inclusionProofs)(
      'refuses every corruption of leaf $leafIndex in $treeSize',
      (vector) => {
        const good = {
          index: vector.leafIndex,
          treeSize: vector.treeSize,
          leafHash: leafHashes[vector.leafIndex]!,
          proof: vector.proof.map((hex) => hexToBytes(hex)),
          root: roots[vector.treeSize]!,
        };
        const accepted = corruptInclusion(good).filter(
          (p) =>
            outcomeOf(() => verifyInclusion(p.leafHash, p.index, p.treeSize, p.proof, p.root)) === 'proven',
        );
        expect(accepted.map((p) => p.desc)).toEqual([]);
      },
    );
  });

  describe('when the proof has the right shape but other hashes', () => {
    it('returns false for a wrong root', () => {
      expect(verifyInclusion(leafHashes[0]!, 0, 1, [], someHash)).toBe(false);
    });

    it('returns false for a flipped proof bit', () => {
      const proof: Uint8Array[] = reference.inclusionProofs[1]!.proof.map((hex) => hexToBytes(hex));
      proof[2] = flipBit(proof[2]!, 200);
      expect(verifyInclusion(leafHashes[0]!, 0, 8, proof, roots[8]!)).toBe(false);
    });
  });

  describe('when the input cannot be a proof for these sizes', () => {
    const proof8 = reference.inclusionProofs[1]!.proof.map((hex) => hexToBytes(hex));
    it.each([
      ['an index equal to the size', () => verifyInclusion(leafHashes[0]!, 8, 8, proof8, roots[8]!)],
      ['an empty tree', () => verifyInclusion(leafHashes[0]!, 0, 0, [], EMPTY_TREE_ROOT)],
      ['a negative index', () => verifyInclusion(leafHashes[0]!, -1, 8, proof8, roots[8]!)],
      ['a fractional size', () => verifyInclusion(leafHashes[0]!, 0, 7.5, proof8, roots[8]!)],
      ['a size past 2^53', () => verifyInclusion(leafHashes[0]!, 0, 2 ** 53, proof8, roots[8]!)],
      ['a short leaf hash', () => verifyInclusion(leafHashes[0]!.subarray(1), 0, 8, proof8, roots[8]!)],
      ['a short root', () => verifyInclusion(leafHashes[0]!, 0, 8, proof8, roots[8]!.subarray(1))],
      [
        'a short proof node',
        () => verifyInclusion(leafHashes[0]!, 0, 8, [proof8[0]!.subarray(1)], roots[8]!),
      ],
      ['a proof one node short', () => verifyInclusion(leafHashes[0]!, 0, 8, proof8.slice(1), roots[8]!)],
      [
        'a proof one node long',
        () => verifyInclusion(leafHashes[0]!, 0, 8, [...proof8, someHash], roots[8]!),
      ],
    ])('throws MALFORMED_PROOF for %s', (_, verify) => {
      expect(outcomeOf(verify)).toBe('MALFORMED_PROOF');
    });
  });
});

describe('verifyConsistency', () => {
  describe('when given the published transparency-dev/merkle probes', () => {
    // Vouch refuses hashes that are not 32 bytes before looking at sizes, so the two
    // "sizes are equal" probes whose roots are the 12-byte text "don't care 1|2" are
    // MALFORMED_PROOF here where Go accepts them (see fixtures/merkle/README.md).
    const notSha256 = (probe: { root1: string; root2: string }) =>
      b64(probe.root1).length !== 32 || b64(probe.root2).length !== 32;

    it.each(probes.consistency)('$source is $desc (wantErr $wantErr)', (probe) => {
      const outcome = outcomeOf(() =>
        verifyConsistency(
          probe.size1,
          probe.size2,
          (probe.proof ?? []).map(b64),
          b64(probe.root1),
          b64(probe.root2),
        ),
      );
      if (probe.wantErr) expect(outcome).not.toBe('proven');
      else if (notSha256(probe)) expect(outcome).toBe('MALFORMED_PROOF');
      else expect(outcome).toBe('proven');
    });
  });

  describe('when given the RFC 6962 reference proofs', () => {
    it.each(reference.consistencyProofs)('proves $size1 -> $size2', (vector) => {
      const proof = vector.proof.map((hex) => hexToBytes(hex));
      expect(
        verifyConsistency(vector.size1, vector.size2, proof, roots[vector.size1]!, roots[vector.size2]!),
      ).toBe(true);
    });

    it.each(reference.consistencyProofs.filter((v) => v.proof.length > 0))(
      'refuses every corruption of $size1 -> $size2',
      (vector) => {
        const good = {
          size1: vector.size1,
          size2: vector.size2,
          proof: vector.proof.map((hex) => hexToBytes(hex)),
          root1: roots[vector.size1]!,
          root2: roots[vector.size2]!,
        };
        const accepted = corruptConsistency(good).filter(
          (p) => outcomeOf(() => verifyConsistency(p.size1, p.size2, p.proof, p.root1, p.root2)) === 'proven',
        );
        expect(accepted.map((p) => p.desc)).toEqual([]);
      },
    );
  });

  describe('when the sizes are equal', () => {
    it('returns true for equal roots and an empty proof', () => {
      expect(verifyConsistency(3, 3, [], roots[3]!, roots[3]!)).toBe(true);
    });

    it('returns false for different roots', () => {
      expect(verifyConsistency(3, 3, [], roots[3]!, roots[4]!)).toBe(false);
    });

    it('returns true for two empty trees', () => {
      expect(verifyConsistency(0, 0, [], EMPTY_TREE_ROOT, EMPTY_TREE_ROOT)).toBe(true);
    });
  });

  describe('when the proof has the right shape but other hashes', () => {
    it('returns false when the old root is wrong', () => {
      const proof = reference.consistencyProofs[2]!.proof.map((hex) => hexToBytes(hex));
      expect(verifyConsistency(6, 8, proof, roots[5]!, roots[8]!)).toBe(false);
    });

    it('returns false when the new root is wrong', () => {
      const proof = reference.consistencyProofs[2]!.proof.map((hex) => hexToBytes(hex));
      expect(verifyConsistency(6, 8, proof, roots[6]!, roots[7]!)).toBe(false);
    });
  });

  describe('when the input cannot be a proof for these sizes', () => {
    const proof68 = reference.consistencyProofs[2]!.proof.map((hex) => hexToBytes(hex));
    it.each([
      ['a shrinking tree', () => verifyConsistency(8, 6, proof68, roots[8]!, roots[6]!)],
      ['a proof from the empty tree', () => verifyConsistency(0, 8, [], EMPTY_TREE_ROOT, roots[8]!)],
      ['equal sizes with a proof', () => verifyConsistency(8, 8, [someHash], roots[8]!, roots[8]!)],
      ['an empty proof between different sizes', () => verifyConsistency(6, 8, [], roots[6]!, roots[8]!)],
      ['a negative size', () => verifyConsistency(-1, 8, proof68, roots[6]!, roots[8]!)],
      ['a fractional size', () => verifyConsistency(6, 8.5, proof68, roots[6]!, roots[8]!)],
      ['a short root', () => verifyConsistency(6, 8, proof68, roots[6]!.subarray(1), roots[8]!)],
      ['a short proof node', () => verifyConsistency(6, 8, [proof68[0]!.subarray(2)], roots[6]!, roots[8]!)],
      ['a proof one node short', () => verifyConsistency(6, 8, proof68.slice(1), roots[6]!, roots[8]!)],
      ['a proof one node long', () => verifyConsistency(6, 8, [...proof68, someHash], roots[6]!, roots[8]!)],
    ])('throws MALFORMED_PROOF for %s', (_, verify) => {
      expect(outcomeOf(verify)).toBe('MALFORMED_PROOF');
    });
  });
});
