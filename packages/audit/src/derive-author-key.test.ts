import { describe, expect, it } from 'vitest';
import { authorStatement, openAuthorSignature, signAuthorStatement } from './author-signature';
import { deriveAuthorKey } from './derive-author-key';
import { deriveSignerKey, generateNoteKeys, parseSignerKey } from './note-keys';

describe('deriveAuthorKey', () => {
  const { signerKey } = generateNoteKeys('audit.example/vouch');

  describe('when derived twice from the same master and identity', () => {
    it('gives the same key, which signs statements that open with its public key', () => {
      const a = deriveAuthorKey(signerKey, 'vouch:server');
      const b = deriveAuthorKey(signerKey, 'vouch:server');
      expect(b.keyId).toBe(a.keyId);
      const envelope = signAuthorStatement(
        authorStatement('default', 'policy.configure', 'vouch:server', {}),
        a,
      );
      const opened = openAuthorSignature(
        envelope,
        { log: 'default', action: 'policy.configure', actor: 'vouch:server' },
        (keyId) => (keyId === b.keyId ? b.publicKey : undefined),
      );
      expect(opened.ok).toBe(true);
    });
  });

  describe('when the identity, the master or the purpose differs', () => {
    it('gives unrelated keys: another identity, another master, and never a checkpoint key', () => {
      const server = deriveAuthorKey(signerKey, 'vouch:server');
      expect(deriveAuthorKey(signerKey, 'vouch:other').keyId).not.toBe(server.keyId);
      expect(deriveAuthorKey(generateNoteKeys('other.example').signerKey, 'vouch:server').keyId).not.toBe(
        server.keyId,
      );
      const checkpointKey = parseSignerKey(deriveSignerKey(signerKey, 'vouch:server'));
      expect(Buffer.from(checkpointKey.publicKey).equals(Buffer.from(server.publicKey))).toBe(false);
    });
  });

  describe('when the master is not a signer key', () => {
    it('throws', () => {
      expect(() => deriveAuthorKey('vouch-author-key-v1:AAAA', 'vouch:server')).toThrow(TypeError);
    });
  });
});
