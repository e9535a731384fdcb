import type { CheckVerdict } from './check';
import type { ResolvedMeasurementPolicy } from './measurement-policy';

/** What ended a series of readings. */
export type MeasurementDecision =
  /** More readings failed than `failureLimit` allows. */
  | 'FAILURE_LIMIT'
  /** More readings were inconclusive (or errors) than `inconclusiveLimit` allows. */
  | 'INCONCLUSIVE_LIMIT'
  /** `consecutiveSuccessLimit` readings in a row passed. */
  | 'CONSECUTIVE_SUCCESS_LIMIT'
  /** Every reading was taken (or the series timed out) without reaching a limit. */
  | 'COUNT_REACHED';

/** The verdict of a series and what decided it. */
export interface MeasurementAssessment {
  status: CheckVerdict;
  decidedBy: MeasurementDecision;
}

/**
 * Assess a series of readings with Argo Rollouts' analysis semantics: failed once failures
 * exceed `failureLimit`, inconclusive once inconclusive readings exceed `inconclusiveLimit`,
 * passed once `consecutiveSuccessLimit` readings in a row passed. Returns null while the
 * series is undecided and `exhausted` is false (more readings are due).
 *
 * When the readings run out (`exhausted`) with no limit reached:
 * - with a `consecutiveSuccessLimit` and a `failureLimit`: `inconclusive` (neither limit was reached);
 * - with a `consecutiveSuccessLimit` only (`failureLimit: -1`): `fail` when some reading failed
 *   (it never showed up), `inconclusive` when none did (nobody could read it);
 * - with a `failureLimit` only: the latest reading decides. Argo calls this Successful whatever
 *   the latest reading was; a postcondition is about the world as it is now, so Vouch does not.
 *
 * @example
 * assessMeasurements(['fail', 'fail', 'pass'], { ...policy, consecutiveSuccessLimit: 1, failureLimit: -1 }, { exhausted: false });
 * // { status: 'pass', decidedBy: 'CONSECUTIVE_SUCCESS_LIMIT' }
 */
export function assessMeasurements(
  readings: readonly CheckVerdict[],
  policy: Pick<ResolvedMeasurementPolicy, 'failureLimit' | 'inconclusiveLimit' | 'consecutiveSuccessLimit'>,
  options: { exhausted: boolean },
): MeasurementAssessment | null {
  const failures = readings.filter((r) => r === 'fail').length;
  const inconclusive = readings.filter((r) => r === 'inconclusive').length;
  let trailingPasses = 0;
  for (let i = readings.length - 1; i >= 0 && readings[i] === 'pass'; i--) trailingPasses++;

  if (policy.failureLimit >= 0 && failures > policy.failureLimit) {
    return { status: 'fail', decidedBy: 'FAILURE_LIMIT' };
  }
  if (inconclusive > policy.inconclusiveLimit)
    return { status: 'inconclusive', decidedBy: 'INCONCLUSIVE_LIMIT' };
  if (policy.consecutiveSuccessLimit > 0 && trailingPasses >= policy.consecutiveSuccessLimit) {
    return { status: 'pass', decidedBy: 'CONSECUTIVE_SUCCESS_LIMIT' };
  }
  if (!options.exhausted) return null;
  if (policy.consecutiveSuccessLimit > 0) {
    const status = policy.failureLimit < 0 && failures > 0 ? 'fail' : 'inconclusive';
    return { status, decidedBy: 'COUNT_REACHED' };
  }
  return { status: readings.at(-1) ?? 'inconclusive', decidedBy: 'COUNT_REACHED' };
}
