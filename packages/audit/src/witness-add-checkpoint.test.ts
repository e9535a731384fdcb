import { describe, expect, it } from 'vitest';
import { encodeBase64 } from './base64';
import { signCheckpoint } from './checkpoint';
import { generateCosignerKeys, parseCosignerSignerKey, verifyCosignatures } from './cosignature';
import { hashLeaf } from './merkle-hash';
import { MemoryMerkleTree } from './merkle-memory-tree';
import { consistencyProof } from './merkle-proofs';
import { generateNoteKeys, parseSignerKey } from './note-keys';
import { addCheckpoint, memoryWitnessState } from './witness-add-checkpoint';

// c2sp.org/tlog-witness add-checkpoint, each status in the order the spec checks them.

const ORIGIN = 'audit.example/vouch/orders';
const log = generateNoteKeys(ORIGIN);
const signer = parseSignerKey(log.signerKey);
const witness = generateCosignerKeys('witness.example/w1');
const cosigner = parseCosignerSignerKey(witness.signerKey);

function treeOf(label: string, size: number): MemoryMerkleTree {
  const tree = new MemoryMerkleTree();
  for (let i = 0; i < size; i++) tree.append(hashLeaf(new TextEncoder().encode(`${label}-${i}`)));
  return tree;
}
const noteOf = (tree: MemoryMerkleTree, size: number, signers = [signer], origin = ORIGIN) =>
  signCheckpoint({ origin, treeSize: size, rootHash: tree.root(size) }, signers);
const body = (old: number, proof: Uint8Array[], note: string) =>
  `old ${old}\n${proof.map((p) => `${encodeBase64(p)}\n`).join('')}\n${note}`;

function witnessFor() {
  const state = memoryWitnessState();
  const logs = new Map([[ORIGIN, [log.verifierKey]]]);
  const add = (text: string) => addCheckpoint(text, { logs, cosigner, state, now: () => 1_764_547_200 });
  return { state, add };
}

describe('addCheckpoint', () => {
  describe('when a log grows and proves it', () => {
    it('cosigns the first checkpoint from old 0, then the next with a consistency proof', async () => {
      const tree = treeOf('a', 9);
      const { add, state } = witnessFor();
      const first = await add(body(0, [], noteOf(tree, 4)));
      expect(first.status).toBe(200);
      expect(
        verifyCosignatures(noteOf(tree, 4) + first.body, { witnesses: [witness.verifierKey], threshold: 1 })
          .ok,
      ).toBe(true);
      const proof = await consistencyProof(tree, { size1: 4, size2: 9 });
      const second = await add(body(4, proof, noteOf(tree, 9)));
      expect(second.status).toBe(200);
      expect((await state.get(ORIGIN))?.treeSize).toBe(9);
    });
  });

  describe('when the old size is not what the witness last cosigned', () => {
    it('answers 409 with the size it holds, as text/x.tlog.size', async () => {
      const tree = treeOf('a', 9);
      const { add } = witnessFor();
      await add(body(0, [], noteOf(tree, 4)));
      const answer = await add(body(0, [], noteOf(tree, 9)));
      expect(answer).toEqual({ status: 409, contentType: 'text/x.tlog.size', body: '4\n' });
    });
  });

  describe('when a second view of the same size is submitted (a split view)', () => {
    it('answers 409 and cosigns nothing', async () => {
      const { add, state } = witnessFor();
      await add(body(0, [], noteOf(treeOf('a', 4), 4)));
      const answer = await add(body(4, [], noteOf(treeOf('b', 4), 4)));
      expect(answer.status).toBe(409);
      expect((await state.get(ORIGIN))?.note).toContain(noteOf(treeOf('a', 4), 4).split('\n')[2]);
    });
  });

  describe('when the consistency proof does not verify (a forked history)', () => {
    it('answers 422 and keeps its state', async () => {
      const { add, state } = witnessFor();
      await add(body(0, [], noteOf(treeOf('a', 4), 4)));
      const forked = treeOf('b', 9);
      const answer = await add(
        body(4, await consistencyProof(forked, { size1: 4, size2: 9 }), noteOf(forked, 9)),
      );
      expect(answer.status).toBe(422);
      expect((await state.get(ORIGIN))?.treeSize).toBe(4);
    });
  });

  describe('when the request cannot be accepted as sent', () => {
    it.each([
      [
        'an unknown origin',
        async () => body(0, [], noteOf(treeOf('a', 1), 1, [signer], 'other.example/log')),
        404,
      ],
      [
        'a checkpoint not signed by the log key',
        async () =>
          body(0, [], noteOf(treeOf('a', 1), 1, [parseSignerKey(generateNoteKeys(ORIGIN).signerKey)])),
        403,
      ],
      ['an old size past the checkpoint', async () => body(5, [], noteOf(treeOf('a', 2), 2)), 400],
      ['no "old" line', async () => `new 0\n\n${noteOf(treeOf('a', 1), 1)}`, 400],
      ['a proof line that is no hash', async () => `old 0\nnope\n\n${noteOf(treeOf('a', 1), 1)}`, 400],
      ['a proof from size 0', async () => body(0, [new Uint8Array(32)], noteOf(treeOf('a', 1), 1)), 422],
    ])('answers %s with its status', async (_, make, status) => {
      const { add } = witnessFor();
      expect((await add(await make())).status).toBe(status);
    });
  });
});
