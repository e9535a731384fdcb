import { type CheckResult, isEvidenceRef, type JsonValue } from '@vouch/verifier-sdk';
import { z } from 'zod';
import { isJsonPointer } from './json-pointer';
import { fillTemplate, PAYLOAD_PATH, placeholdersOf, readsObservation, type TemplateScope } from './template';

/**
 * Evidence is bound to the proposal (docs/verification.md, "Evidence is bound"). A built-in
 * reads identifiers from the approved proposal (`target`, `arguments`, `params`, `proposal`),
 * which the approver saw and the payload hash binds. The tool's result (`observation.*`) is
 * what the gateway posted: a lookup built from it reads whatever the gateway names, say
 * another order's refund of the same amount. So a lookup may read the result only when the
 * options also `bind` what is read to the proposal (a field of it must equal a payload value:
 * the refund must belong to the order the proposal names) and name it (`evidenceRef`), so the
 * ledger can tell when the same refund is offered for a second proposal.
 */

const payloadPath = z
  .string()
  .regex(PAYLOAD_PATH, 'must be a path into the approved proposal like target.id or arguments.order_id');

/** A field of the JSON that was read that must equal a value of the approved proposal. */
export const jsonBindingSchema = z
  .object({
    pointer: z.string().refine(isJsonPointer, 'must be a JSON Pointer (RFC 6901), e.g. /order_id'),
    from: payloadPath,
  })
  .strict();

/** A column every row read must hold with a value of the approved proposal. */
export const columnBindingSchema = z.object({ column: z.string().min(1), from: payloadPath }).strict();

const EVIDENCE_REF_PATH = /^(result|target|arguments|params|proposal)(\.[A-Za-z0-9_-]+)*$/;

/**
 * `evidenceRef`: a template naming what the check found (`refund:{result.id}`), over `result`
 * (what was read) and the approved proposal; never `observation`, so the gateway cannot give
 * one refund two names.
 */
export const evidenceRefSchema = z
  .string()
  .min(1)
  .max(256)
  .superRefine((template, ctx) => {
    const placeholders = placeholdersOf(template);
    if (placeholders.length === 0) {
      ctx.addIssue({
        code: 'custom',
        message: 'must name what was read with a placeholder, e.g. refund:{result.id}',
      });
    }
    for (const path of placeholders) {
      if (!EVIDENCE_REF_PATH.test(path)) {
        ctx.addIssue({
          code: 'custom',
          message: `placeholder {${path}} must read result (what was read) or the approved proposal, e.g. {result.id}`,
        });
        return;
      }
    }
  });

/** The option fields of a built-in that can bind a lookup to the proposal. */
export function bindingOptions<B extends z.ZodType>(binding: B) {
  return {
    /** Fields of what was read that must equal values of the approved proposal. */
    bind: z.array(binding).min(1).optional(),
    /** Names what the check found, for the ledger's one-proof-one-proposal rule. */
    evidenceRef: evidenceRefSchema.optional(),
  };
}

/** A place in the options that builds a lookup, and the scope paths it reads. */
export interface Lookup {
  path: (string | number)[];
  reads: readonly string[];
}

/**
 * Refuse, at load, a lookup that reads the tool's result unless the options `bind` what is
 * read to the proposal and name it with `evidenceRef`.
 */
export function requireBoundLookups(
  options: { bind?: readonly unknown[] | undefined; evidenceRef?: string | undefined },
  lookups: readonly Lookup[],
  ctx: z.RefinementCtx,
): void {
  for (const lookup of lookups) {
    const read = lookup.reads.find(readsObservation);
    if (read === undefined) continue;
    const missing = [
      options.bind === undefined ? '`bind`' : null,
      options.evidenceRef === undefined ? '`evidenceRef`' : null,
    ].filter((m) => m !== null);
    if (missing.length === 0) return;
    ctx.addIssue({
      code: 'custom',
      path: lookup.path,
      message: `reads ${read}, which the gateway posted: read identifiers from target, arguments or params, or give ${missing.join(' and ')} to bind what is read to the proposal (e.g. "bind": [{ "pointer": "/order_id", "from": "arguments.order_id" }], "evidenceRef": "refund:{result.id}")`,
    });
    return;
  }
}

/** Refuse, at load, a lookup of a built-in that cannot bind one (prometheus, file) reading the tool's result. */
export function requirePayloadLookups(lookups: readonly Lookup[], ctx: z.RefinementCtx): void {
  for (const lookup of lookups) {
    const read = lookup.reads.find(readsObservation);
    if (read === undefined) continue;
    ctx.addIssue({
      code: 'custom',
      path: lookup.path,
      message: `reads ${read}, which the gateway posted: read identifiers from target, arguments or params`,
    });
    return;
  }
}

/**
 * The check with its `evidence_ref` filled from `template` over what was read and the
 * proposal. A pass whose reference cannot be named is inconclusive (`EVIDENCE_REF_MISSING`):
 * the configuration says what proves the postcondition is named, and an unnamed one could
 * prove any number of proposals. Any other verdict keeps its status, without a reference.
 */
export function withEvidenceRef(
  check: CheckResult,
  template: string | undefined,
  input: { scope: TemplateScope; result: unknown },
): CheckResult {
  if (template === undefined) return check;
  const filled = fillTemplate(
    template,
    { ...input.scope, result: input.result as JsonValue } as TemplateScope,
    (v) => v,
  );
  if (filled.ok && isEvidenceRef(filled.value)) return { ...check, evidence_ref: filled.value };
  if (check.status !== 'pass') return check;
  const { reason: _none, ...rest } = check;
  return {
    ...rest,
    status: 'inconclusive',
    reason: 'EVIDENCE_REF_MISSING',
    message: `cannot name the evidence (${template}): ${filled.ok ? 'not a valid reference' : `{${filled.problem.path}} is missing or not a plain value`}`,
  };
}
