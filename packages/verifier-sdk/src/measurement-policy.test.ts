import { describe, expect, it } from 'vitest';
import { resolveMeasurementPolicy } from './measurement-policy';

describe('resolveMeasurementPolicy', () => {
  describe('when given Argo-style durations', () => {
    it('turns them into milliseconds and applies the defaults', () => {
      expect(
        resolveMeasurementPolicy({ initialDelay: '2s', interval: '250ms', count: 8, timeout: '1m' }),
      ).toEqual({
        initialDelayMs: 2_000,
        intervalMs: 250,
        count: 8,
        timeoutMs: 60_000,
        failureLimit: 0,
        inconclusiveLimit: 0,
        consecutiveSuccessLimit: 0,
      });
      expect(resolveMeasurementPolicy({})).toMatchObject({ count: 1, intervalMs: 0, timeoutMs: null });
    });
  });

  describe('when a field is wrong', () => {
    it.each([
      [{ interval: '3 seconds' }, '/measurement/interval'],
      [{ interval: -1 }, '/measurement/interval'],
      [{ count: 0 }, '/measurement/count'],
      [{ count: 1.5 }, '/measurement/count'],
      [{ failureLimit: -2 }, '/measurement/failureLimit'],
      [{ count: 2, consecutiveSuccessLimit: 3 }, '/measurement/consecutiveSuccessLimit'],
      [{ failureLimit: -1 }, '/measurement/failureLimit'],
      [{ retries: 3 }, '/measurement/retries'],
      ['3s', '/measurement'],
    ])('refuses %j with VERIFIER_INVALID at %s', (policy, field) => {
      expect(() => resolveMeasurementPolicy(policy)).toThrow(
        expect.objectContaining({ name: 'VerifierError', code: 'VERIFIER_INVALID', field }),
      );
    });
  });
});
