import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { encodeBase64 } from './base64';
import { type Checkpoint, formatCheckpoint, openCheckpoint, signCheckpoint } from './checkpoint';
import { isAuditError } from './errors';
import vectors from './fixtures/merkle/signed-note-vectors.json';
import { signNote } from './note';
import { generateNoteKeys, parseSignerKey, parseVerifierKey } from './note-keys';
import { sha256 } from './sha256';

const ORIGIN = 'vouch.example/log/default';
const current = generateNoteKeys(ORIGIN);
const next = generateNoteKeys(ORIGIN);
const witness = generateNoteKeys('witness.example');
const signer = parseSignerKey(current.signerKey);
const rootHash = sha256('root');

function codeOf(work: () => unknown): string {
  try {
    work();
  } catch (error) {
    if (isAuditError(error)) return error.code;
    throw error;
  }
  return 'no error';
}

const failureOf = (opened: ReturnType<typeof openCheckpoint>) => (opened.ok ? 'ok' : opened.code);

describe('formatCheckpoint', () => {
  describe('when given a checkpoint', () => {
    it('writes origin, decimal size and base64 root, one per line', () => {
      expect(formatCheckpoint({ origin: ORIGIN, treeSize: 20852163, rootHash, extensions: ['ext'] })).toBe(
        `${ORIGIN}\n20852163\n${encodeBase64(rootHash)}\next\n`,
      );
    });
  });

  describe('when a value cannot be written', () => {
    it.each([
      ['an empty origin', { origin: '', treeSize: 1, rootHash }],
      ['an origin with a newline', { origin: 'a\nb', treeSize: 1, rootHash }],
      ['a negative size', { origin: ORIGIN, treeSize: -1, rootHash }],
      ['an unsafe size', { origin: ORIGIN, treeSize: 2 ** 53, rootHash }],
      ['a short root', { origin: ORIGIN, treeSize: 1, rootHash: rootHash.subarray(1) }],
      ['an empty extension line', { origin: ORIGIN, treeSize: 1, rootHash, extensions: [''] }],
    ] satisfies [string, Checkpoint][])('throws MALFORMED_CHECKPOINT for %s', (_, checkpoint) => {
      expect(codeOf(() => formatCheckpoint(checkpoint))).toBe('MALFORMED_CHECKPOINT');
    });
  });
});

