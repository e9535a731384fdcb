import { Environment } from '@marcbachmann/cel-js';
import { VerifierError } from './errors';
import type { JsonObject } from './json';

/**
 * A postcondition written as a CEL (Common Expression Language) condition, for plugin authors.
 * CEL is not Turing-complete (no recursion, no unbounded loops), has no side effects and sees
 * nothing but the variables below, so a condition always terminates and cannot reach a source
 * on its own: the verifier reads the source, the condition only judges what was read.
 */

/** The variables a condition reads. */
export const CEL_CONDITION_VARIABLES = ['observed', 'params', 'proposal', 'observation'] as const;

/** What a condition is evaluated against. */
export interface CelConditionInput {
  /** What the verifier read from its source (JSON). */
  observed: unknown;
  /** The postcondition's `params` (default `{}`). */
  params?: JsonObject | undefined;
  /** The proposal being verified. */
  proposal?: unknown;
  /** The tool's observation; `null` in the `pre` phase. */
  observation?: unknown;
}

/** Why a condition gave no verdict. */
export type CelConditionReason = 'CONDITION_ERROR' | 'CONDITION_NOT_BOOLEAN';

/**
 * The fields of a check result a condition decides: spread them into the result. A true
 * condition is `pass`, a false one `fail`; one that cannot be evaluated is `inconclusive`
 * with a reason, never `fail`: the expression broke, not the postcondition.
 */
export type CelConditionVerdict =
  | {
      status: 'pass' | 'fail';
      message: string;
      evidence: { condition: { expression: string; value: boolean } };
    }
  | {
      status: 'inconclusive';
      reason: CelConditionReason;
      message: string;
      evidence: { condition: { expression: string; error: string } };
    };

/** A compiled condition. */
export interface CelCondition {
  readonly expression: string;
  /** Evaluate against what was read; never throws. */
  evaluate(input: CelConditionInput): CelConditionVerdict;
}

const MAX_EXPRESSION_LENGTH = 4096;

const environment = CEL_CONDITION_VARIABLES.reduce(
  (env, name) => env.registerVariable(name, 'dyn'),
  new Environment({
    enableOptionalTypes: true,
    limits: {
      maxAstNodes: 2000,
      maxDepth: 50,
      maxListElements: 200,
      maxMapEntries: 200,
      maxCallArguments: 16,
    },
  }),
);

/**
 * Compile a CEL condition once, at definition time: a syntax error, an unknown variable or an
 * expression that cannot be a bool throws a `VerifierError` with code `CONDITION_INVALID` and
 * the 1-based line and column, so a broken plugin fails when it loads, not on every check.
 * Variables: `observed` (what the verifier read), `params` (the postcondition's params),
 * `proposal` and `observation` (the records, as JSON). JSON integers are CEL `int`, other
 * numbers `double`; use `has(observed.x)` or `observed.?x.orValue(d)` for optional fields.
 *
 * @example
 * const paid = celCondition('observed.state == "paid" && observed.amount == params.amount');
 * // in check(): read the source, then
 * return { name: postcondition.name, source: 'payments-api', observed: invoice,
 *   ...paid.evaluate({ observed: invoice, params: postcondition.params, proposal, observation }) };
 */
export function celCondition(expression: string): CelCondition {
  const problem = compileProblem(expression);
  if (problem !== null) {
    throw new VerifierError('CONDITION_INVALID', `not a valid CEL condition: ${problem}`, {
      evidence: { expression },
    });
  }
  const run = environment.parse(expression);
  return Object.freeze({
    expression,
    evaluate(input: CelConditionInput): CelConditionVerdict {
      const context = {
        observed: jsonToCel(input.observed),
        params: jsonToCel(input.params ?? {}),
        proposal: jsonToCel(input.proposal ?? null),
        observation: jsonToCel(input.observation ?? null),
      };
      let value: unknown;
      try {
        value = run(context);
      } catch (error) {
        return undecided(expression, 'CONDITION_ERROR', summary(error));
      }
      if (typeof value !== 'boolean') {
        return undecided(expression, 'CONDITION_NOT_BOOLEAN', `evaluated to ${celTypeOf(value)}, not a bool`);
      }
      return {
        status: value ? 'pass' : 'fail',
        message: `${expression} is ${value}`,
        evidence: { condition: { expression, value } },
      };
    },
  });
}

function undecided(expression: string, reason: CelConditionReason, error: string): CelConditionVerdict {
  return {
    status: 'inconclusive',
    reason,
    message: `the condition could not be evaluated: ${error}`,
    evidence: { condition: { expression, error } },
  };
}

/** Why `expression` cannot be a condition, with its position; null when it compiles to a bool. */
function compileProblem(expression: string): string | null {
  if (typeof expression !== 'string' || expression.trim() === '') return 'the expression is empty';
  if (expression.length > MAX_EXPRESSION_LENGTH) return `longer than ${MAX_EXPRESSION_LENGTH} characters`;
  try {
    environment.parse(expression);
  } catch (error) {
    return `${position(expression, (error as { range?: { start: number } }).range?.start)}: ${summary(error)}`;
  }
  const checked = environment.check(expression);
  if (!checked.valid) {
    return `${position(expression, checked.error?.range?.start)}: ${summary(checked.error)}`;
  }
  if (checked.type !== 'bool' && checked.type !== 'dyn') {
    return `line 1, column 1: must evaluate to a bool, not ${checked.type}`;
  }
  return null;
}

function position(expression: string, offset: number | undefined): string {
  const lines = expression.slice(0, offset ?? 0).split('\n');
  return `line ${lines.length}, column ${lines.at(-1)!.length + 1}`;
}

function summary(error: unknown): string {
  const e = error as { summary?: string; message?: string } | undefined;
  return e?.summary ?? (e?.message ?? 'invalid expression').split('\n')[0]!;
}

function celTypeOf(value: unknown): string {
  if (value === null) return 'null';
  if (typeof value === 'bigint') return 'an int';
  if (typeof value === 'number') return 'a double';
  if (typeof value === 'string') return 'a string';
  if (Array.isArray(value)) return 'a list';
  return typeof value === 'object' ? 'a map' : typeof value;
}

/**
 * JSON into CEL values: integers become CEL `int` (BigInt), so `observed.amount == params.amount`
 * compares as a reader expects; other numbers stay `double`. Objects are rebuilt as own data
 * properties, so a key like `__proto__` read from a source is just a key.
 *
 * @example
 * jsonToCel({ amount: 5, rate: 0.5 }); // { amount: 5n, rate: 0.5 }
 */
export function jsonToCel(value: unknown): unknown {
  if (typeof value === 'number') return Number.isSafeInteger(value) ? BigInt(value) : value;
  if (Array.isArray(value)) return value.map(jsonToCel);
  if (typeof value === 'object' && value !== null) {
    const out: Record<string, unknown> = {};
    for (const [key, item] of Object.entries(value)) {
      Object.defineProperty(out, key, { value: jsonToCel(item), enumerable: true, writable: true });
    }
    return out;
  }
  return value;
}
