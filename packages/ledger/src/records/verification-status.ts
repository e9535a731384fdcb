import { canonicalIdentity, canonicalJson } from '@vouch/audit';
import type { EffectiveVerification, PostconditionVerdict, VerificationStatusReason } from '@vouch/records';
import {
  answeredPostcondition,
  assessIndependence,
  combinePostconditions,
  type DeclaredCondition,
  type DeclaredStatus,
  deriveDeclaredStatus,
  type WriterOptions,
} from '@vouch/verifier-sdk';
import { isLedgerError, LedgerError } from '../errors';
import { identitySkeleton } from '../identity/identity';
import type { IntegrityAlarm } from '../integrity-alarm';
import { addSeconds } from '../policy/approval-validity';
import type {
  Caller,
  ObservationRecord,
  ProposalRecord,
  VerificationCheck,
  VerificationHold,
  VerificationRecord,
  VerificationStatus,
} from './types';

/**
 * Verification semantics (docs/verification.md): what must be proven is what the proposal
 * declared; a proposal's status comes from every verification record in effect, one
 * postcondition at a time; a definitive result is never replaced by an inconclusive one,
 * and only an explicit re-verification by someone other than the audited party supersedes.
 */

export type { EffectiveVerification, PostconditionVerdict, VerificationStatusReason } from '@vouch/records';

/**
 * The postconditions a proposal declared, as derivation reads them: name, params and the
 * verifiers that may prove each, all from the proposal's hashed payload, so `verifyChain` can
 * derive exactly what the server derived.
 */
export function declaredConditions(proposal: Pick<ProposalRecord, 'postconditions'>): DeclaredCondition[] {
  return proposal.postconditions;
}

/**
 * A source name in the form independence compares it: the identity's canonical form (NFKC,
 * case-folded, zero-width characters removed) mapped through Unicode's confusable skeleton, so
 * `pаyments-mcp` with a Cyrillic `а` is `payments-mcp`. Over-matching here is the safe
 * direction: it can only make a pass count as not independent.
 */
export function sourceKey(name: string): string {
  return identitySkeleton(name);
}

/**
 * When a verification of this observation may be definitive: never before an `unknown`
 * outcome has settled (the tool may still be acting, so a check now reads a world that can
 * still change), at once for any other outcome.
 */
export function settlesAt(
  observation: Pick<ObservationRecord, 'outcome' | 'observed_at'>,
  settleSeconds: number,
) {
  return observation.outcome === 'unknown' ? addSeconds(observation.observed_at, settleSeconds) : null;
}

/** Held at inconclusive? True while an unknown outcome has not settled at `at`. */
export function holdAt(settles: string | null, at: string): VerificationHold | undefined {
  return settles !== null && Date.parse(at) < Date.parse(settles) ? 'OUTCOME_UNKNOWN' : undefined;
}

/**
 * What one record's checks prove about the declared postconditions; a held record proves
 * nothing. A check of the server's own verifiers is judged against a condition's `verifiers`
 * by its configured name, an external verifier's by the record's `verifier` identity.
 */
export function recordProof(
  record: Pick<VerificationRecord, 'checks' | 'held' | 'verifier'>,
  declared: readonly DeclaredCondition[],
): DeclaredStatus {
  const proof = deriveDeclaredStatus(record.checks, declared, {
    recordedBy: record.verifier,
    identity: canonicalIdentity,
  });
  if (record.held === undefined) return proof;
  return {
    status: 'inconclusive',
    postconditions: proof.postconditions.map((p) => ({ ...p, status: 'inconclusive' })),
    undeclared: proof.undeclared,
  };
}

/**
 * The status a record was given under the rule before a failure always counted (#32): each
 * check counted as stored (a `fail` downgraded to `inconclusive` stayed inconclusive), matched
 * by name alone, every verifier allowed. `verifyChain` accepts a record that states this
 * status as well as the current one, so a log written then still verifies; what a record
 * counts for today is always derived by the current rule (`recordProof`), which reads a
 * downgraded fail as a fail, so no failure is hidden by a record stating the older status.
 */
export function legacyRecordStatus(
  record: Pick<VerificationRecord, 'checks' | 'held'>,
  declared: readonly DeclaredCondition[],
): VerificationStatus {
  if (record.held !== undefined) return 'inconclusive';
  const asStored = record.checks.map((check) => ({
    name: answeredPostcondition(check),
    status: check.status,
    source: check.source,
  }));
  const names = declared.map((c) => (typeof c === 'string' ? c : c.name));
  return deriveDeclaredStatus(asStored, names).status;
}

/**
 * The verification record for checks on an observation: each check counted as independent
 * or not (already done by the caller), the undeclared names reported, the status derived
 * against the declared postconditions, held while an unknown outcome has not settled.
 */