describe('openCheckpoint', () => {
  describe('when signed by a trusted key', () => {
    it('returns the checkpoint that was signed', () => {
      const note = signCheckpoint({ origin: ORIGIN, treeSize: 42, rootHash }, [signer]);
      const opened = openCheckpoint(note, { verifiers: [current.verifierKey], origin: ORIGIN });
      expect(opened.ok && opened.checkpoint).toEqual({
        origin: ORIGIN,
        treeSize: 42,
        rootHash,
        extensions: [],
      });
      expect(opened.ok && opened.verifiedBy.map((s) => s.keyName)).toEqual([ORIGIN]);
    });

    it('keeps extension lines', () => {
      const note = signCheckpoint({ origin: ORIGIN, treeSize: 0, rootHash, extensions: ['a', 'b c'] }, [
        signer,
      ]);
      const opened = openCheckpoint(note, { verifiers: [current.verifierKey] });
      expect(opened.ok && opened.checkpoint.extensions).toEqual(['a', 'b c']);
    });
  });

  describe('when keys rotate', () => {
    const note = signCheckpoint({ origin: ORIGIN, treeSize: 7, rootHash }, [
      signer,
      parseSignerKey(next.signerKey),
    ]);

    it.each([
      ['the old key', [current.verifierKey]],
      ['the new key', [next.verifierKey]],
      ['both keys', [current.verifierKey, next.verifierKey]],
    ])('opens for an auditor who trusts %s', (_, verifiers) => {
      expect(openCheckpoint(note, { verifiers }).ok).toBe(true);
    });

    it('returns NO_TRUSTED_SIGNATURE for an auditor who trusts neither', () => {
      expect(failureOf(openCheckpoint(note, { verifiers: [witness.verifierKey] }))).toBe(
        'NO_TRUSTED_SIGNATURE',
      );
    });
  });

  describe('when a witness the auditor does not know cosigned', () => {
    it('ignores the unknown signature', () => {
      const note = signCheckpoint({ origin: ORIGIN, treeSize: 7, rootHash }, [
        signer,
        parseSignerKey(witness.signerKey),
      ]);
      const opened = openCheckpoint(note, { verifiers: [parseVerifierKey(current.verifierKey)] });
      expect(opened.ok && opened.unverified.map((s) => s.keyName)).toEqual(['witness.example']);
    });
  });

  describe('when the signed body was edited', () => {
    it('returns SIGNATURE_INVALID', () => {
      const note = signCheckpoint({ origin: ORIGIN, treeSize: 42, rootHash }, [signer]);
      const edited = note.replace('\n42\n', '\n41\n');
      expect(failureOf(openCheckpoint(edited, { verifiers: [current.verifierKey] }))).toBe(
        'SIGNATURE_INVALID',
      );
    });
  });

  describe('when the checkpoint is for another log', () => {
    it('returns ORIGIN_MISMATCH', () => {
      const note = signCheckpoint({ origin: 'vouch.example/log/other', treeSize: 1, rootHash }, [signer]);
      const opened = openCheckpoint(note, { verifiers: [current.verifierKey], origin: ORIGIN });
      expect(failureOf(opened)).toBe('ORIGIN_MISMATCH');
    });
  });

  describe('when a trusted key signed a body that is not a checkpoint', () => {
    const root = encodeBase64(rootHash);
    it.each([
      ['two lines', `${ORIGIN}\n1\n`],
      ['an empty origin', `\n1\n${root}\n`],
      ['an empty extension line', `${ORIGIN}\n1\n${root}\n\nx\n`],
      ['a size with a leading zero', `${ORIGIN}\n01\n${root}\n`],
      ['a negative size', `${ORIGIN}\n-1\n${root}\n`],
      ['a size with a plus sign', `${ORIGIN}\n+1\n${root}\n`],
      ['a size past 2^53', `${ORIGIN}\n9007199254740993\n${root}\n`],
      ['a hex root', `${ORIGIN}\n1\n${'00'.repeat(32)}\n`],
      ['a 31-byte root', `${ORIGIN}\n1\n${encodeBase64(rootHash.subarray(1))}\n`],
      ['unpadded base64', `${ORIGIN}\n1\n${root.slice(0, -1)}\n`],
    ])('returns MALFORMED_CHECKPOINT for %s', (_, body) => {
      const note = signNote(body, [signer]);
      expect(failureOf(openCheckpoint(note, { verifiers: [current.verifierKey] }))).toBe(
        'MALFORMED_CHECKPOINT',
      );
    });
  });

  describe('when given the c2sp.org/tlog-checkpoint example', () => {
    it('parses it and, without its key, returns NO_TRUSTED_SIGNATURE', () => {
      const opened = openCheckpoint(vectors.c2spCheckpointExample.note, { verifiers: [current.verifierKey] });
      expect(failureOf(opened)).toBe('NO_TRUSTED_SIGNATURE');
    });
  });

  describe('when a trusted verifier key text is malformed', () => {
    it('throws MALFORMED_CHECKPOINT: that is the caller configuration, not the note', () => {
      const note = signCheckpoint({ origin: ORIGIN, treeSize: 1, rootHash }, [signer]);
      expect(codeOf(() => openCheckpoint(note, { verifiers: ['not a key'] }))).toBe('MALFORMED_CHECKPOINT');
    });
  });

  describe('when checkpoints of any size and root are signed (property)', () => {
    it('opens to exactly what was signed', () => {
      fc.assert(
        fc.property(
          fc.nat({ max: Number.MAX_SAFE_INTEGER }),
          fc.uint8Array({ minLength: 32, maxLength: 32 }),
          (treeSize, root) => {
            const note = signCheckpoint({ origin: ORIGIN, treeSize, rootHash: root }, [signer]);
            const opened = openCheckpoint(note, { verifiers: [current.verifierKey], origin: ORIGIN });
            expect(
              opened.ok && { treeSize: opened.checkpoint.treeSize, root: opened.checkpoint.rootHash },
            ).toEqual({
              treeSize,
              root,
            });
          },
        ),
        { numRuns: 50 },
      );
    });
  });
});
