import { hkdfSync } from 'node:crypto';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { isAuditError } from './errors';
import vectors from './fixtures/merkle/signed-note-vectors.json';
import { openNote, signNote } from './note';
import {
  deriveSignerKey,
  formatVerifierKey,
  generateNoteKeys,
  isValidKeyName,
  noteKeyId,
  parseSignerKey,
  parseVerifierKey,
} from './note-keys';

const go = vectors.goSumdbNote;
const { text, peterSignatureLine: peterSig, enochSignatureLine: enochSig } = go;
const peter = parseVerifierKey(go.peterVerifierKey);
const enoch = parseVerifierKey(go.enochVerifierKey);

function codeOf(work: () => unknown): string {
  try {
    work();
  } catch (error) {
    if (isAuditError(error)) return error.code;
    throw error;
  }
  return 'no error';
}

/** Every proper substring and every one-character increment of `key` (Go's TestNewVerifier manglings). */
function manglings(key: string): string[] {
  const out: string[] = [];
  for (let i = 0; i <= key.length; i++) {
    for (let j = i + 1; j <= key.length; j++) if (i !== 0 || j !== key.length) out.push(key.slice(i, j));
  }
  for (let i = 0; i < key.length; i++) {
    out.push(key.slice(0, i) + String.fromCharCode(key.charCodeAt(i) + 1) + key.slice(i + 1));
  }
  return out;
}

const summary = (s: { keyName: string; keyId: number }) => `${s.keyName}+${s.keyId.toString(16)}`;

describe('parseVerifierKey', () => {
  describe('when given the Go sumdb/note verifier key', () => {
    it('reads its name and key ID', () => {
      expect({ name: peter.name, keyId: peter.keyId }).toEqual({ name: 'PeterNeumann', keyId: 0xc74f20a3 });
    });
  });

  describe('when the key text is mangled in any one way', () => {
    it('throws MALFORMED_CHECKPOINT for every substring and every changed character', () => {
      const accepted = manglings(go.peterVerifierKey).filter(
        (key) => codeOf(() => parseVerifierKey(key)) !== 'MALFORMED_CHECKPOINT',
      );
      expect(accepted).toEqual([]);
    });

    it.each(go.badVerifierKeys)(
      'throws MALFORMED_CHECKPOINT for %s (wrong length or algorithm, matching ID)',
      (key) => {
        expect(codeOf(() => parseVerifierKey(key))).toBe('MALFORMED_CHECKPOINT');
      },
    );
  });

  describe('when the key is not a point on the curve', () => {
    it('throws MALFORMED_CHECKPOINT', () => {
      // 0x02 followed by 31 0xff bytes decodes to no Ed25519 point (y >= p).
      const notAPoint = Uint8Array.of(0x02, ...new Uint8Array(30).fill(0xff), 0x7f);
      expect(codeOf(() => parseVerifierKey(formatVerifierKey('x', notAPoint)))).toBe('MALFORMED_CHECKPOINT');
    });
  });
});

describe('parseSignerKey', () => {
  describe('when given the Go sumdb/note signer key', () => {
    it('derives the public key of the matching verifier key', () => {
      const signer = parseSignerKey(go.peterSignerKey);
      expect(formatVerifierKey(signer.name, signer.publicKey)).toBe(go.peterVerifierKey);
      expect(signer.keyId).toBe(0xc74f20a3);
    });
  });

  describe('when the key text is mangled in any one way', () => {
    it('throws MALFORMED_CHECKPOINT for every substring and every changed character', () => {
      const accepted = manglings(go.peterSignerKey).filter(
        (key) => codeOf(() => parseSignerKey(key)) !== 'MALFORMED_CHECKPOINT',
      );
      expect(accepted).toEqual([]);
    });
  });
});

describe('generateNoteKeys', () => {
  describe('when a key pair is generated', () => {
    const { signerKey, verifierKey } = generateNoteKeys('vouch.example/log/a');
    const signer = parseSignerKey(signerKey);
    const verifier = parseVerifierKey(verifierKey);
    const message = new TextEncoder().encode('hi\n');

    it('gives a signer and verifier for the same key', () => {
      expect({ name: verifier.name, keyId: verifier.keyId }).toEqual({
        name: signer.name,
        keyId: signer.keyId,
      });
      expect(verifier.verify(message, signer.sign(message))).toBe(true);
    });

    it('gives a verifier that refuses a corrupted signature or message', () => {
      const signature = signer.sign(message);
      signature[0]! ^= 1;
      expect(verifier.verify(message, signature)).toBe(false);
      expect(verifier.verify(new TextEncoder().encode('ho\n'), signer.sign(message))).toBe(false);
      expect(verifier.verify(message, signer.sign(message).subarray(1))).toBe(false);
    });

    it('gives a fresh key each time', () => {
      expect(generateNoteKeys('vouch.example/log/a').verifierKey).not.toBe(verifierKey);
    });
  });

  describe('when the name cannot name a key', () => {
    it.each(['', 'has space', 'a+b', 'tab\there', 'nbsp\u00a0', 'nel\u0085', 'lone\ud800'])(
      'throws MALFORMED_CHECKPOINT for %j',
      (name) => {
        expect(isValidKeyName(name)).toBe(false);
        expect(codeOf(() => generateNoteKeys(name))).toBe('MALFORMED_CHECKPOINT');
      },
    );
  });
});

