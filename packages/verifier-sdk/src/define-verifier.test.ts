import { describe, expect, it } from 'vitest';
import { defineVerifier, matchesPostcondition, phasesOf, VERIFIER_API_VERSION } from './define-verifier';

describe('defineVerifier', () => {
  describe('when given a definition', () => {
    it('returns it unchanged', () => {
      const definition = {
        id: 'x',
        version: '1.0.0',
        apiVersion: VERIFIER_API_VERSION,
        handles: ['a'],
        check: () => ({ name: 'a', status: 'pass' as const, source: 's' }),
      };
      expect(defineVerifier(definition)).toBe(definition);
    });
  });
});

describe('matchesPostcondition', () => {
  describe('when the pattern is an exact name', () => {
    it('matches only that name', () => {
      expect(matchesPostcondition(['refund.recorded'], 'refund.recorded')).toBe(true);
      expect(matchesPostcondition(['refund.recorded'], 'refund.recordedX')).toBe(false);
      expect(matchesPostcondition(['refund.recorded'], 'refundXrecorded')).toBe(false);
    });
  });

  describe('when the pattern is a glob', () => {
    it('lets * match any run of characters and nothing else be special', () => {
      expect(matchesPostcondition(['refund.*'], 'refund.recorded')).toBe(true);
      expect(matchesPostcondition(['refund.*'], 'refund.a.b')).toBe(true);
      expect(matchesPostcondition(['refund.*'], 'refundXrecorded')).toBe(false);
      expect(matchesPostcondition(['*.recorded'], 'order.recorded')).toBe(true);
      expect(matchesPostcondition(['(a|b)*'], 'a')).toBe(false);
    });
  });

  describe('when the pattern is a RegExp with the global flag', () => {
    it('matches every time, not every other time', () => {
      const pattern = /^refund\./g;
      expect([1, 2, 3].map(() => matchesPostcondition([pattern], 'refund.x'))).toEqual([true, true, true]);
    });
  });
});

describe('phasesOf', () => {
  describe('when no phase is declared', () => {
    it('is post', () => {
      expect(phasesOf({})).toEqual(['post']);
    });
  });
  describe('when one phase is declared', () => {
    it('is that phase', () => {
      expect(phasesOf({ phase: 'pre' })).toEqual(['pre']);
      expect(phasesOf({ phase: ['pre', 'post'] })).toEqual(['pre', 'post']);
    });
  });
});
