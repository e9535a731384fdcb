import type { CheckVerdict, DerivedStatus } from './check';

/** The least a check needs for status derivation; the ledger's stored rows fit this shape. */
export interface StatusInput {
  readonly status: string;
  readonly source?: string | null;
  readonly reason?: string | null;
  readonly reported?: string;
}

/** The system (or systems) that performed the write, e.g. the observation's `server_id`. */
export interface WriterOptions {
  writer?: string | readonly (string | null | undefined)[] | null;
}

/**
 * The check as it counts toward the status: unchanged when its source is independent of the
 * writer, otherwise a copy with status `inconclusive`, reason `NOT_INDEPENDENT` (or
 * `SOURCE_MISSING` when it names no source) and the verifier's own verdict kept in `reported`.
 *
 * Why even a `fail` is downgraded: the writer's own account is already in the observation; a
 * verification is about a second, independent reading, and the writer re-reading itself is not
 * one. Idempotent, so the ledger can re-assess stored checks and reach the same answer.
 *
 * @example
 * assessIndependence({ name: 'refund.recorded', status: 'pass', source: 'payments-mcp' }, { writer: 'payments-mcp' });
 * // { name: 'refund.recorded', status: 'inconclusive', source: 'payments-mcp', reason: 'NOT_INDEPENDENT', reported: 'pass' }
 */
export function assessIndependence<C extends StatusInput>(check: C, options?: WriterOptions): C {
  if (check.status !== 'pass' && check.status !== 'fail') return check;
  const source = typeof check.source === 'string' ? normalize(check.source) : '';
  if (source === '') {
    return {
      ...check,
      status: 'inconclusive',
      reason: 'SOURCE_MISSING',
      reported: check.status as CheckVerdict,
    };
  }
  if (writersOf(options).includes(source)) {
    return {
      ...check,
      status: 'inconclusive',
      reason: 'NOT_INDEPENDENT',
      reported: check.status as CheckVerdict,
    };
  }
  return check;
}

/**
 * The one rule, shared with the ledger: any `fail` -> `failed`; no checks, or any check that is
 * not `pass` (inconclusive, error, not independent, no source) -> `inconclusive`; only when
 * every check passed -> `passed`. "We did not look" is never "all is well".
 *
 * @example
 * deriveStatus([{ name: 'refund.recorded', status: 'fail', source: 'ledger-api' }], { writer: 'payments-mcp' }); // 'failed'
 * deriveStatus([]); // 'inconclusive'
 */
export function deriveStatus<C extends StatusInput>(
  checks: readonly C[],
  options?: WriterOptions,
): DerivedStatus {
  if (checks.length === 0) return 'inconclusive';
  let allPassed = true;
  for (const check of checks) {
    const counted = assessIndependence(check, options);
    if (counted.status === 'fail') return 'failed';
    // Anything but an exact 'pass' (including an unknown status string) is not a pass.
    if (counted.status !== 'pass') allPassed = false;
  }
  return allPassed ? 'passed' : 'inconclusive';
}

function writersOf(options: WriterOptions | undefined): string[] {
  const writer = options?.writer;
  const list = typeof writer === 'string' ? [writer] : (writer ?? []);
  return list.filter((w): w is string => typeof w === 'string' && w.trim() !== '').map(normalize);
}

// Source names are identifiers written by people in config; case and stray spaces must not
// make the writer look independent of itself.
function normalize(name: string): string {
  return name.trim().toLowerCase();
}
