import { canonicalIdentity } from '@vouch/audit';
import { answeredConditions, assessAllowedVerifier, assessIndependence } from '@vouch/verifier-sdk';
import { LedgerError } from '../errors';
import { evidenceRefs } from '../schema/records';
import { isServerIdentity } from '../signatures/server-signer';
import { markReusedEvidence, ownersIn, passingRefsOf } from './evidence-refs';
import { parseInput, verificationInputSchema } from './inputs';
import type { RecordContext } from './record-context';
import { recordKeys } from './record-keys';
import { newId } from './record-transaction';
import { mustGetProposal, notFound, type RecordsRuntime, type ServerSigner } from './records-runtime';
import type { VerificationCheck, VerificationRecord } from './types';
import { verificationInputBytes } from './verification-input';
import {
  assertSupersession,
  declaredConditions,
  type EffectiveVerification,
  effectiveVerification,
  independenceOf,
  isAuditedParty,
  toVerificationRecord,
} from './verification-status';

export interface RecordVerificationOptions {
  /**
   * The checks were run by this server's configured verifiers (`POST
   * /v1/observations/{id}/verify`), not supplied by the caller. Without it, the checks of a
   * caller who is the audited party (the identity that executed or proposed) count as not
   * independent: nobody vouches for their own action.
   */
  checksRunByServer?: boolean;
  /**
   * With `checksRunByServer`: the request the caller signed to have them run (`{observation_id,
   * supersedes?, reason?}`, `verification.run`); without it the body itself is what is signed
   * (`verification.record`).
   */
  runRequest?: unknown;
}

/** What `recordVerification` returns: the new record, and the proposal's status with it counted. */
export interface RecordedVerification {
  verification: VerificationRecord;
  verification_status: EffectiveVerification;
}

/**
 * Record checks on an observation; the record's status is derived from them against the
 * declared postconditions, and the proposal's from all its records. A re-verification
 * names the records it supersedes and why; the audited party may not supersede.
 */
