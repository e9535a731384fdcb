import { canonicalText } from './canonical-text';
import type { DerivedStatus } from './check';

/** The least a check needs for status derivation; the ledger's stored rows fit this shape. */
export interface StatusInput {
  readonly name?: string;
  /** The declared postcondition the check answers, when it differs from its `name`. */
  readonly postcondition?: unknown;
  /**
   * The params of the declared postcondition the check answers (compared as canonical JSON).
   * Absent: the check answers by name alone (see {@link answeredConditions}).
   */
  readonly params?: unknown;
  readonly status: string;
  readonly source?: string | null;
  readonly reason?: string | null;
  readonly reported?: string;
  readonly readsWrittenSystem?: boolean;
  /** The server's verifier that produced it (`{ name }`, its configured name); absent on an external verifier's check. */
  readonly verifier?: unknown;
}

/**
 * Who a pass must be independent of, from the operator's configuration only. `writer`: the
 * tool's registered server: a pass read from there is the tool's own account again, so it is
 * `NOT_INDEPENDENT`. `writes`: the named systems the tool's registration says it writes to:
 * reading them is allowed, since that is where the truth lives, and the check is marked
 * `readsWrittenSystem: true`. Nothing the gateway sends (such as an observation's
 * `result_source`) belongs here: the audited party does not get to say what is independent.
 */
export interface WriterOptions {
  writer?: string | readonly (string | null | undefined)[] | null;
  writes?: readonly (string | null | undefined)[] | null;
  /**
   * How a source name is compared: both sides are mapped through it and must be equal.
   * Defaults to {@link canonicalName}; the ledger passes its Unicode confusable skeleton, so
   * a Cyrillic or Greek look-alike of the tool's name is the tool's name.
   */
  canonical?: (name: string) => string;
}

/**
 * A name in the form the SDK compares it when the host gives no other: NFKC, default-ignorable
 * code points (zero-width characters, soft hyphen) removed, lower case, trimmed. Hosts that
 * can (the ledger) compare by a confusable skeleton instead.
 */
export function canonicalName(name: string): string {
  return name.normalize('NFKC').replace(DEFAULT_IGNORABLE, '').toLowerCase().trim();
}

const DEFAULT_IGNORABLE = /\p{Default_Ignorable_Code_Point}/gu;

/**
 * The check as it counts toward the status. Independence is what a pass needs, not a fail: a
 * `pass` that names no source becomes `inconclusive` with `SOURCE_MISSING`, one read from the
 * writer `inconclusive` with `NOT_INDEPENDENT`, the verdict kept in `reported`. A `fail` is
 * never downgraded: a failure from the tool's own system is still a failure, and nobody gains
 * by reporting one they could hide. A pass or fail whose source is among `writes` is marked
 * `readsWrittenSystem: true`. Idempotent, so the ledger can re-assess stored checks (including
 * ones stored under the earlier rule, which also downgraded a fail) and reach the same answer.
 *
 * @example
 * assessIndependence({ name: 'refund.recorded', status: 'pass', source: 'payments-mcp' }, { writer: 'payments-mcp' });
 * // { name: 'refund.recorded', status: 'inconclusive', source: 'payments-mcp', reason: 'NOT_INDEPENDENT', reported: 'pass' }
 */
export function assessIndependence<C extends StatusInput>(check: C, options?: WriterOptions): C {
  if (check.status !== 'pass' && check.status !== 'fail') return check;
  const canonical = options?.canonical ?? canonicalName;
  const source = typeof check.source === 'string' ? canonical(check.source).trim() : '';
  if (check.status === 'pass') {
    if (source === '')
      return { ...check, status: 'inconclusive', reason: 'SOURCE_MISSING', reported: 'pass' };
    if (namesOf(writersOf(options), canonical).includes(source)) {
      return { ...check, status: 'inconclusive', reason: 'NOT_INDEPENDENT', reported: 'pass' };
    }
  }
  if (
    source !== '' &&
    check.readsWrittenSystem !== true &&
    namesOf(options?.writes, canonical).includes(source)
  ) {
    return { ...check, readsWrittenSystem: true };
  }
  return check;
}

/**
 * The verdict a check counts as: its status, except that a `fail` the verifier reported counts
 * as a fail when the host set it aside for a reason that says nothing about the verdict:
 * `NOT_INDEPENDENT` and `SOURCE_MISSING` (records written before a failure always counted hold
 * a fail downgraded so), and `RESULT_INVALID` for a result too large to record. Reading them
 * this way means no stored failure is hidden, whoever wrote the record. (A measured series
 * that ended undecided keeps its last reading's verdict in `reported` too: that is not a
 * failure of the series, so it does not count.)
 */
