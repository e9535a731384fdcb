import { describe, expect, it } from 'vitest';
import type { CheckResult } from './check';
import { defineVerifier, VERIFIER_API_VERSION } from './define-verifier';
import { sourceUnavailable } from './errors';
import type { MeasurementPolicy } from './measurement-policy';
import { runVerifiers } from './run-verifiers';
import { exampleObservation, exampleProposal } from './testing/fixtures';
import { createVerifierRegistry } from './verifier-registry';

// A refund source that shows the refund from the `showsAt`-th read on (never when null).
function refundSource(showsAt: number | null) {
  let reads = 0;
  const verifier = defineVerifier({
    id: 'refund-api',
    version: '1.0.0',
    apiVersion: VERIFIER_API_VERSION,
    handles: ['refund.recorded'],
    check: (): CheckResult => {
      reads++;
      const seen = showsAt !== null && reads >= showsAt;
      return {
        name: 'refund.recorded',
        status: seen ? 'pass' : 'fail',
        source: 'refund-api',
        observed: { reads },
      };
    },
  });
  return { verifier, reads: () => reads };
}

function run(
  verifier: ReturnType<typeof refundSource>['verifier'],
  measurement?: MeasurementPolicy,
  signal?: AbortSignal,
) {
  return runVerifiers({
    registry: createVerifierRegistry([{ verifier, ...(measurement ? { measurement } : {}) }]),
    proposal: exampleProposal({ postconditions: [{ name: 'refund.recorded' }] }),
    observation: exampleObservation({ server_id: 'payments-mcp' }),
    ...(signal ? { signal } : {}),
  });
}

const untilSeen: MeasurementPolicy = { interval: 5, count: 4, consecutiveSuccessLimit: 1, failureLimit: -1 };

describe('runVerifiers with a measurement policy', () => {
  describe('when the postcondition shows up before the readings run out', () => {
    it('passes on the reading that saw it and records every reading', async () => {
      const source = refundSource(3);
      const outcome = await run(source.verifier, untilSeen);
      expect(outcome.status).toBe('passed');
      expect(source.reads()).toBe(3);
      const [check] = outcome.checks;
      expect(check).toMatchObject({ status: 'pass', observed: { reads: 3 } });
      expect(check!.measurement).toMatchObject({
        status: 'pass',
        decidedBy: 'CONSECUTIVE_SUCCESS_LIMIT',
        policy: { count: 4, intervalMs: 5, failureLimit: -1, consecutiveSuccessLimit: 1 },
      });
      expect(check!.measurement!.attempts.map((a) => [a.attempt, a.status])).toEqual([
        [1, 'fail'],
        [2, 'fail'],
        [3, 'pass'],
      ]);
      expect(check!.measurement!.attempts[0]!.checks[0]).toMatchObject({
        status: 'fail',
        observed: { reads: 1 },
      });
    });
  });

  describe('when the readings run out first', () => {
    it('fails with every reading kept', async () => {
      const source = refundSource(null);
      const outcome = await run(source.verifier, untilSeen);
      expect(outcome.status).toBe('failed');
      expect(source.reads()).toBe(4);
      expect(outcome.checks[0]!.measurement).toMatchObject({ status: 'fail', decidedBy: 'COUNT_REACHED' });
      expect(outcome.checks[0]!.measurement!.attempts).toHaveLength(4);
    });
  });

  describe('when both limits are set and neither is reached', () => {
    it('records the latest reading as inconclusive, MEASUREMENT_UNDECIDED, keeping its verdict', async () => {
      const outcome = await run(refundSource(null).verifier, {
        count: 2,
        consecutiveSuccessLimit: 1,
        failureLimit: 5,
      });
      expect(outcome.status).toBe('inconclusive');
      expect(outcome.checks[0]).toMatchObject({
        status: 'inconclusive',
        reason: 'MEASUREMENT_UNDECIDED',
        reported: 'fail',
      });
    });
  });

  describe('when the source is down on every reading', () => {
    it('is inconclusive, never failed', async () => {
      const down = defineVerifier({
        ...refundSource(null).verifier,
        check: () => {
          throw sourceUnavailable('connection refused');
        },
      });
      const outcome = await run(down, { ...untilSeen, inconclusiveLimit: 10 });
      expect(outcome.status).toBe('inconclusive');
      expect(outcome.checks[0]).toMatchObject({ status: 'error', reason: 'SOURCE_UNAVAILABLE' });
      expect(outcome.checks[0]!.measurement).toMatchObject({
        status: 'inconclusive',
        decidedBy: 'COUNT_REACHED',
      });
    });
  });

  describe('when a reading comes from the writer itself', () => {
    it('does not count it as a pass', async () => {
      const self = defineVerifier({
        ...refundSource(null).verifier,
        check: (): CheckResult => ({ name: 'refund.recorded', status: 'pass', source: 'payments-mcp' }),
      });
      const outcome = await run(self, untilSeen);
      expect(outcome.status).toBe('inconclusive');
      expect(outcome.checks[0]!.measurement!.attempts[0]!.status).toBe('inconclusive');
    });
  });

  describe('when the run is cancelled between readings', () => {
    it('ends with VERIFIER_ABORTED and the readings so far', async () => {
      const controller = new AbortController();
      const source = refundSource(null);
      const cancelling = defineVerifier({
        ...source.verifier,
        check: (ctx) => {
          // Cancelled once this reading is in, while the series waits for the next.
          setTimeout(() => controller.abort(), 1);
          return source.verifier.check(ctx);
        },
      });
      const outcome = await run(
        cancelling,
        { interval: '1h', count: 3, consecutiveSuccessLimit: 1, failureLimit: -1 },
        controller.signal,
      );
      expect(outcome.status).toBe('inconclusive');
      expect(outcome.checks[0]).toMatchObject({
        status: 'error',
        reason: 'VERIFIER_ABORTED',
        reported: 'fail',
      });
      expect(outcome.checks[0]!.measurement!.attempts).toHaveLength(1);
    });
  });

  describe('without a policy', () => {
    it('reads once and records no measurement', async () => {
      const source = refundSource(2);
      const outcome = await run(source.verifier);
      expect(source.reads()).toBe(1);
      expect(outcome.checks[0]).not.toHaveProperty('measurement');
    });
  });

  describe('when a registration names an invalid policy', () => {
    it('is refused at registration with the field', () => {
      expect(() =>
        createVerifierRegistry([{ verifier: refundSource(1).verifier, measurement: { count: 0 } }]),
      ).toThrow(expect.objectContaining({ code: 'VERIFIER_INVALID', field: '/measurement/count' }));
    });
  });
});
