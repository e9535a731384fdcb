import { countedStatus } from '@vouch/verifier-sdk';
import type { LedgerErrorCode } from '../errors';
import type { JsonObject, ProposalRecord, ToolRecord, VerificationCheck, VerificationStatus } from './types';

/** The precondition checks run at authorize, and the status derived from them (a claim's `preconditions`). */
export interface PreconditionResult {
  status: VerificationStatus;
  checks: VerificationCheck[];
}

/** The precondition a check answers: its `postcondition` field (the host's name for either phase), else its name. */
const answered = (check: VerificationCheck): string =>
  typeof check.postcondition === 'string' ? check.postcondition : check.name;

/**
 * What `checks` prove about the `declared` preconditions, by the rule of a verification: a
 * declared precondition failed → `failed`; every declared one answered and every check
 * answering one passed → `passed`; otherwise (no check, no verifier, an error, a source not
 * independent) `inconclusive`. Checks that answer no declared precondition are kept and not
 * counted. Derived by the ledger (and again by the record rules), never taken from a caller.
 *
 * @example
 * preconditionStatus([{ name: 'account.open', status: 'pass', source: 'crm' }], ['account.open']); // 'passed'
 */
export function preconditionStatus(
  checks: readonly VerificationCheck[],
  declared: readonly string[],
): VerificationStatus {
  const counted = checks.filter((check) => declared.includes(answered(check)));
  // A failure always counts, also one recorded under another status with its verdict kept
  // (an oversize result, a fail the old rule downgraded): `countedStatus`, as for postconditions.
  if (counted.some((check) => countedStatus(check) === 'fail')) return 'failed';
  const proven =
    counted.every((check) => check.status === 'pass') &&
    declared.every((name) => counted.some((check) => answered(check) === name));
  return proven ? 'passed' : 'inconclusive';
}

/** The result to record for `proposal` from the checks the server ran; null when it declared no preconditions. */
export function preconditionResultOf(
  proposal: Pick<ProposalRecord, 'preconditions'>,
  checks: readonly VerificationCheck[] | undefined,
): PreconditionResult | null {
  if (proposal.preconditions.length === 0) return null;
  const ran = [...(checks ?? [])];
  return {
    status: preconditionStatus(
      ran,
      proposal.preconditions.map((c) => c.name),
    ),
    checks: ran,
  };
}

/** What an unproven precondition does at authorize, as the tool's registration says (`block` by default). */
export const unprovenModeOf = (tool: Pick<ToolRecord, 'unproven_preconditions'> | null): 'block' | 'warn' =>
  tool?.unproven_preconditions ?? 'block';

/**
 * Why `result` keeps the proposal from running, or null when it may run: a failed
 * precondition always blocks (`PRECONDITION_FAILED`); one no check proved blocks unless the
 * tool's registration says `warn` (`PRECONDITION_UNPROVEN`).
 */
export function preconditionBlock(
  proposalId: string,
  result: PreconditionResult | null,
  mode: 'block' | 'warn',
): {
  code: Extract<LedgerErrorCode, 'PRECONDITION_FAILED' | 'PRECONDITION_UNPROVEN'>;
  message: string;
} | null {
  if (result === null || result.status === 'passed') return null;
  if (result.status === 'failed') {
    return { code: 'PRECONDITION_FAILED', message: `a precondition of proposal ${proposalId} does not hold` };
  }
  if (mode === 'warn') return null;
  return {
    code: 'PRECONDITION_UNPROVEN',
    message: `no check proved the preconditions of proposal ${proposalId}; its tool's registration blocks unproven preconditions (unproven_preconditions: block)`,
  };
}

/** A precondition result as the JSON a refusal's details and a refused execution carry. */
export const preconditionJson = (result: PreconditionResult): JsonObject => ({
  status: result.status,
  checks: result.checks,
});
