import { z } from 'zod';
import { conditionOptions } from '../shared/conditions';
import { bindingOptions, columnBindingSchema, requireBoundLookups } from '../shared/evidence-binding';
import { SCOPE_PATH } from '../shared/template';
import { highestPlaceholder, readOnlyProblem } from './read-only-statement';

const scopePath = z.string().regex(SCOPE_PATH, 'must be a path like target.id or arguments.refund_id');
const scalar = z.union([z.string(), z.number(), z.boolean(), z.null()]);

/** A bind parameter: a literal, or a value taken from the proposal / observation. Never spliced into SQL. */
const paramSchema = z.union([z.object({ value: scalar }).strict(), z.object({ from: scopePath }).strict()]);

const expectSchema = z.discriminatedUnion('op', [
  /** At least one row. */
  z.object({ op: z.literal('exists') }).strict(),
  /** No row. */
  z.object({ op: z.literal('absent') }).strict(),
  /** The number of rows is `equals`, or within `min`..`max`. */
  z
    .object({
      op: z.literal('rowCount'),
      equals: z.number().int().min(0).optional(),
      min: z.number().int().min(0).optional(),
      max: z.number().int().min(0).optional(),
    })
    .strict(),
  /** At least one row, and `column` equals the expected value in every row. */
  z
    .object({
      op: z.literal('columnEquals'),
      column: z.string().min(1),
      value: scalar.optional(),
      from: scopePath.optional(),
    })
    .strict(),
]);

/** Options of the `sql` verifier. */
export const sqlOptionsSchema = z
  .object({
    /** One read-only statement with `$1`, `$2`, ... placeholders. */
    query: z.string().min(1),
    /** The values for `$1`, `$2`, ..., in order. */
    params: z.array(paramSchema).default([]),
    /** A built-in assertion on the rows; optional when a condition is given. */
    expect: expectSchema.optional(),
    /** CEL over `result` (the rows read, at most maxRows), `rowCount`, `truncated` and the proposal. */
    ...conditionOptions(['rowCount', 'truncated']),
    /** Name recorded as the check's source; defaults to the connection's name. */
    source: z.string().min(1).optional(),
    /** Upper bound for the statement; defaults to 80% of the verifier's deadline so Postgres gives up first. */
    statementTimeoutMs: z.number().int().min(1).optional(),
    /** Rows read at most (default 100). */
    maxRows: z.number().int().min(1).max(10_000).default(100),
    /**
     * `bind`: columns every row read must hold with a value of the approved proposal (required,
     * with `evidenceRef`, when a param reads `observation`); `evidenceRef`: what the check found,
     * e.g. `refund:{result.0.refund_id}`.
     */
    ...bindingOptions(columnBindingSchema),
  })
  .strict()
  .superRefine((options, ctx) => {
    const problem = readOnlyProblem(options.query);
    if (problem !== null) {
      ctx.addIssue({ code: 'custom', message: `the query ${problem}`, path: ['query'] });
    }
    requireBoundLookups(
      options,
      options.params.map((param, index) => ({
        path: ['params', index, 'from'],
        reads: 'from' in param ? [param.from] : [],
      })),
      ctx,
    );
    const highest = highestPlaceholder(options.query);
    if (highest !== options.params.length) {
      ctx.addIssue({
        code: 'custom',
        message: `the query uses $1..$${highest} but ${options.params.length} params are given`,
        path: ['params'],
      });
    }
    const expect = options.expect;
    if (expect === undefined) {
      if (options.successCondition === undefined && options.failureCondition === undefined) {
        ctx.addIssue({
          code: 'custom',
          message: 'give expect, successCondition or failureCondition',
          path: ['expect'],
        });
      }
      return;
    }
    if (
      expect.op === 'rowCount' &&
      expect.equals === undefined &&
      expect.min === undefined &&
      expect.max === undefined
    ) {
      ctx.addIssue({ code: 'custom', message: 'give equals, min or max', path: ['expect'] });
    }
    if (
      expect.op === 'rowCount' &&
      expect.equals !== undefined &&
      (expect.min !== undefined || expect.max !== undefined)
    ) {
      ctx.addIssue({ code: 'custom', message: 'give equals, or min/max, not both', path: ['expect'] });
    }
    if (
      expect.op === 'columnEquals' &&
      Number(expect.value !== undefined) + Number(expect.from !== undefined) !== 1
    ) {
      ctx.addIssue({
        code: 'custom',
        message: 'give exactly one of value and from',
        path: ['expect', 'value'],
      });
    }
  });

/** Validated `sql` options. */
export type SqlOptions = z.infer<typeof sqlOptionsSchema>;
