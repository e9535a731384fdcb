import { jsonObjectSchema, reasonEffectSchema, verdictSchema } from '@vouch/records';
import { z } from 'zod';
import { isApiError } from '../errors';
import { parseJsonBody } from '../http/parse-json';

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

/** How deep an answer may nest: a decision's `repair` and reason `details` are small objects. */
const ANSWER_MAX_DEPTH = 32;

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
    // The decision is recorded and hashed: read it as strictly as a request body. Above all,
    // `{"decision":"deny","decision":"allow"}` is refused, not read as the last key's allow.
    json = parseJsonBody(text, { maxDepth: ANSWER_MAX_DEPTH });
  } catch (error) {
    return { ok: false, message: unreadableAnswer(error) };
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

/** Why the answer's text was refused before it was read, in words that quote no value of it. */
function unreadableAnswer(error: unknown): string {
  if (!isApiError(error)) return 'the answer is not JSON that can be recorded (a lone surrogate)';
  switch (error.code) {
    case 'DUPLICATE_KEY': {
      const { key } = error.details as { key: string };
      return `the key ${JSON.stringify(key)} appears twice in one object: which of the two is the answer is ambiguous`;
    }
    case 'NESTING_TOO_DEEP':
      return `the answer nests deeper than ${ANSWER_MAX_DEPTH} levels`;
    case 'NUMBER_NOT_EXACT':
      return 'the answer holds a number that cannot be recorded exactly';
    case 'NUL_CHARACTER':
      return 'the answer holds U+0000, which cannot be recorded';
    default:
      return 'the answer is not JSON';
  }
}
