import { describe, expect, it } from 'vitest';
import { AuditError, isAuditError } from './errors';

describe('AuditError', () => {
  describe('when constructed', () => {
    it('carries its name, code and path', () => {
      const error = new AuditError('CYCLE', 'a cycle', { path: '/a' });
      expect([error.name, error.code, error.path]).toEqual(['AuditError', 'CYCLE', '/a']);
    });

    it('passes the cause through', () => {
      const cause = new Error('underlying');
      expect(new AuditError('MALFORMED_PROOF', 'bad proof', { cause }).cause).toBe(cause);
    });

    it('has no cause and no path when none is given', () => {
      const error = new AuditError('MALFORMED_BUNDLE', 'bad bundle');
      expect('cause' in error).toBe(false);
      expect(error.path).toBeUndefined();
    });
  });
});

describe('isAuditError', () => {
  describe('when given an error from another copy of the package', () => {
    it('recognizes it by name and code, not by class', () => {
      const foreign = Object.assign(new Error('from elsewhere'), { name: 'AuditError', code: 'CYCLE' });
      expect(isAuditError(foreign)).toBe(true);
    });
  });

  describe('when given anything else', () => {
    it.each([
      ['a plain Error', new Error('x')],
      ['an AuditError-named error without a code', Object.assign(new Error('x'), { name: 'AuditError' })],
      ['a look-alike object that is not an Error', { name: 'AuditError', code: 'CYCLE' }],
      ['null', null],
    ])('returns false for %s', (_, value) => {
      expect(isAuditError(value)).toBe(false);
    });
  });
});