export function countedStatus(check: StatusInput): string {
  const kept = check.reported === 'fail' && typeof check.reason === 'string' && FAIL_KEPT.has(check.reason);
  return kept ? 'fail' : check.status;
}

const FAIL_KEPT: ReadonlySet<string> = new Set(['NOT_INDEPENDENT', 'SOURCE_MISSING', 'RESULT_INVALID']);

/**
 * The one rule, shared with the ledger: any `fail` -> `failed`; no checks, or any check that is
 * not `pass` (inconclusive, error, not independent, no source) -> `inconclusive`; only when
 * every check passed -> `passed`. "We did not look" is never "all is well".
 *
 * @example
 * deriveStatus([{ name: 'refund.recorded', status: 'fail', source: 'payments-mcp' }], { writer: 'payments-mcp' }); // 'failed'
 * deriveStatus([]); // 'inconclusive'
 */
export function deriveStatus<C extends StatusInput>(
  checks: readonly C[],
  options?: WriterOptions,
): DerivedStatus {
  if (checks.length === 0) return 'inconclusive';
  let allPassed = true;
  for (const check of checks) {
    const counted = countedStatus(assessIndependence(check, options));
    if (counted === 'fail') return 'failed';
    // Anything but an exact 'pass' (including an unknown status string) is not a pass.
    if (counted !== 'pass') allPassed = false;
  }
  return allPassed ? 'passed' : 'inconclusive';
}

/** A declared postcondition as derivation reads it: a bare name, or the proposal's condition. */
export type DeclaredCondition =
  | string
  | { readonly name: string; readonly params?: unknown; readonly verifiers?: readonly string[] };

/** What one set of checks proves about each declared postcondition. */
export interface PostconditionStatus {
  name: string;
  /** Present when the declared postcondition has params: two of one name are told apart by them. */
  params?: unknown;
  status: DerivedStatus;
}

/** {@link deriveDeclaredStatus}: the status, each declared postcondition's, and the checks that answer none. */
export interface DeclaredStatus {
  status: DerivedStatus;
  postconditions: PostconditionStatus[];
  /** Names of checks that answer no declared postcondition: reported, never counted. */
  undeclared: string[];
}

/** {@link deriveDeclaredStatus}'s options: independence, and who may prove a restricted postcondition. */
export interface DeclaredStatusOptions extends WriterOptions {
  /** The identity that recorded the checks (a verification record's `verifier`): who answered a check with no `verifier` of its own. */
  recordedBy?: string;
  /** How verifier names and identities are compared; defaults to {@link canonicalName}. */
  identity?: (name: string) => string;
}

/**
 * The postcondition name a check answers: its `postcondition` field (the host sets it to the
 * condition it ran the verifier for), otherwise its `name`.
 */
export function answeredPostcondition(check: StatusInput): string {
  if (typeof check.postcondition === 'string') return check.postcondition;
  return typeof check.name === 'string' ? check.name : '';
}

/** One postcondition's identity: its name and params (canonical JSON; absent params are `{}`). */
export function conditionKey(name: string, params: unknown): string {
  return `${name}\u0000${canonicalText(params ?? {})}`;
}

/**
 * The indexes of the declared conditions a check answers. A check that carries `params`
 * answers the one condition with its name and those params. One without (an external
 * verifier's that does not say, a record written before params were told apart) answers the
 * conditions of its name: one, as it always did, or several, when it is ambiguous and can
 * only count against them (see {@link deriveDeclaredStatus}).
 */
export function answeredConditions(check: StatusInput, declared: readonly DeclaredCondition[]): number[] {
  const name = answeredPostcondition(check);
  const key = check.params === undefined ? null : conditionKey(name, check.params);
  const found: number[] = [];
  declared.forEach((condition, index) => {
    const c = asCondition(condition);
    if (c.name !== name) return;
    if (key === null || conditionKey(c.name, c.params) === key) found.push(index);
  });
  return found;
}

/**
 * Whether the verifier behind `check` may prove `condition`: always when the condition names
 * no `verifiers`; otherwise when the check's own verifier (`check.verifier.name`, the server's
 * configured name) or, for an external verifier's check, `recordedBy` is in the list.
 */
export function verifierAllowed(
  check: StatusInput,
  condition: DeclaredCondition,
  options: Pick<DeclaredStatusOptions, 'recordedBy' | 'identity'> = {},
): boolean {
  const allowed = asCondition(condition).verifiers;
  if (!Array.isArray(allowed)) return true;
  const identity = options.identity ?? canonicalName;
  const who = verifierNameOf(check) ?? options.recordedBy;
  if (typeof who !== 'string') return false;
  return allowed.some((name) => typeof name === 'string' && identity(name) === identity(who));
}