describe('formatVerifierKey', () => {
  describe('when the public key is not 32 bytes', () => {
    it('throws MALFORMED_CHECKPOINT', () => {
      expect(codeOf(() => formatVerifierKey('x', new Uint8Array(31)))).toBe('MALFORMED_CHECKPOINT');
    });
  });
});

describe('noteKeyId', () => {
  describe('when given the Go sumdb/note key', () => {
    it('is the first 4 bytes of SHA-256(name || 0x0A || 0x01 || key)', () => {
      expect(noteKeyId('PeterNeumann', peter.publicKey)).toBe(0xc74f20a3);
    });
  });
});

describe('signNote', () => {
  describe('when signing the Go sumdb/note text with its key', () => {
    it('writes the published note byte for byte', () => {
      expect(signNote(text, [parseSignerKey(go.peterSignerKey)])).toBe(`${text}\n${peterSig}`);
    });
  });

  describe('when the text cannot be a note text', () => {
    const signer = parseSignerKey(go.peterSignerKey);
    it.each([
      ['no final newline', 'abc'],
      ['a control character', 'a\u0001b\n'],
      ['a lone surrogate', 'a\udc00\n'],
    ])('throws MALFORMED_CHECKPOINT for %s', (_, body) => {
      expect(codeOf(() => signNote(body, [signer]))).toBe('MALFORMED_CHECKPOINT');
    });

    it('throws MALFORMED_CHECKPOINT without signers', () => {
      expect(codeOf(() => signNote(text, []))).toBe('MALFORMED_CHECKPOINT');
    });
  });
});

describe('openNote', () => {
  describe('when one of two signatures is by a trusted key', () => {
    it('opens with that one verified and the other unverified', () => {
      const opened = openNote(`${text}\n${peterSig}${enochSig}`, [peter]);
      expect(opened.ok && opened.text).toBe(text);
      expect(opened.ok && opened.verifiedBy.map(summary)).toEqual(['PeterNeumann+c74f20a3']);
      expect(opened.ok && opened.unverified.map(summary)).toEqual(['EnochRoot+af0cfe78']);
    });
  });

  describe('when both signatures are by trusted keys (a key rotation)', () => {
    it('opens with both verified', () => {
      const opened = openNote(`${text}\n${peterSig}${enochSig}`, [peter, enoch]);
      expect(opened.ok && opened.verifiedBy.map(summary)).toEqual([
        'PeterNeumann+c74f20a3',
        'EnochRoot+af0cfe78',
      ]);
      expect(opened.ok && opened.unverified).toEqual([]);
    });
  });

  describe('when trusted keys are given as verifier key texts', () => {
    it('opens', () => {
      expect(openNote(`${text}\n${peterSig}`, [go.peterVerifierKey]).ok).toBe(true);
    });
  });

  describe('when no signature is by a trusted key', () => {
    it('returns NO_TRUSTED_SIGNATURE', () => {
      const opened = openNote(`${text}\n${peterSig}${enochSig}`, []);
      expect(!opened.ok && opened.code).toBe('NO_TRUSTED_SIGNATURE');
    });
  });

  describe('when a key shares only the name or only the key ID of a trusted key', () => {
    it('ignores its signature as unknown', () => {
      const otherId = enochSig.replace('rwz+eBzm', 'AAAAABzm');
      const otherName = peterSig.replace('PeterNeumann', 'PeterNeuman');
      const opened = openNote(`${text}\n${peterSig}${otherName}${otherId}`, [peter, enoch]);
      expect(opened.ok && opened.verifiedBy.map(summary)).toEqual(['PeterNeumann+c74f20a3']);
      expect(opened.ok && opened.unverified.map((s) => s.keyName)).toEqual(['PeterNeuman', 'EnochRoot']);
      expect(opened.ok && opened.unverified[1]!.keyId).not.toBe(enoch.keyId);
    });
  });

  describe('when the same key is trusted twice', () => {
    it('opens', () => {
      expect(openNote(`${text}\n${peterSig}`, [enoch, peter, enoch, peter]).ok).toBe(true);
    });
  });

  describe('when a signature by a trusted key does not verify', () => {
    it('returns SIGNATURE_INVALID naming the key', () => {
      // Go's TestOpen inserts "ABCD" at byte 60; the em dash is 3 bytes there but 1 code unit here.
      const forged = `${peterSig.slice(0, 58)}ABCD${peterSig.slice(58)}`;
      const opened = openNote(`${text}\n${forged}`, [peter]);
      expect(opened.ok ? 'ok' : { code: opened.code, keyName: opened.keyName, keyId: opened.keyId }).toEqual({
        code: 'SIGNATURE_INVALID',
        keyName: 'PeterNeumann',
        keyId: 0xc74f20a3,
      });
    });

    it('returns SIGNATURE_INVALID even after a genuine signature by the same key', () => {
      const forged = `${peterSig.slice(0, 58)}ABCD${peterSig.slice(58)}`;
      const opened = openNote(`${text}\n${peterSig}${forged}`, [peter]);
      expect(!opened.ok && opened.code).toBe('SIGNATURE_INVALID');
    });

    it('returns SIGNATURE_INVALID when the text was edited', () => {
      const opened = openNote(`${text.replace('cryptography', 'cryptogrophy')}\n${peterSig}`, [peter]);
      expect(!opened.ok && opened.code).toBe('SIGNATURE_INVALID');
    });
  });

  describe('when signatures repeat', () => {
    it('lists each verified key once and each distinct unknown signature once', () => {
      const enochABCD = `${enochSig.slice(0, 58)}ABCD${enochSig.slice(58)}`;
      const opened = openNote(`${text}\n${peterSig}${peterSig}${enochSig}${enochSig}${enochABCD}`, [peter]);
      expect(opened.ok && opened.verifiedBy.length).toBe(1);
      expect(opened.ok && opened.unverified.map(summary)).toEqual([
        'EnochRoot+af0cfe78',
        'EnochRoot+af0cfe78',
      ]);
    });
  });

  describe('when the note is not a well-formed signed note', () => {
    it.each([
      ['only text', text],
      ['no signature lines', `${text}\n`],
      ['no final newline', `${text}\n${peterSig.slice(0, -1)}`],
      ['a control character', `\u0001${text}\n${peterSig}`],
      ['a lone surrogate (invalid UTF-8 in Go)', `\udfff${text}\n${peterSig}`],
      ['a key name with a space', `${text}\n${peterSig.replace('PeterNeumann', 'Bad Name')}`],
      ['a line after the signatures', `${text}\n${peterSig}Unexpected line.\n`],
      ['a signature line without an em dash', `${text}\n${peterSig.replace('\u2014', '-')}`],
      ['a signature line without a signature', `${text}\n\u2014 PeterNeumann\n`],
      ['a signature too short to hold a key ID', `${text}\n\u2014 PeterNeumann AAAAAA==\n`],
      ['non-canonical base64', `${text}\n${peterSig.replace('AM=\n', 'AN=\n')}`],
      ['more than 100 signatures', `${text}\n${peterSig.repeat(101)}`],
    ])('returns MALFORMED_CHECKPOINT for %s', (_, note) => {
      const opened = openNote(note, [peter]);
      expect(!opened.ok && opened.code).toBe('MALFORMED_CHECKPOINT');
    });
  });

  describe('when any one character of a signed note changes', () => {
    it('is never accepted', () => {
      const signer = parseSignerKey(go.peterSignerKey);
      const note = signNote(text, [signer]);
      fc.assert(
        fc.property(fc.nat({ max: note.length - 1 }), fc.integer({ min: 1, max: 0xffff }), (at, delta) => {
          const changed = String.fromCharCode((note.charCodeAt(at) + delta) % 0x10000);
          const mutated = note.slice(0, at) + changed + note.slice(at + 1);
          expect(openNote(mutated, [peter]).ok).toBe(false);
        }),
        { numRuns: 200 },
      );
    });
  });
});

