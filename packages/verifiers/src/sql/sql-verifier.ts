import {
  type CheckResult,
  defineVerifier,
  type JsonValue,
  type SqlParam,
  VERIFIER_API_VERSION,
} from '@vouch/verifier-sdk';
import { checkResultOf } from '../shared/check-result';
import { combineVerdicts, evaluateConditions } from '../shared/conditions';
import { withEvidenceRef } from '../shared/evidence-binding';
import { jsonEquals } from '../shared/json-assertions';
import { readScope, type TemplateScope, templateScope } from '../shared/template';
import { type SqlOptions, sqlOptionsSchema } from './sql-options';

/**
 * `sql`: run one parametrized, read-only query on a named connection (the host's `sql` grant)
 * and assert that a row exists, is absent, how many rows there are, or that a column equals a
 * value. Values come only as bind parameters; the query text is configuration, never built
 * from the proposal.
 *
 * @example
 * { query: 'select amount from refunds where payment_id = $1 and refund_id = $2',
 *   params: [{ from: 'target.id' }, { from: 'observation.result.refund_id' }],
 *   expect: { op: 'columnEquals', column: 'amount', from: 'arguments.amount' } }
 */
export const sqlVerifier = defineVerifier({
  id: 'sql',
  version: '0.1.0',
  apiVersion: VERIFIER_API_VERSION,
  description: 'Runs a parametrized read-only SQL query on a named connection and asserts on the rows.',
  handles: ['sql', 'sql.*'],
  phase: ['post', 'pre'],
  options: sqlOptionsSchema,
  timeoutMs: 5_000,
  requires: ['sql'],
  async check(ctx): Promise<CheckResult> {
    const { options, postcondition, signal } = ctx;
    const sql = ctx.sql!;
    const source = options.source ?? sql.name;
    const scope = templateScope(ctx);
    const result = checkResultOf(postcondition.name, source);

    const params: SqlParam[] = [];
    for (const [index, param] of options.params.entries()) {
      if ('value' in param) {
        params.push(param.value);
        continue;
      }
      const found = readScope(scope, param.from);
      const value = found.found ? found.value : undefined;
      if (value === undefined || (value !== null && typeof value === 'object')) {
        return result('inconclusive', {
          reason: found.found ? 'TEMPLATE_VALUE_INVALID' : 'TEMPLATE_VALUE_MISSING',
          evidence: { param: index + 1, from: param.from },
          message: `cannot bind $${index + 1}: ${param.from} is ${found.found ? 'not a plain value' : 'missing'}`,
        });
      }
      params.push(value);
    }

    const statementTimeoutMs = Math.min(
      options.statementTimeoutMs ?? Number.POSITIVE_INFINITY,
      Math.floor(ctx.timeoutMs * 0.8),
    );
    // One more than maxRows, so "more than maxRows" can be told apart from "exactly maxRows".
    const rows = await sql.query(options.query, params, {
      signal,
      timeoutMs: statementTimeoutMs,
      maxRows: options.maxRows + 1,
    });
    const truncated = rows.length > options.maxRows;
    const evidence = {
      connection: sql.name,
      query: options.query,
      params,
      rows: Math.min(rows.length, options.maxRows),
      truncated,
    };
    const count = rows.length;
    const read = rows.slice(0, options.maxRows);
    const bound = (checked: CheckResult) =>
      withEvidenceRef(withColumnBindings(checked, read, options.bind, scope), options.evidenceRef, {
        scope,
        result: read as JsonValue,
      });
    const asserted = options.expect === undefined ? null : checkExpect(options.expect);
    const conditions = evaluateConditions(options, {
      result: read,
      scope,
      extras: { rowCount: Math.min(count, options.maxRows), truncated },
    });
    if (conditions.verdict === null) return bound(asserted!);
    const verdict = combineVerdicts(asserted?.status ?? null, conditions.verdict);
    const reason =
      verdict !== 'inconclusive'
        ? undefined
        : asserted?.status === 'inconclusive'
          ? asserted.reason
          : conditions.reason;
    const messages = [asserted?.message, conditions.verdict === 'pass' ? undefined : conditions.message];
    const { reason: _dropped, ...base } = asserted ?? result(verdict, { observed: { rows: count } });
    return bound({
      ...base,
      status: verdict,
      evidence: { ...evidence, ...(asserted?.evidence ?? {}), conditions: conditions.evidence },
      message: messages.filter((m) => m !== undefined).join('; ') || conditions.message,
      ...(reason !== undefined ? { reason } : {}),
    });

    function checkExpect(expect: NonNullable<typeof options.expect>): CheckResult {
      switch (expect.op) {
        case 'exists':
          return result(count > 0 ? 'pass' : 'fail', {
            observed: { rows: count },
            expected: { rows: '>= 1' },
            evidence,
            message: count > 0 ? 'the row exists' : 'no matching row',
          });
        case 'absent':
          return result(count === 0 ? 'pass' : 'fail', {
            observed: { rows: count },
            expected: { rows: 0 },
            evidence,
            message: count === 0 ? 'no matching row, as expected' : 'a matching row exists',
          });
        case 'rowCount': {
          if (truncated && expect.max === undefined && expect.equals === undefined) {
            // Only a lower bound: more rows than we read is still >= min as long as min <= maxRows.
            const ok = (expect.min ?? 0) <= count;
            return result(ok ? 'pass' : 'fail', {
              observed: { rows: `> ${options.maxRows}` },
              expected: { ...expect },
              evidence,
            });
          }
          const ok =
            expect.equals !== undefined
              ? count === expect.equals
              : count >= (expect.min ?? 0) && count <= (expect.max ?? Number.POSITIVE_INFINITY);
          return result(ok ? 'pass' : 'fail', {
            observed: { rows: truncated ? `> ${options.maxRows}` : count },
            expected: { ...expect },
            evidence,
            message: ok
              ? 'the row count is as expected'
              : `unexpected row count ${truncated ? `> ${options.maxRows}` : count}`,
          });
        }
        case 'columnEquals': {
          const wanted =
            expect.from !== undefined
              ? readScope(scope, expect.from)
              : { found: true as const, value: expect.value ?? null };
          if (!wanted.found) {
            return result('inconclusive', {
              reason: 'TEMPLATE_VALUE_MISSING',
              evidence: { ...evidence, from: expect.from ?? null },
              message: `${expect.from} is missing`,
            });
          }
          if (count === 0) {
            return result('fail', {
              observed: { rows: 0 },
              expected: { [expect.column]: wanted.value },
              evidence,
              message: 'no matching row',
            });
          }
          const read = rows.slice(0, options.maxRows);
          if (read.some((row) => !Object.hasOwn(row, expect.column))) {
            return result('inconclusive', {
              reason: 'COLUMN_MISSING',
              evidence: { ...evidence, column: expect.column },
              message: `the query returns no column "${expect.column}"`,
            });
          }
          const values = read.map((row) => row[expect.column] as JsonValue);
          const ok = values.every((value) => jsonEquals(value, wanted.value));
          if (ok && truncated) {
            // "Every row" cannot be claimed from the first maxRows rows.
            return result('inconclusive', {
              reason: 'TOO_MANY_ROWS',
              evidence,
              message: `more than ${options.maxRows} rows; narrow the query`,
            });
          }
          const distinct = [...new Map(values.map((v) => [JSON.stringify(v), v])).values()].slice(0, 10);
          return result(ok ? 'pass' : 'fail', {
            observed: { [expect.column]: distinct.length === 1 ? distinct[0]! : distinct },
            expected: { [expect.column]: wanted.value },
            evidence,
            message: ok ? `${expect.column} is as expected` : `${expect.column} differs`,
          });
        }
      }
    }
  },
});

