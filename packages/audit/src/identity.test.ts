import { describe, expect, it } from 'vitest';
import { canonicalIdentity, sameIdentity } from './identity';

// U+0456 CYRILLIC SMALL LETTER BYELORUSSIAN-UKRAINIAN I, drawn like a Latin i.
const CYRILLIC_I = '\u0456';

describe('canonicalIdentity', () => {
  describe('when two spellings differ only in case, normalization form or compatibility form', () => {
    it.each([
      ['agent:BILLING-BOT', 'agent:billing-bot'],
      ['user:Jos\u00e9', 'user:Jose\u0301'], // NFC and NFD
      ['agent:\uff42\uff4f\uff54', 'agent:bot'], // full-width letters
      ['user:stra\u00dfe', 'user:STRASSE'], // ß folds to ss
      ['user:\u1e9e', 'user:ss'], // capital sharp s
      ['user:\u03bf\u03b4\u03bf\u03c2', 'user:\u039f\u0394\u039f\u03a3'], // final sigma
      ['agent:bi\u200bll\u00ading', 'agent:billing'], // zero-width space, soft hyphen
      ['service:\ufb01le', 'service:file'], // ligature
    ])('%j is the same identity as %j', (a, b) => {
      expect(canonicalIdentity(a)).toBe(canonicalIdentity(b));
      expect(sameIdentity(a, b)).toBe(true);
    });
  });

  describe('when identities really differ', () => {
    it.each([
      ['agent:billing-bot', 'agent:billing-bot2'],
      ['user:alice', 'user:alicia'],
      [`agent:b${CYRILLIC_I}lling-bot`, 'agent:billing-bot'],
    ])('%j is not the same identity as %j', (a, b) => {
      expect(sameIdentity(a, b)).toBe(false);
    });
  });
});
