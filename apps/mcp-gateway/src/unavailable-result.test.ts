import { describe, expect, it } from 'vitest';
import { type ExecutionMeta, META_KEY, unavailableResult } from './tool-results';

const textOf = (result: ReturnType<typeof unavailableResult>) =>
  result.content.map((block) => (block.type === 'text' ? block.text : '')).join('\n');

describe('unavailableResult', () => {
  describe('when Vouch could not be reached', () => {
    it('says the call is safe to make again later', () => {
      for (const error of [
        { code: 'NETWORK_ERROR' },
        { code: 'TIMEOUT' },
        { code: 'INTERNAL', status: 503 },
      ]) {
        expect(textOf(unavailableResult('close_account', error)), error.code).toMatch(
          /safe to call again later/,
        );
      }
    });
  });

  describe('when Vouch refused the request', () => {
    it('never calls trying again safe, and names the code', () => {
      for (const error of [
        { code: 'IDEMPOTENCY_CONFLICT', status: 409 },
        { code: 'FORBIDDEN', status: 403 },
      ]) {
        const result = unavailableResult('close_account', error);
        expect(textOf(result), error.code).not.toMatch(/safe to call again/);
        expect(result.isError).toBe(true);
        expect(result._meta?.[META_KEY] as ExecutionMeta).toEqual({ status: 'error', code: error.code });
      }
    });

    it('tells an agent whose key was used for another call to send a new one', () => {
      expect(
        textOf(unavailableResult('close_account', { code: 'IDEMPOTENCY_CONFLICT', status: 409 })),
      ).toMatch(/new key/);
    });
  });
});