export async function recordVerification(
  runtime: RecordsRuntime,
  ctx: RecordContext,
  body: unknown,
  options: RecordVerificationOptions,
): Promise<RecordedVerification> {
  if (typeof body === 'object' && body !== null && 'status' in body) {
    throw new LedgerError(
      'VERIFICATION_INVALID',
      'a verification status is derived from its checks, never supplied',
      {
        details: { field: '/status' },
      },
    );
  }
  const input = parseInput(verificationInputSchema, body, {
    what: 'verification',
    maxBytes: verificationInputBytes(body, runtime.settings.maxInputBytes, options),
  });
  if (!options.checksRunByServer) refuseHostFields(input.checks);
  // The server's own identity (the settle verifier) signs with its key once the checks are known.
  const byServer = isServerIdentity(ctx.caller.identity);
  const serverSigner = byServer ? await runtime.serverSigner(ctx.caller.identity) : undefined;
  const signature = byServer
    ? undefined
    : options.checksRunByServer
      ? await runtime.authorSignature(
          ctx,
          'verification.run',
          options.runRequest ?? { observation_id: input.observation_id },
        )
      : await runtime.authorSignature(ctx, 'verification.record', body);
  const settleSeconds = runtime.settings.unknownOutcomeSettleSeconds;
  return runtime.run(ctx, recordKeys.verify(input.observation_id), async (tx) => {
    const observation = await tx.reads.observationById(input.observation_id);
    if (!observation) throw notFound('observation', input.observation_id);
    const [proposal, earlier] = await Promise.all([
      mustGetProposal(tx.reads, observation.proposal_id),
      tx.reads.verificationsOf(observation.proposal_id),
    ]);
    tx.reads.requireAssessedChecks(proposal, observation, earlier);
    await tx.reads.requireOwnEvidence(proposal.id, earlier);
    const tool = await tx.reads.latestTool(proposal.server_id, proposal.tool_name);
    // A check read from the tool itself or from the channel its result came from is not
    // independent, and neither is one the audited party reports about its own action,
    // whatever source it names (so every source it names counts as the writer). A check that
    // reads a system the tool writes to counts, marked `readsWrittenSystem`.
    const selfReported =
      !options.checksRunByServer && isAuditedParty(ctx.caller.identity, proposal, observation);
    const independence = independenceOf(proposal, tool?.writes);
    const writerOf = (check: { source?: unknown }) =>
      selfReported && typeof check.source === 'string'
        ? { ...independence, writer: [...independence.writer, check.source] }
        : independence;
    // A pass proves a condition only from a verifier its `verifiers` list allows.
    const declared = declaredConditions(proposal);
    const allowed = { recordedBy: ctx.caller.identity, identity: canonicalIdentity };
    const assess = (check: VerificationCheck) => {
      const counted = assessIndependence(check, writerOf(check));
      const answers = answeredConditions(counted, declared).map((i) => declared[i]!);
      return assessAllowedVerifier(counted, answers, allowed);
    };
    const now = tx.time();
    const id = newId('ver');
    const assessed = (input.checks as VerificationCheck[]).map(assess);
    // One piece of evidence proves one proposal: a pass on a reference another proposal of the
    // log passed on first is not proof here, whoever ran the check.
    const refs = passingRefsOf(assessed);
    for (const ref of refs) tx.claim(recordKeys.evidenceRef(ref));
    const owners = ownersIn(await tx.reads.firstUsesOf(refs), refs);
    const checks = markReusedEvidence(assessed, owners, proposal.id);
    const firstUses = passingRefsOf(checks).filter((ref) => !owners.has(ref));
    const record = toVerificationRecord({
      id,
      observation,
      proposal,
      checks,
      verifier: ctx.caller.identity,
      verifiedAt: now,
      settleSeconds,
      supersedes: input.supersedes && { ids: input.supersedes, reason: input.reason! },
    });
    const signed = serverSigner ? serverSigned(serverSigner, ctx.log, record) : signature;
    const verification = { ...record, ...(signed ? { signature: signed } : {}) };
    assertSupersession({ caller: ctx.caller, proposal, observation, earlier, next: verification });
    tx.write('verification', ctx.caller.identity, verification, (link) =>
      firstUses.map((ref) => ({
        table: evidenceRefs,
        values: { ...link, ref, proposalId: proposal.id, verificationId: id },
      })),
    );
    return {
      verification,
      verification_status: effectiveVerification({
        proposal,
        observation,
        verifications: [...earlier, verification],
        settleSeconds,
        now,
      }),
    };
  });
}

/** The server's signature of a verification it records as itself: the checks as recorded. */
function serverSigned(sign: ServerSigner, log: string, record: VerificationRecord) {
  return sign({
    log,
    action: 'verification.record',
    actor: record.verifier,
    claims: {
      observation_id: record.observation_id,
      checks: record.checks.map((c) => ({
        name: c.name,
        status: c.status,
        ...(c.source ? { source: c.source } : {}),
      })),
      supersedes: record.supersedes ?? null,
    },
  });
}

/**
 * An external verifier's check speaks for the identity that posts it: it may not carry the
 * field only the server's own verifier host writes: `verifier`, which names the configured
 * verifier a check came from, and which a condition's `verifiers` list may allow.
 *
 * @throws LedgerError `VERIFICATION_INVALID` with `details.field`.
 */
function refuseHostFields(checks: readonly Record<string, unknown>[]): void {
  checks.forEach((check, index) => {
    const field = HOST_FIELDS.find((key) => check[key] !== undefined);
    if (field === undefined) return;
    throw new LedgerError(
      'VERIFICATION_INVALID',
      `check ${index} carries \`${field}\`, which only the server's verifier host records: an external verifier's checks speak for the identity that posts them`,
      { details: { field: `/checks/${index}/${field}` } },
    );
  });
}

const HOST_FIELDS = ['verifier'] as const;
