import { AuditError } from '@vouch/audit';
import { LEDGER_ERROR_CODES, LedgerError } from '@vouch/ledger';
import { VERIFIER_ERROR_CODES } from '@vouch/verifier-sdk';
import { HTTPException } from 'hono/http-exception';
import { describe, expect, it } from 'vitest';
import { describeError } from './error-response';
import { STATUS_BY_CODE, statusOf } from './error-status';
import { API_ERROR_CODES, ApiError } from './errors';

describe('STATUS_BY_CODE', () => {
  describe('when a package defines an error code', () => {
    it.each([...API_ERROR_CODES, ...LEDGER_ERROR_CODES, ...VERIFIER_ERROR_CODES])(
      'maps %s to a 4xx or 5xx status',
      (code) => {
        const status = statusOf(code);
        expect(status).toBeGreaterThanOrEqual(400);
        expect(Object.hasOwn(STATUS_BY_CODE, code)).toBe(true);
      },
    );
  });

  describe('when the code is unknown', () => {
    it('answers 500', () => {
      expect(statusOf('SOMETHING_NEW')).toBe(500);
      expect(statusOf('toString')).toBe(500);
    });
  });
});

describe('describeError', () => {
  describe('when the error comes from a Vouch package', () => {
    it('keeps the code, message and details of a LedgerError', () => {
      const described = describeError(
        new LedgerError('IDEMPOTENCY_CONFLICT', 'key reused', { details: { key: 'k1' } }),
      );
      expect(described).toMatchObject({ status: 409, code: 'IDEMPOTENCY_CONFLICT', details: { key: 'k1' } });
    });

    it('turns the path of an AuditError into details', () => {
      const described = describeError(new AuditError('NON_FINITE_NUMBER', 'bad', { path: '/a' }));
      expect(described).toMatchObject({ status: 400, code: 'NON_FINITE_NUMBER', details: { path: '/a' } });
    });

    it('recognizes an error by name and code, not by class', () => {
      const foreign = Object.assign(new Error('x'), { name: 'ApiError', code: 'ROLE_FORBIDDEN' });
      expect(describeError(foreign).status).toBe(403);
      expect(describeError(new ApiError('BODY_TOO_LARGE', 'big')).status).toBe(413);
    });
  });

  describe('when the error is anything else', () => {
    it('answers 500 INTERNAL without the original message', () => {
      const described = describeError(new Error('password=hunter2 at table api_keys'));
      expect(described.code).toBe('INTERNAL');
      expect(described.status).toBe(500);
      expect(described.message).not.toContain('hunter2');
    });

    it('does not trust a code on an error of an unknown name', () => {
      const spoofed = Object.assign(new Error('x'), { code: 'NOT_FOUND' });
      expect(describeError(spoofed).code).toBe('INTERNAL');
    });

    it('maps a hono HTTPException by status', () => {
      expect(describeError(new HTTPException(415)).code).toBe('UNSUPPORTED_MEDIA_TYPE');
      expect(describeError(new HTTPException(418)).code).toBe('INTERNAL');
    });
  });
});