describe('deriveSignerKey', () => {
  const master = generateNoteKeys('audit.example/vouch').signerKey;

  describe('when one master key derives keys for two names', () => {
    it('names each key as asked, and gives the same key each time and another per name', () => {
      const orders = deriveSignerKey(master, 'audit.example/vouch/orders');
      expect(parseSignerKey(orders).name).toBe('audit.example/vouch/orders');
      expect(deriveSignerKey(master, 'audit.example/vouch/orders')).toBe(orders);
      const refunds = parseSignerKey(deriveSignerKey(master, 'audit.example/vouch/refunds'));
      expect(refunds.publicKey).not.toEqual(parseSignerKey(orders).publicKey);
      expect(parseSignerKey(orders).publicKey).not.toEqual(parseSignerKey(master).publicKey);
    });

    it('is HKDF-SHA256 of the master seed, as node:crypto computes it', () => {
      // PRIVATE+KEY+<name>+<id>+<base64>: base64 may hold '+', names may not.
      const seedOf = (key: string) => Buffer.from(key.split('+').slice(4).join('+'), 'base64').subarray(1);
      const seed = seedOf(master);
      const expected = hkdfSync('sha256', seed, 'vouch/log-signing-key/v1', 'audit.example/vouch/orders', 32);
      const derived = deriveSignerKey(master, 'audit.example/vouch/orders');
      expect(seedOf(derived)).toEqual(Buffer.from(expected));
    });
  });

  describe('when the master key or the name is malformed', () => {
    it.each([
      ['not a signer key', 'audit.example/vouch+00000000+AAAA', 'x/y'],
      ['a name with a space', master, 'has space'],
    ])('refuses %s with MALFORMED_CHECKPOINT', (_, key, name) => {
      expect(codeOf(() => deriveSignerKey(key, name))).toBe('MALFORMED_CHECKPOINT');
    });
  });
});