export function toVerificationRecord(input: {
  id: string;
  observation: ObservationRecord;
  proposal: ProposalRecord;
  checks: VerificationCheck[];
  verifier: string;
  verifiedAt: string;
  settleSeconds: number;
  supersedes?: { ids: string[]; reason: string } | undefined;
}): VerificationRecord {
  const held = holdAt(settlesAt(input.observation, input.settleSeconds), input.verifiedAt);
  const proof = recordProof(
    { checks: input.checks, held, verifier: input.verifier },
    declaredConditions(input.proposal),
  );
  return {
    id: input.id,
    observation_id: input.observation.id,
    proposal_id: input.observation.proposal_id,
    checks: input.checks,
    status: proof.status,
    verifier: input.verifier,
    verified_at: input.verifiedAt,
    undeclared: proof.undeclared,
    ...(held ? { held } : {}),
    ...(input.supersedes ? { supersedes: input.supersedes.ids, reason: input.supersedes.reason } : {}),
  };
}

/**
 * A proposal's verification status from all its records, in chain order. Records superseded
 * by a later one do not count. For each declared postcondition: any record in effect failed
 * it -> failed; else any passed it -> passed; else unproven. Then any failed -> `failed`,
 * every one passed -> `passed`, else `inconclusive` with the reason.
 *
 * @example
 * effectiveVerification({ proposal, observation, verifications: [failed, noVerifier], settleSeconds: 900, now });
 * // { status: 'failed', ... }: the later inconclusive record does not replace the failure
 */
export function effectiveVerification(input: {
  proposal: Pick<ProposalRecord, 'postconditions'>;
  observation: Pick<ObservationRecord, 'outcome' | 'observed_at'> | null;
  verifications: readonly VerificationRecord[];
  settleSeconds: number;
  now: string;
}): EffectiveVerification {
  const declared = declaredConditions(input.proposal);
  const supersededBy = new Map<string, string>();
  for (const record of input.verifications) {
    for (const id of record.supersedes ?? []) supersededBy.set(id, record.id);
  }
  const inEffect = input.verifications.filter((r) => !supersededBy.has(r.id));
  const proofs = inEffect.map((record) => ({ id: record.id, proof: recordProof(record, declared) }));
  const shape = recordProof({ checks: [], verifier: '' }, declared).postconditions;
  const postconditions = shape.map(({ name, params }, i): PostconditionVerdict => {
    const which = {
      name,
      ...(params === undefined ? {} : { params: params as PostconditionVerdict['params'] }),
    };
    const decided = (status: VerificationStatus) =>
      proofs.filter(({ proof }) => proof.postconditions[i]!.status === status).map(({ id }) => id);
    const failed = decided('failed');
    if (failed.length > 0) return { ...which, status: 'failed', decided_by: failed };
    const passed = decided('passed');
    if (passed.length > 0) return { ...which, status: 'passed', decided_by: passed };
    return { ...which, status: 'inconclusive', decided_by: [] };
  });
  const status = combinePostconditions(postconditions);
  const settles = input.observation ? settlesAt(input.observation, input.settleSeconds) : null;
  return {
    status,
    reason:
      status === 'inconclusive'
        ? reasonOf(input.verifications.length, shape.length, holdAt(settles, input.now))
        : null,
    postconditions,
    superseded: [...supersededBy].map(([id, by]) => ({ id, by })),
    settles_at: settles,
  };
}

function reasonOf(
  records: number,
  declared: number,
  held: VerificationHold | undefined,
): VerificationStatusReason {
  if (declared === 0) return 'NO_POSTCONDITIONS';
  if (held) return held;
  return records === 0 ? 'NOT_VERIFIED' : 'UNPROVEN';
}

/** Whether `identity` is the audited party of the proposal: the one that executed it, or proposed it. */
export function isAuditedParty(
  identity: string,
  proposal: ProposalRecord,
  observation: ObservationRecord,
): boolean {
  const audited = [observation.executed_by, proposal.requester].map(canonicalIdentity);
  return audited.includes(canonicalIdentity(identity));
}

/**
 * May `caller` supersede these records with `next`? Throws when not:
 * - `SUPERSESSION_FORBIDDEN`: the caller is the audited party (the identity that executed, or
 *   the one that proposed); it may ask for verification but never replace a result;
 * - `NOT_FOUND`: an id is no verification of this proposal;
 * - `SUPERSESSION_INVALID`: a record is already superseded or was not definitive, or the
 *   re-verification itself is not definitive (an inconclusive result never replaces one).
 */
