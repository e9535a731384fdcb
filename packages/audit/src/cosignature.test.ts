import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { signCheckpoint } from './checkpoint';
import {
  acceptedCosignatures,
  decodeCosignatureLine,
  generateCosignerKeys,
  parseCosignerKey,
  parseCosignerSignerKey,
  verifyCosignatures,
} from './cosignature';
import { isAuditError } from './errors';
import { openNote } from './note';
import { generateNoteKeys, parseSignerKey } from './note-keys';

const ORIGIN = 'audit.example/vouch/orders';
const log = generateNoteKeys(ORIGIN);
const logSigner = parseSignerKey(log.signerKey);
const w1 = generateCosignerKeys('witness.example/w1');
const w2 = generateCosignerKeys('witness.example/w2');
const w3 = generateCosignerKeys('witness.example/w3');
const root = (byte: number) => new Uint8Array(32).fill(byte);
const checkpoint = (size: number, byte: number) =>
  signCheckpoint({ origin: ORIGIN, treeSize: size, rootHash: root(byte) }, [logSigner]);
const cosign = (note: string, key: string, time = 1_700_000_000) =>
  note + parseCosignerSignerKey(key).cosign(note, time);

function codeOf(work: () => unknown): string {
  try {
    work();
  } catch (error) {
    if (isAuditError(error)) return error.code;
    throw error;
  }
  return 'no error';
}

describe('cosignature/v1', () => {
  describe('when a witness cosigns a checkpoint', () => {
    it('adds one line that verifies under its key and leaves the log signature valid', () => {
      const note = cosign(checkpoint(10, 1), w1.signerKey);
      expect(verifyCosignatures(note, { witnesses: [w1.verifierKey], threshold: 1 })).toMatchObject({
        ok: true,
        cosignedBy: [{ name: 'witness.example/w1', time: 1_700_000_000 }],
      });
      // Tools that know only the log key ignore the cosignature (c2sp.org/signed-note).
      expect(openNote(note, [log.verifierKey])).toMatchObject({
        ok: true,
        unverified: [{ keyName: 'witness.example/w1' }],
      });
    });

    it('computes the key ID as SHA-256(name || 0x0A || 0x04 || public key)[:4]', () => {
      const key = parseCosignerKey(w1.verifierKey);
      const digest = createHash('sha256')
        .update(Buffer.concat([Buffer.from('witness.example/w1\n'), Buffer.from([0x04]), key.publicKey]))
        .digest();
      expect(key.keyId).toBe(digest.readUInt32BE(0));
      expect(w1.verifierKey.split('+')[1]).toBe(digest.subarray(0, 4).toString('hex'));
    });
  });

  describe('when the spec example line is decoded (c2sp.org/tlog-cosignature)', () => {
    it('reads the time of the example message, 1679315147', () => {
      // From C2SP tlog-cosignature.md: the witness line of its example checkpoint, whose
      // signed message example says "time 1679315147".
      const line =
        '\u2014 witness.example.com/w1 jWbPPwAAAABkGFDLEZMHwSRaJNiIDoe9DYn/zXcrtPHeolMI5OWXEhZCB9dlrDJsX3b2oyin1nPZqhf5nNo0xUe+mbIUBkBIfZ+qnA==\n';
      expect(decodeCosignatureLine(line)).toMatchObject({
        keyName: 'witness.example.com/w1',
        time: 1679315147,
      });
    });
  });

  describe('when a threshold is asked for', () => {
    const note = cosign(cosign(checkpoint(10, 1), w1.signerKey), w2.signerKey);
    const all = [w1.verifierKey, w2.verifierKey, w3.verifierKey];

    it('passes with enough distinct witnesses and refuses with too few', () => {
      expect(verifyCosignatures(note, { witnesses: all, threshold: 2 }).ok).toBe(true);
      expect(verifyCosignatures(note, { witnesses: all, threshold: 3 })).toMatchObject({ ok: false });
    });

    it('counts a witness once however often it cosigned', () => {
      const twice = cosign(cosign(checkpoint(10, 1), w1.signerKey, 1), w1.signerKey, 2);
      expect(verifyCosignatures(twice, { witnesses: all, threshold: 2 }).ok).toBe(false);
    });

    it('refuses a threshold of 0 or above the number of keys', () => {
      expect(codeOf(() => verifyCosignatures(note, { witnesses: all, threshold: 0 }))).toBe(
        'MALFORMED_CHECKPOINT',
      );
      expect(codeOf(() => verifyCosignatures(note, { witnesses: all, threshold: 4 }))).toBe(
        'MALFORMED_CHECKPOINT',
      );
    });
  });

  describe('when a cosignature is moved to another checkpoint (a split view)', () => {
    it('does not verify there, and is listed as invalid', () => {
      const honest = checkpoint(10, 1);
      const line = parseCosignerSignerKey(w1.signerKey).cosign(honest, 5);
      const other = checkpoint(10, 2);
      const check = verifyCosignatures(other + line, { witnesses: [w1.verifierKey], threshold: 1 });
      expect(check).toMatchObject({ ok: false, invalid: [{ name: 'witness.example/w1' }] });
    });

    it('does not verify with its time changed', () => {
      const honest = checkpoint(10, 1);
      const line = parseCosignerSignerKey(w1.signerKey).cosign(honest, 5);
      const bytes = Buffer.from(line.slice(line.lastIndexOf(' ') + 1).trim(), 'base64');
      bytes[11]! ^= 1;
      const altered = `${line.slice(0, line.lastIndexOf(' ') + 1)}${bytes.toString('base64')}\n`;
      expect(verifyCosignatures(honest + altered, { witnesses: [w1.verifierKey], threshold: 1 }).ok).toBe(
        false,
      );
    });
  });

  describe('when a log collects cosignatures', () => {
    it('accepts only lines by trusted witnesses that verify over its checkpoint', () => {
      const note = checkpoint(10, 1);
      const good = parseCosignerSignerKey(w1.signerKey).cosign(note, 7);
      const stranger = parseCosignerSignerKey(w3.signerKey).cosign(note, 7);
      const forOther = parseCosignerSignerKey(w2.signerKey).cosign(checkpoint(10, 9), 7);
      const { accepted, refused } = acceptedCosignatures(
        note,
        [good, stranger, forOther, 'garbage'],
        [w1.verifierKey, w2.verifierKey],
      );
      expect(accepted).toEqual([good]);
      expect(refused.map((r) => r.line)).toEqual([stranger, forOther, 'garbage']);
    });
  });

  describe('when a key is not a witness key', () => {
    it('refuses a log key (type 0x01) as a witness key', () => {
      expect(codeOf(() => parseCosignerKey(log.verifierKey))).toBe('MALFORMED_CHECKPOINT');
      expect(codeOf(() => parseCosignerSignerKey(log.signerKey))).toBe('MALFORMED_CHECKPOINT');
    });
  });
});
