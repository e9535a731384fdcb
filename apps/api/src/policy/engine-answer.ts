import { jsonObjectSchema, reasonEffectSchema, verdictSchema } from '@vouch/records';
import { z } from 'zod';

/** An engine's decision, as the decision route's body has it (less the proposal and source). */
export interface EngineAnswer {
  verdict: z.output<typeof verdictSchema>;
  reasons: Array<{
    code: string;
    effect: z.output<typeof reasonEffectSchema>;
    message: string;
    details?: object;
  }>;
  repair: Record<string, unknown> | null;
  authorized_identity?: string | null;
}

const reasonText = z.string().min(1).max(4096);

/**
 * OPA's data API answer (`{"result": …}`); `result` is what the policy's rule evaluates to.
 * Members other than these are the engine's own business and are not recorded.
 */
const answerSchema = z.object({
  result: z.object({
    decision: verdictSchema,
    /** One reason in words; `code` is its stable code (default `EXTERNAL_<DECISION>`). */
    reason: reasonText.optional(),
    code: z.string().min(1).max(200).optional(),
    /** Several reasons, as the decision route takes them; wins over `reason`. */
    reasons: z
      .array(
        z.object({
          code: z.string(),
          effect: reasonEffectSchema.optional(),
          message: z.string(),
          details: jsonObjectSchema.optional(),
        }),
      )
      .min(1)
      .max(64)
      .optional(),
    repair: jsonObjectSchema.nullable().optional(),
    authorized_identity: z.string().nullable().optional(),
  }),
});

/**
 * Read the engine's answer: JSON, with a `result` whose `decision` is a verdict. An answer
 * without `result` is what OPA sends when the rule is undefined for this input: no decision,
 * so it is refused like any other malformed answer (the proposal stays undecided). Returns
 * why an answer is unusable in words that quote none of its values.
 */
export function readEngineAnswer(
  text: string,
): { ok: true; answer: EngineAnswer } | { ok: false; message: string } {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    return { ok: false, message: 'the answer is not JSON' };
  }
  const parsed = answerSchema.safeParse(json);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    const where = issue.path.length > 0 ? issue.path.join('.') : 'the answer';
    const missingResult =
      issue.path.length === 1 && issue.path[0] === 'result' && issue.code === 'invalid_type';
    return {
      ok: false,
      message: missingResult
        ? 'the answer has no result object (is the rule undefined for this input?)'
        : `${where}: ${issue.code === 'invalid_value' ? 'not one of allow, deny, require_approval, repair' : issue.message}`,
    };
  }
  const result = parsed.data.result;
  const verdict = result.decision;
  const reasons: EngineAnswer['reasons'] = result.reasons
    ? result.reasons.map((r) => ({
        code: r.code,
        effect: r.effect ?? verdict,
        message: r.message,
        ...(r.details === undefined ? {} : { details: r.details }),
      }))
    : [
        {
          code: result.code ?? `EXTERNAL_${verdict.toUpperCase()}`,
          effect: verdict,
          message: result.reason ?? `the external policy engine answered ${verdict}`,
        },
      ];
  return {
    ok: true,
    answer: {
      verdict,
      reasons,
      repair: result.repair ?? null,
      ...(result.authorized_identity === undefined
        ? {}
        : { authorized_identity: result.authorized_identity }),
    },
  };
}