/**
 * The check with the configured bindings applied: every row read must hold each bound column
 * with the proposal's value (the row the tool's result named must be this proposal's). A row
 * with another value fails the check; a missing column or proposal value makes a pass
 * inconclusive. No binding, or no row: the check as it was.
 */
function withColumnBindings(
  check: CheckResult,
  rows: readonly Record<string, unknown>[],
  bind: SqlOptions['bind'],
  scope: TemplateScope,
): CheckResult {
  if (bind === undefined || rows.length === 0 || check.status === 'fail') return check;
  const outcomes = bind.map((binding) => {
    const wanted = readScope(scope, binding.from);
    if (!wanted.found) return { ...binding, ok: null, reason: 'TEMPLATE_VALUE_MISSING' };
    if (rows.some((row) => !Object.hasOwn(row, binding.column))) {
      return { ...binding, ok: null, reason: 'COLUMN_MISSING' };
    }
    const ok = rows.every((row) => jsonEquals(row[binding.column] as JsonValue, wanted.value));
    return { ...binding, ok, expected: wanted.value };
  });
  const evidence = { ...(check.evidence ?? {}), bindings: outcomes as unknown as JsonValue };
  const broken = outcomes.find((o) => o.ok === false);
  const { reason: _reason, ...rest } = check;
  if (broken) {
    return {
      ...rest,
      status: 'fail',
      evidence,
      message: `a row read belongs to another proposal: ${broken.column} is not ${broken.from}`,
    };
  }
  const undecided = outcomes.find((o) => o.ok === null);
  if (undecided && check.status === 'pass') {
    return {
      ...rest,
      status: 'inconclusive',
      reason: undecided.reason!,
      evidence,
      message: `cannot bind the rows read to the proposal: ${undecided.column} or ${undecided.from} is missing`,
    };
  }
  return { ...check, evidence };
}
