import type { CheckVerdict, DerivedStatus } from './check';

/** The least a check needs for status derivation; the ledger's stored rows fit this shape. */
export interface StatusInput {
  readonly name?: string;
  /** The declared postcondition the check answers, when it differs from its `name`. */
  readonly postcondition?: unknown;
  readonly status: string;
  readonly source?: string | null;
  readonly reason?: string | null;
  readonly reported?: string;
  readonly readsWrittenSystem?: boolean;
}

/**
 * Who a check must be independent of. `writer`: the tool itself and its response channel (the
 * proposal's and observation's `server_id`, the observation's `result_source`): a reading from
 * there is the tool's own account again, so it is `NOT_INDEPENDENT`. `writes`: the named systems
 * the tool's registration says it writes to: reading them is allowed, since that is where the
 * truth lives, and the check is marked `readsWrittenSystem: true`.
 */
export interface WriterOptions {
  writer?: string | readonly (string | null | undefined)[] | null;
  writes?: readonly (string | null | undefined)[] | null;
}

/**
 * The check as it counts toward the status: unchanged when its source is independent of the
 * writer, otherwise a copy with status `inconclusive`, reason `NOT_INDEPENDENT` (or
 * `SOURCE_MISSING` when it names no source) and the verifier's own verdict kept in `reported`.
 *
 * Why even a `fail` is downgraded: the writer's own account is already in the observation; a
 * verification is about a second, independent reading, and the writer re-reading itself is not
 * one. A source among `writes` (the systems the tool wrote to) counts, marked
 * `readsWrittenSystem: true`. Idempotent, so the ledger can re-assess stored checks and reach
 * the same answer.
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
  if (namesOf(options?.writes).includes(source) && check.readsWrittenSystem !== true) {
    return { ...check, readsWrittenSystem: true };
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

/** What one set of checks proves about each declared postcondition. */
export interface PostconditionStatus {
  name: string;
  status: DerivedStatus;
}

/** {@link deriveDeclaredStatus}: the status, each declared postcondition's, and the checks that answer none. */
export interface DeclaredStatus {
  status: DerivedStatus;
  postconditions: PostconditionStatus[];
  /** Names of checks that answer no declared postcondition: reported, never counted. */
  undeclared: string[];
}

/**
 * The postcondition a check answers: its `postcondition` field (the host sets it to the
 * condition it ran the verifier for), otherwise its `name`.
 */
export function answeredPostcondition(check: StatusInput): string {
  if (typeof check.postcondition === 'string') return check.postcondition;
  return typeof check.name === 'string' ? check.name : '';
}

/**
 * What checks prove about the postconditions a proposal declared. A check proves only the
 * postcondition it answers; each declared one gets {@link deriveStatus} of its own checks
 * (none -> `inconclusive`: unproven); then any failed -> `failed`, every one passed ->
 * `passed`, otherwise `inconclusive`. A proposal that declared nothing proves nothing: a
 * check of something nobody declared cannot make an action verified.
 *
 * @example
 * deriveDeclaredStatus([{ name: 'refund.recorded', status: 'pass', source: 'ledger-api' }], ['refund.recorded', 'email.sent']);
 * // { status: 'inconclusive', postconditions: [{ name: 'refund.recorded', status: 'passed' }, { name: 'email.sent', status: 'inconclusive' }], undeclared: [] }
 */
export function deriveDeclaredStatus<C extends StatusInput>(
  checks: readonly C[],
  declared: readonly string[],
  options?: WriterOptions,
): DeclaredStatus {
  const names = [...new Set(declared)];
  const byName = new Map<string, C[]>(names.map((name) => [name, []]));
  const undeclared: string[] = [];
  for (const check of checks) {
    const answered = answeredPostcondition(check);
    const list = byName.get(answered);
    if (list) list.push(check);
    else if (!undeclared.includes(answered)) undeclared.push(answered);
  }
  const postconditions = names.map((name) => ({ name, status: deriveStatus(byName.get(name)!, options) }));
  return { status: combinePostconditions(postconditions), postconditions, undeclared };
}

/**
 * One status from each declared postcondition's: any failed -> `failed`; every one passed
 * (and at least one declared) -> `passed`; otherwise `inconclusive`.
 */
export function combinePostconditions(postconditions: readonly { status: string }[]): DerivedStatus {
  if (postconditions.some((p) => p.status === 'failed')) return 'failed';
  if (postconditions.length > 0 && postconditions.every((p) => p.status === 'passed')) return 'passed';
  return 'inconclusive';
}

function writersOf(options: WriterOptions | undefined): string[] {
  const writer = options?.writer;
  return namesOf(typeof writer === 'string' ? [writer] : writer);
}

function namesOf(list: readonly (string | null | undefined)[] | null | undefined): string[] {
  return (list ?? []).filter((w): w is string => typeof w === 'string' && w.trim() !== '').map(normalize);
}

// Source names are identifiers written by people in config; case and stray spaces must not
// make the writer look independent of itself.
function normalize(name: string): string {
  return name.trim().toLowerCase();
}
