import { assessMeasurements, type MeasurementAssessment } from './assess-measurements';
import type { Check, CheckMeasurement, CheckVerdict, MeasurementAttempt } from './check';
import type { ResolvedMeasurementPolicy } from './measurement-policy';

/** What {@link measureChecks} needs: the policy, one reading, and how a reading is counted. */
export interface MeasureChecksOptions {
  policy: ResolvedMeasurementPolicy;
  /** Take one reading: run the verifier once under its own deadline. */
  read: () => Promise<Check[]>;
  /** Count independence, so a reading from the writer itself is not a pass. */
  assess: (check: Check) => Check;
  /** Ends the waits between readings (the run was cancelled). */
  signal?: AbortSignal;
  now: () => Date;
  /** Named on a check recorded when no reading was made. */
  postcondition: string;
  verifier: Check['verifier'];
}

/**
 * Read a postcondition as the policy says: wait `initialDelay`, then up to `count` readings
 * `interval` apart until a limit decides or the readings (or the `timeout`) run out. The
 * recorded checks are those of the reading that decided, each carrying `measurement`: the
 * policy, the verdict of the series, what decided it, and every reading.
 *
 * Cancelling ends the series where it stands: the readings so far are kept, and the check is
 * an `error` with reason `VERIFIER_ABORTED`, never a verdict the series did not reach.
 */
export async function measureChecks(options: MeasureChecksOptions): Promise<Check[]> {
  const { policy, signal } = options;
  const started = performance.now();
  const deadline = policy.timeoutMs === null ? Number.POSITIVE_INFINITY : started + policy.timeoutMs;
  const attempts: MeasurementAttempt[] = [];
  const readings: Check[][] = [];
  let decision: MeasurementAssessment | null = null;
  let aborted = !(await pause(policy.initialDelayMs, signal));
  for (let n = 1; n <= policy.count && !aborted && decision === null; n++) {
    if (n > 1 && !(await pause(policy.intervalMs, signal))) {
      aborted = true;
      break;
    }
    if (performance.now() > deadline) break;
    const readStarted = performance.now();
    const checks = (await options.read()).map(options.assess);
    if (signal?.aborted) {
      aborted = true;
      break;
    }
    readings.push(checks);
    attempts.push({
      attempt: n,
      at: options.now().toISOString(),
      status: verdictOf(checks),
      durationMs: roundMs(performance.now() - readStarted),
      checks: checks.map((c) => ({
        name: c.name,
        status: c.status,
        reason: c.reason,
        observed: c.observed,
        message: c.message,
      })),
    });
    decision = assessMeasurements(
      attempts.map((a) => a.status),
      policy,
      { exhausted: n === policy.count || performance.now() > deadline },
    );
  }
  const durationMs = roundMs(performance.now() - started);
  const blank = emptyCheck(options.postcondition, options.verifier);
  if (aborted) return [abortedCheck(readings.at(-1) ?? [blank], attempts, policy, durationMs)];
  decision ??= assessMeasurements(
    attempts.map((a) => a.status),
    policy,
    { exhausted: true },
  )!;
  const measurement: CheckMeasurement = {
    policy: { ...policy },
    status: decision.status,
    decidedBy: decision.decidedBy,
    attempts,
  };
  const deciding = decidingReading(readings, attempts, decision.status);
  if (deciding === undefined) {
    // The timeout ran out before the first reading.
    return [
      {
        ...blank,
        status: 'error',
        reason: 'VERIFIER_TIMEOUT',
        message: `no reading within the measurement timeout of ${policy.timeoutMs} ms`,
        measurement,
        durationMs,
      },
    ];
  }
  return deciding.map((check) => {
    const agrees =
      decision.status === 'inconclusive' ? check.status !== 'pass' && check.status !== 'fail' : true;
    if (agrees) return { ...check, measurement, durationMs };
    // The series decided nothing, though this reading had a verdict: keep what it said.
    return {
      ...check,
      status: 'inconclusive',
      reason: 'MEASUREMENT_UNDECIDED',
      reported: check.reported ?? (check.status as CheckVerdict),
      measurement,
      durationMs,
    };
  });
}

/** The verdict of one reading: any fail, fail; every check a pass, pass; otherwise inconclusive. */
function verdictOf(checks: readonly Check[]): CheckVerdict {
  if (checks.some((c) => c.status === 'fail')) return 'fail';
  if (checks.length > 0 && checks.every((c) => c.status === 'pass')) return 'pass';
  return 'inconclusive';
}

// The checks to record: of the last reading that said what the series decided, so a `fail`
// is recorded with the reading that failed; an undecided series records its latest reading.
function decidingReading(
  readings: Check[][],
  attempts: MeasurementAttempt[],
  status: CheckVerdict,
): Check[] | undefined {
  for (let i = attempts.length - 1; i >= 0; i--) {
    if (attempts[i]!.status === status) return readings[i];
  }
  return readings.at(-1);
}

function abortedCheck(
  last: Check[],
  attempts: MeasurementAttempt[],
  policy: ResolvedMeasurementPolicy,
  durationMs: number,
): Check {
  const base = last[0]!;
  return {
    ...base,
    status: 'error',
    source: base.source,
    reason: 'VERIFIER_ABORTED',
    message: `the run was cancelled after ${attempts.length} of ${policy.count} readings`,
    ...(base.status === 'pass' || base.status === 'fail' ? { reported: base.status } : {}),
    measurement: { policy: { ...policy }, status: 'inconclusive', decidedBy: 'COUNT_REACHED', attempts },
    durationMs,
  };
}

function emptyCheck(postcondition: string, verifier: Check['verifier']): Check {
  return {
    name: postcondition,
    postcondition,
    status: 'inconclusive',
    source: null,
    observed: null,
    expected: null,
    evidence: {},
    message: '',
    reason: null,
    verifier,
    durationMs: null,
  };
}

/** Wait `ms`; resolves false at once if `signal` aborts (or already has). */
function pause(ms: number, signal: AbortSignal | undefined): Promise<boolean> {
  if (signal?.aborted) return Promise.resolve(false);
  if (ms <= 0) return Promise.resolve(true);
  return new Promise((resolve) => {
    const onAbort = () => {
      clearTimeout(timer);
      resolve(false);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve(true);
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

function roundMs(ms: number): number {
  return Math.round(ms * 1000) / 1000;
}