/**
 * The check as it counts for `conditions` (those it answers): a pass from a verifier that may
 * not prove one of them is `inconclusive` with `VERIFIER_NOT_ALLOWED` (verdict kept in
 * `reported`); anything else unchanged. A fail counts from any verifier.
 */
export function assessAllowedVerifier<C extends StatusInput>(
  check: C,
  conditions: readonly DeclaredCondition[],
  options: Pick<DeclaredStatusOptions, 'recordedBy' | 'identity'> = {},
): C {
  if (check.status !== 'pass') return check;
  if (conditions.every((condition) => verifierAllowed(check, condition, options))) return check;
  return { ...check, status: 'inconclusive', reason: 'VERIFIER_NOT_ALLOWED', reported: 'pass' };
}

/**
 * What checks prove about the postconditions a proposal declared. A check proves only the
 * postcondition it answers, by name and params; one that answers several of one name (it
 * gives no params) can fail them all and prove none. A pass from a verifier a condition does
 * not allow proves nothing. Each declared one gets {@link deriveStatus} of its own checks
 * (none -> `inconclusive`: unproven); then any failed -> `failed`, every one passed ->
 * `passed`, otherwise `inconclusive`. A proposal that declared nothing proves nothing.
 *
 * @example
 * deriveDeclaredStatus([{ name: 'refund.recorded', status: 'pass', source: 'ledger-api' }], ['refund.recorded', 'email.sent']);
 * // { status: 'inconclusive', postconditions: [{ name: 'refund.recorded', status: 'passed' }, { name: 'email.sent', status: 'inconclusive' }], undeclared: [] }
 */
export function deriveDeclaredStatus<C extends StatusInput>(
  checks: readonly C[],
  declared: readonly DeclaredCondition[],
  options?: DeclaredStatusOptions,
): DeclaredStatus {
  const conditions = uniqueConditions(declared);
  const groups = conditions.map((): StatusInput[] => []);
  const undeclared: string[] = [];
  for (const check of checks) {
    const answered = answeredConditions(check, conditions);
    if (answered.length === 0) {
      const name = answeredPostcondition(check);
      if (!undeclared.includes(name)) undeclared.push(name);
    }
    for (const index of answered) {
      const counted = assessAllowedVerifier(check, [conditions[index]!], options);
      groups[index]!.push(answered.length === 1 ? counted : onlyItsFailure(counted));
    }
  }
  const postconditions = conditions.map((condition, index) => ({
    name: condition.name,
    ...(condition.params === undefined ? {} : { params: condition.params }),
    status: deriveStatus(groups[index]!, options),
  }));
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

type Condition = { name: string; params?: unknown; verifiers?: readonly string[] };

function asCondition(condition: DeclaredCondition): Condition {
  return typeof condition === 'string' ? { name: condition } : condition;
}

/** Each declared condition once: the same name with the same params is one postcondition. */
function uniqueConditions(declared: readonly DeclaredCondition[]): Condition[] {
  const seen = new Set<string>();
  const conditions: Condition[] = [];
  for (const condition of declared.map(asCondition)) {
    const key = conditionKey(condition.name, condition.params);
    if (seen.has(key)) continue;
    seen.add(key);
    conditions.push(condition);
  }
  return conditions;
}

// A check that answers several postconditions of one name (it gives no params) cannot tell
// which it proved, so it proves none; its failure still counts against each.
function onlyItsFailure(check: StatusInput): StatusInput {
  if (countedStatus(check) === 'fail' || check.status !== 'pass') return check;
  return { ...check, status: 'inconclusive', reason: 'POSTCONDITION_AMBIGUOUS', reported: 'pass' };
}

function verifierNameOf(check: StatusInput): string | null {
  const verifier = check.verifier;
  if (typeof verifier !== 'object' || verifier === null) return null;
  const name = (verifier as { name?: unknown }).name;
  return typeof name === 'string' ? name : null;
}

function writersOf(options: WriterOptions | undefined): readonly (string | null | undefined)[] {
  const writer = options?.writer;
  return typeof writer === 'string' ? [writer] : (writer ?? []);
}

// Source names are identifiers written by people in config; case, stray spaces and look-alike
// letters must not make the writer look independent of itself.
function namesOf(
  list: readonly (string | null | undefined)[] | null | undefined,
  canonical: (name: string) => string,
): string[] {
  return (list ?? [])
    .filter((w): w is string => typeof w === 'string')
    .map((w) => canonical(w).trim())
    .filter((w) => w !== '');
}
