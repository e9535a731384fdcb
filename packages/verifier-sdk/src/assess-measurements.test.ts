import { describe, expect, it } from 'vitest';
import { assessMeasurements } from './assess-measurements';
import type { CheckVerdict } from './check';

const argoDefaults = { failureLimit: 0, inconclusiveLimit: 0, consecutiveSuccessLimit: 0 };
const untilSeen = { failureLimit: -1, inconclusiveLimit: 0, consecutiveSuccessLimit: 1 };
const both = { failureLimit: 2, inconclusiveLimit: 0, consecutiveSuccessLimit: 2 };
const assess = (
  readings: CheckVerdict[],
  policy: Parameters<typeof assessMeasurements>[1],
  exhausted = false,
) => assessMeasurements(readings, policy, { exhausted });

describe('assessMeasurements', () => {
  describe('when failures exceed failureLimit', () => {
    it('is fail, decided by FAILURE_LIMIT, before the readings run out', () => {
      expect(assess(['fail'], argoDefaults)).toEqual({ status: 'fail', decidedBy: 'FAILURE_LIMIT' });
      expect(assess(['fail', 'pass', 'fail'], both)).toBeNull();
      expect(assess(['fail', 'pass', 'fail', 'fail'], both)).toEqual({
        status: 'fail',
        decidedBy: 'FAILURE_LIMIT',
      });
    });
  });

  describe('when inconclusive readings exceed inconclusiveLimit', () => {
    it('is inconclusive, decided by INCONCLUSIVE_LIMIT', () => {
      expect(assess(['inconclusive'], untilSeen)).toEqual({
        status: 'inconclusive',
        decidedBy: 'INCONCLUSIVE_LIMIT',
      });
      expect(assess(['inconclusive'], { ...untilSeen, inconclusiveLimit: 1 })).toBeNull();
    });
  });

  describe('when consecutiveSuccessLimit readings in a row passed', () => {
    it('is pass, decided by CONSECUTIVE_SUCCESS_LIMIT', () => {
      expect(assess(['fail', 'fail', 'pass'], untilSeen)).toEqual({
        status: 'pass',
        decidedBy: 'CONSECUTIVE_SUCCESS_LIMIT',
      });
      expect(assess(['pass', 'fail', 'pass'], both)).toBeNull();
      expect(assess(['pass', 'fail', 'pass', 'pass'], both)).toEqual({
        status: 'pass',
        decidedBy: 'CONSECUTIVE_SUCCESS_LIMIT',
      });
    });
  });

  describe('when the readings run out with no limit reached', () => {
    it('with both limits set, is inconclusive (neither was reached)', () => {
      expect(assess(['pass', 'fail', 'pass'], both, true)).toEqual({
        status: 'inconclusive',
        decidedBy: 'COUNT_REACHED',
      });
    });

    it('with only a consecutiveSuccessLimit, fails when some reading failed', () => {
      expect(assess(['fail', 'fail', 'fail'], untilSeen, true)).toEqual({
        status: 'fail',
        decidedBy: 'COUNT_REACHED',
      });
    });

    it('with only a consecutiveSuccessLimit, is inconclusive when no reading failed', () => {
      expect(assess(['inconclusive'], { ...untilSeen, inconclusiveLimit: 5 }, true)).toEqual({
        status: 'inconclusive',
        decidedBy: 'COUNT_REACHED',
      });
    });

    it('with only a failureLimit, takes the latest reading', () => {
      const lenient = { ...argoDefaults, failureLimit: 2 };
      expect(assess(['fail', 'pass'], lenient, true)).toEqual({ status: 'pass', decidedBy: 'COUNT_REACHED' });
      expect(assess(['pass', 'fail'], lenient, true)).toEqual({ status: 'fail', decidedBy: 'COUNT_REACHED' });
      expect(assess([], lenient, true)).toEqual({ status: 'inconclusive', decidedBy: 'COUNT_REACHED' });
    });
  });
});
