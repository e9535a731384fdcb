import { VerifierError } from './errors';

/**
 * A duration: milliseconds as a number, or a string with a unit as Argo Rollouts writes them
 * (`250ms`, `3s`, `5m`, `1h`).
 */
export type Duration = number | string;

/**
 * How many times to read a postcondition back, how far apart, and when the series is decided.
 * The fields and their meaning follow Argo Rollouts' analysis metrics; docs/verification.md
 * says where Vouch differs and why.
 *
 * @example
 * // "a refund may take seconds to show": read every second, up to ten times; the first pass
 * // wins, and only when all ten readings failed is the postcondition false.
 * const refundShowsUp: MeasurementPolicy = { interval: '1s', count: 10, consecutiveSuccessLimit: 1, failureLimit: -1 };
 */
export interface MeasurementPolicy {
  /** Wait this long before the first reading (default 0). */
  initialDelay?: Duration;
  /** Wait this long between readings (default 0). */
  interval?: Duration;
  /** How many readings at most (default 1). */
  count?: number;
  /** The whole series may take this long; it then ends as if `count` ran out (default: none). */
  timeout?: Duration;
  /** Failed when more readings than this failed; -1 disables the limit (default 0). */
  failureLimit?: number;
  /** Inconclusive when more readings than this were inconclusive or errors (default 0). */
  inconclusiveLimit?: number;
  /** Passed once this many readings in a row passed; 0 disables (default 0). */
  consecutiveSuccessLimit?: number;
}

/** A validated policy, durations in milliseconds, every default applied. */
export interface ResolvedMeasurementPolicy {
  readonly initialDelayMs: number;
  readonly intervalMs: number;
  readonly count: number;
  readonly timeoutMs: number | null;
  readonly failureLimit: number;
  readonly inconclusiveLimit: number;
  readonly consecutiveSuccessLimit: number;
}

/** The longest a series may be set to wait in total: one day. */
export const MAX_MEASUREMENT_MS = 86_400_000;
/** The most readings a series may take. */
export const MAX_MEASUREMENT_COUNT = 1_000;

const KEYS = new Set([
  'initialDelay',
  'interval',
  'count',
  'timeout',
  'failureLimit',
  'inconclusiveLimit',
  'consecutiveSuccessLimit',
]);
const DURATION = /^(\d+(?:\.\d+)?)(ms|s|m|h)$/;
const UNIT_MS: Record<string, number> = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000 };

/**
 * Validate a policy and apply its defaults. Throws `VERIFIER_INVALID` with `field` a JSON
 * Pointer under `at` (e.g. `/measurement/interval`), so a configuration mistake stops the
 * server at startup instead of turning every later check inconclusive.
 */
export function resolveMeasurementPolicy(
  policy: unknown,
  at = '/measurement',
  verifier?: string,
): ResolvedMeasurementPolicy {
  const fail = (field: string, message: string): never => {
    throw new VerifierError(
      'VERIFIER_INVALID',
      `measurement${field ? ` ${field.slice(1)}` : ''}: ${message}`,
      {
        ...(verifier === undefined ? {} : { verifier }),
        field: `${at}${field}`,
      },
    );
  };
  if (typeof policy !== 'object' || policy === null || Array.isArray(policy)) {
    return fail('', 'must be an object');
  }
  const p = policy as Record<string, unknown>;
  const unknownKey = Object.keys(p).find((key) => !KEYS.has(key));
  if (unknownKey !== undefined) fail(`/${unknownKey}`, `unknown key "${unknownKey}"`);
  const duration = (key: string): number | null => {
    const value = p[key];
    if (value === undefined) return null;
    let ms: number | undefined;
    if (typeof value === 'number') ms = value;
    else if (typeof value === 'string') {
      const match = DURATION.exec(value.trim());
      if (match) ms = Number(match[1]) * UNIT_MS[match[2]!]!;
    }
    if (ms === undefined || !Number.isFinite(ms) || ms < 0 || ms > MAX_MEASUREMENT_MS) {
      return fail(`/${key}`, 'must be milliseconds or a duration like "500ms", "3s", "5m" (at most one day)');
    }
    return Math.round(ms);
  };
  const integer = (key: string, min: number, max: number, fallback: number): number => {
    const value = p[key];
    if (value === undefined) return fallback;
    if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max) {
      return fail(`/${key}`, `must be an integer from ${min} to ${max}`);
    }
    return value;
  };
  const count = integer('count', 1, MAX_MEASUREMENT_COUNT, 1);
  const resolved: ResolvedMeasurementPolicy = {
    initialDelayMs: duration('initialDelay') ?? 0,
    intervalMs: duration('interval') ?? 0,
    count,
    timeoutMs: duration('timeout'),
    failureLimit: integer('failureLimit', -1, MAX_MEASUREMENT_COUNT, 0),
    inconclusiveLimit: integer('inconclusiveLimit', 0, MAX_MEASUREMENT_COUNT, 0),
    consecutiveSuccessLimit: integer('consecutiveSuccessLimit', 0, MAX_MEASUREMENT_COUNT, 0),
  };
  if (resolved.consecutiveSuccessLimit > count) {
    fail('/consecutiveSuccessLimit', `cannot exceed count (${count}): it could never be reached`);
  }
  if (resolved.failureLimit === -1 && resolved.consecutiveSuccessLimit === 0) {
    fail('/failureLimit', '-1 (no failure limit) needs a consecutiveSuccessLimit, or nothing could fail');
  }
  return Object.freeze(resolved);
}

/** True when the policy takes more than one immediate reading (so a caller may want to run it in the background). */
export function delaysVerification(policy: ResolvedMeasurementPolicy | null | undefined): boolean {
  return policy != null && (policy.count > 1 || policy.initialDelayMs > 0);
}
