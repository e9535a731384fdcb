import type { MeasurementDecision } from './assess-measurements';
import type { JsonObject, JsonValue } from './json';
import type { ResolvedMeasurementPolicy } from './measurement-policy';

/** What a verifier may conclude. `error` is not here: only the host records an error. */
export type CheckVerdict = 'pass' | 'fail' | 'inconclusive';

/** The status of a recorded check: a verifier's verdict, or `error` when the host could not get one. */
export type CheckStatus = CheckVerdict | 'error';

/**
 * Why a check is not a plain pass or fail. The host writes these; a verifier may also give
 * its own SCREAMING_SNAKE reason with an `inconclusive` verdict (e.g. `AMBIGUOUS_ROWS`).
 */
export type CheckReason =
  /** No registered verifier handles the postcondition: "we did not look" is not "all is well". */
  | 'NO_VERIFIER'
  /** A pass whose source is the tool's own server (as the operator registered it): not independent. */
  | 'NOT_INDEPENDENT'
  /** A pass that names no source, so nobody can tell whether it is independent. */
  | 'SOURCE_MISSING'
  /** A pass from a verifier the postcondition's `verifiers` list does not include: it proves nothing. */
  | 'VERIFIER_NOT_ALLOWED'
  /** The verifier needs a `fetch` or `sql` grant the host did not give it. */
  | 'GRANT_MISSING'
  /** The verifier could not read its source. */
  | 'SOURCE_UNAVAILABLE'
  /** Policy forbade reading the source (SSRF guard, path outside the roots, a write statement). */
  | 'SOURCE_FORBIDDEN'
  /** The verifier did not answer before its deadline. */
  | 'VERIFIER_TIMEOUT'
  /** The caller cancelled the run. */
  | 'VERIFIER_ABORTED'
  /** A measured series ended without reaching a limit that decides it (see `measurement`). */
  | 'MEASUREMENT_UNDECIDED'
  /** The verifier threw something other than a source error. */
  | 'VERIFIER_CRASHED'
  /** The verifier returned something that is not a canonicalizable check result, or one over `MAX_CHECK_RESULT_BYTES`. */
  | 'RESULT_INVALID'
  /** The options for this run did not validate. */
  | 'OPTIONS_INVALID'
  /**
   * The ledger's: the check's `evidence_ref` already proved another proposal of the log, so
   * it proves nothing here (one refund cannot vouch for two refunds).
   */
  | 'EVIDENCE_REUSED';

/**
 * What `check()` returns: plain JSON, one per postcondition it answers (or an array).
 *
 * @example
 * return { name: 'refund.recorded', status: 'fail', source: 'ledger-db',
 *   observed: { rows: 0 }, expected: { rows: 1 }, evidence: { refund_id }, message: 'no refund row' };
 */
export interface CheckResult {
  /** What was checked, usually the postcondition name. */
  name: string;
  status: CheckVerdict;
  /**
   * Where the reading came from (`ledger-db`, `https://payments.internal`). Required: a check
   * whose source is the system that performed the write is not independent.
   */
  source: string;
  /** The value read from the source. */
  observed?: JsonValue;
  /** The value the postcondition asks for. */
  expected?: JsonValue;
  /** Anything that lets a reader re-do the check: query, URL, row ids, hashes. Never secrets. */
  evidence?: JsonObject;
  /** One human sentence. */
  message?: string;
  /** With `inconclusive`: a SCREAMING_SNAKE reason. */
  reason?: string;
  /**
   * What the check found, named so the ledger can tell when the same thing is offered as proof
   * of a second proposal (`refund:rf_123`, `row:refunds/42`): 1 to 256 characters, no control
   * characters. The ledger records a `pass` whose reference already proved another proposal
   * of the log as inconclusive, `EVIDENCE_REUSED`.
   */
  evidence_ref?: string;
}

/** The verifier that produced a check, as recorded with it. */
export interface CheckVerifier {
  id: string;
  version: string;
  apiVersion: number;
  /** The registration name (defaults to the id; differs when one verifier is registered twice). */
  name: string;
}

/**
 * A check as the host records it: every field present, plain JSON, ready for the ledger.
 * `verifier` is null only for `NO_VERIFIER`; `source` is null when no verifier reported one.
 */
export interface Check {
  name: string;
  /** The postcondition (or precondition) this check answers. */
  postcondition: string;
  /**
   * The params of the postcondition it answers: with `postcondition`, which one of the declared
   * conditions it is (two of one name with different params are proven separately). The host
   * sets it from the condition it ran the verifier for.
   */
  params?: JsonObject;
  status: CheckStatus;
  source: string | null;
  observed: JsonValue;
  expected: JsonValue;
  evidence: JsonObject;
  message: string;
  reason: string | null;
  /** Present when the verifier named what it found (see {@link CheckResult.evidence_ref}). */
  evidence_ref?: string;
  /** Present when the host overrode the verifier's verdict (e.g. `NOT_INDEPENDENT`): what it said. */
  reported?: CheckVerdict;
  /** Present when the host named the source from configuration and the verifier reported another: what it said. */
  reportedSource?: string;
  /** True when the source is a system the tool wrote to: allowed (the truth lives there), and said so. */
  readsWrittenSystem?: boolean;
  verifier: CheckVerifier | null;
  /** Wall time the verifier took, in milliseconds; null when none ran. */
  durationMs: number | null;
  /** Present when the registration has a measurement policy: every reading, and what decided. */
  measurement?: CheckMeasurement;
}

/** One reading of a measured check, kept as evidence. */
export interface MeasurementAttempt {
  /** 1 for the first reading. */
  attempt: number;
  /** The host's clock when the reading ended (ISO 8601). */
  at: string;
  /** What this reading said, after independence was counted. */
  status: CheckVerdict;
  durationMs: number;
  checks: {
    name: string;
    status: CheckStatus;
    reason: string | null;
    observed: JsonValue;
    message: string;
  }[];
}

/** How a measured check was decided: the policy, the verdict of the series and every reading. */
export interface CheckMeasurement {
  policy: { [K in keyof ResolvedMeasurementPolicy]: ResolvedMeasurementPolicy[K] };
  status: CheckVerdict;
  decidedBy: MeasurementDecision;
  attempts: MeasurementAttempt[];
}

/** The status of a verification, derived from its checks and never supplied. */
export type DerivedStatus = 'passed' | 'failed' | 'inconclusive';
