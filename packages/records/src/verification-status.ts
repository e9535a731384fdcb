import { z } from 'zod';
import { jsonObjectSchema, timeSchema } from './fields';
import { verificationRecordSchema, verificationStatusSchema } from './records';

/** Why a proposal's verification status is not definitive yet. */
export const verificationStatusReasonSchema = z.enum([
  /** No verification has been recorded. */
  'NOT_VERIFIED',
  /** The proposal declared no postconditions: there is nothing a check could prove. */
  'NO_POSTCONDITIONS',
  /** The tool's outcome is unknown (timeout) and it may still act: no verdict until it settles. */
  'OUTCOME_UNKNOWN',
  /** A declared postcondition has no passed or failed check in effect. */
  'UNPROVEN',
]);
export type VerificationStatusReason = z.output<typeof verificationStatusReasonSchema>;

/** What the records in effect prove about one declared postcondition. */
export const postconditionVerdictSchema = z.object({
  name: z.string(),
  /** The declared postcondition's params, when it has any: two of one name are told apart by them. */
  params: jsonObjectSchema.optional(),
  status: verificationStatusSchema,
  /** The records that decided it: those that failed it when failed, those that passed it when passed. */
  decided_by: z.array(z.string()),
});
export type PostconditionVerdict = z.output<typeof postconditionVerdictSchema>;

/** A proposal's verification status, derived from all its verification records; never stored. */
export const effectiveVerificationSchema = z
  .object({
    status: verificationStatusSchema,
    /** Why the status is `inconclusive`; null when it is definitive. */
    reason: verificationStatusReasonSchema.nullable().meta({
      description: 'Why the status is inconclusive; null when it is definitive.',
    }),
    postconditions: z.array(postconditionVerdictSchema),
    /** Records that no longer count, and the re-verification that superseded each. */
    superseded: z.array(z.object({ id: z.string(), by: z.string() })),
    /** For an observation with outcome `unknown`: from when a verification can be definitive. */
    settles_at: timeSchema.nullable().meta({
      description: 'For an unknown outcome: from when a verification can be definitive.',
    }),
  })
  .meta({
    description:
      'The proposal’s status, derived from every verification record not superseded, one declared postcondition at a time: any failed → `failed`; every one passed → `passed`; otherwise `inconclusive`. A later inconclusive record never replaces a definitive result.',
  });
export type EffectiveVerification = z.output<typeof effectiveVerificationSchema>;

/** `POST /v1/verifications` and `/v1/observations/{id}/verify`: the new record and the proposal's status. */
export const recordedVerificationSchema = verificationRecordSchema
  .extend({ verification_status: effectiveVerificationSchema })
  .meta({ description: 'The new record, and (not part of it) the proposal’s status with it counted.' });
export type RecordedVerification = z.output<typeof recordedVerificationSchema>;