export function assertSupersession(input: {
  caller: Caller;
  proposal: ProposalRecord;
  observation: ObservationRecord;
  earlier: readonly VerificationRecord[];
  next: VerificationRecord;
}): void {
  const { caller, proposal, observation, next } = input;
  const ids = next.supersedes ?? [];
  if (ids.length === 0) return;
  if (isAuditedParty(caller.identity, proposal, observation)) {
    throw new LedgerError(
      'SUPERSESSION_FORBIDDEN',
      `${caller.identity} is the audited party of proposal ${proposal.id}: it may ask for verification, not supersede one`,
      { details: { proposal_id: proposal.id } },
    );
  }
  const declared = declaredConditions(proposal);
  const invalid = (why: string, message: string, details: Record<string, unknown> = {}) =>
    new LedgerError('SUPERSESSION_INVALID', message, { details: { reason: why, ...details } });
  if (next.status === 'inconclusive') {
    throw invalid(
      next.held ?? 'NOT_DEFINITIVE',
      'a re-verification must itself pass or fail: an inconclusive result never replaces a definitive one',
    );
  }
  for (const id of ids) {
    const target = input.earlier.find((r) => r.id === id);
    if (!target) {
      throw new LedgerError(
        'NOT_FOUND',
        `verification ${id} is not a verification of proposal ${proposal.id}`,
        {
          details: { id },
        },
      );
    }
    const by = input.earlier.find((r) => r.supersedes?.includes(id));
    if (by) {
      throw invalid('ALREADY_SUPERSEDED', `verification ${id} was already superseded by ${by.id}`, {
        id,
        superseded_by: by.id,
      });
    }
    if (recordProof(target, declared).status === 'inconclusive') {
      throw invalid(
        'NOT_DEFINITIVE',
        `verification ${id} proved nothing definitive: there is nothing to supersede`,
        {
          id,
        },
      );
    }
  }
}

/**
 * Who a proposal's passes must be independent of, as `recordVerification` assesses them, from
 * the operator's configuration alone: the tool's registered server (`proposal.server_id`; an
 * observation must name the same one); `writes`, the systems the tool's registration in force
 * says it writes to. Names are compared by {@link sourceKey}. The observation's
 * `result_source` is the gateway's claim: kept in its record, never a reason to discount a
 * check (the audited party does not get to say which source is independent).
 */
export function independenceOf(
  proposal: Pick<ProposalRecord, 'server_id'>,
  writes: readonly string[] | undefined,
): WriterOptions & { writer: string[]; writes: readonly string[] } {
  return { writer: [proposal.server_id], writes: writes ?? [], canonical: sourceKey };
}

/**
 * The first check of `checks` that is not what the server's assessment makes of it (see
 * `assessIndependence`, idempotent on what the server stored), or null. `compare`: `whole`,
 * the check as stored (what `verifyChain` judges, with the registration in force then);
 * `status`, only whether it counts (what the server judges later, when the tool's `writes`
 * may have changed since: they only mark a check, never change its status).
 */
export function unassessedCheck(
  checks: readonly VerificationCheck[],
  independence: WriterOptions,
  compare: 'whole' | 'status',
): VerificationCheck | null {
  for (const check of checks) {
    const assessed = assessIndependence(check, independence);
    const differs =
      compare === 'status'
        ? assessed.status !== check.status
        : canonicalJson(assessed) !== canonicalJson(check);
    if (differs) return check;
  }
  return null;
}

/**
 * Refuse to derive a status from a verification whose checks count a source the server would
 * not have counted (the tool itself, its result's channel, no source): the server assesses
 * every check before it writes it, so such a record was appended by someone else, and the
 * status a reviewer reads must not rest on it. Raises `alarm` before it throws.
 *
 * @throws LedgerError `INDEPENDENCE_NOT_ASSESSED`.
 */
export function requireAssessedChecks(
  alarm: IntegrityAlarm,
  log: string,
  proposal: ProposalRecord,
  observation: ObservationRecord | null,
  verifications: readonly VerificationRecord[],
): void {
  if (observation === null) return;
  const independence = independenceOf(proposal, undefined);
  for (const verification of verifications) {
    const check = unassessedCheck(verification.checks, independence, 'status');
    if (check === null) continue;
    const message = `verification ${verification.id} in log ${log} counts check ${String(check.name)} from ${String(check.source)}, which the server does not count as independent of proposal ${proposal.id}'s tool: the server never wrote it and derives no status from it; run \`vouch verify\``;
    alarm.raise({ code: 'RECORD_RULE_VIOLATION', log, table: 'verifications', message });
    throw new LedgerError('INDEPENDENCE_NOT_ASSESSED', message, {
      details: { verification_id: verification.id, check: check.name ?? null },
    });
  }
  // A record's `supersedes` decides which records count: each must be one the server would
  // have let its writer make (`assertSupersession`, over the records before it in chain order).
  for (let i = 0; i < verifications.length; i++) {
    const next = verifications[i]!;
    if ((next.supersedes ?? []).length === 0) continue;
    try {
      assertSupersession({
        caller: { identity: next.verifier },
        proposal,
        observation,
        earlier: verifications.slice(0, i),
        next,
      });
    } catch (error) {
      if (!isLedgerError(error)) throw error;
      const message = `verification ${next.id} in log ${log} supersedes as the server never lets it (${error.code}: ${error.message}): the server never wrote it and derives no status from it; run \`vouch verify\``;
      alarm.raise({ code: 'RECORD_RULE_VIOLATION', log, table: 'verifications', message });
      throw new LedgerError('SUPERSESSION_INVALID', message, {
        details: { verification_id: next.id, rule: error.code },
      });
    }
  }
}
