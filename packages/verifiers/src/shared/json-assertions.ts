import { isDeepStrictEqual } from 'node:util';
import type { JsonValue } from '@vouch/verifier-sdk';
import { z } from 'zod';
import { getByPointer, isJsonPointer } from './json-pointer';
import { readScope, SCOPE_PATH, type TemplateScope } from './template';

const pointer = z.string().refine(isJsonPointer, 'must be a JSON Pointer (RFC 6901), e.g. /data/status');
// An expected value may read the tool's result: comparing the source with the claim checks the
// claim (a read tool's answer), and the gateway cannot make a false claim equal the source.
// What is looked up is another matter (evidence-binding.ts).
const scopePath = z
  .string()
  .regex(SCOPE_PATH, 'must be a path like arguments.amount, params.refund_id or observation.result.id');
const pattern = z.string().refine((source) => {
  try {
    new RegExp(source, 'u');
    return true;
  } catch {
    return false;
  }
}, 'must be a valid regular expression');

/**
 * One assertion on a JSON document, addressed by JSON Pointer. The expected value is either a
 * literal `value` or `from`, a path into the proposal (`arguments.amount`) or the observation.
 */
export const jsonAssertionSchema = z.discriminatedUnion('op', [
  z.object({ op: z.literal('exists'), pointer }).strict(),
  z.object({ op: z.literal('absent'), pointer }).strict(),
  z
    .object({ op: z.literal('equals'), pointer, value: z.json().optional(), from: scopePath.optional() })
    .strict(),
  z
    .object({
      op: z.literal('matches'),
      pointer,
      pattern,
      flags: z
        .string()
        .regex(/^[ims]*$/)
        .optional(),
    })
    .strict(),
  z
    .object({
      op: z.enum(['gt', 'gte', 'lt', 'lte']),
      pointer,
      value: z.number().optional(),
      from: scopePath.optional(),
    })
    .strict(),
]);

/** An assertion on a JSON document. */
export type JsonAssertion = z.infer<typeof jsonAssertionSchema>;

/** Indexes of `equals` / comparison assertions that do not give exactly one of `value` and `from`. */
export function assertionsWithoutOneExpected(assertions: readonly JsonAssertion[]): number[] {
  return assertions.flatMap((assertion, index) => {
    if (assertion.op === 'exists' || assertion.op === 'absent' || assertion.op === 'matches') return [];
    const given = Number(assertion.value !== undefined) + Number(assertion.from !== undefined);
    return given === 1 ? [] : [index];
  });
}

/** How one assertion came out: `ok: null` when it could not be decided (a `from` value is missing). */
export interface AssertionOutcome {
  op: JsonAssertion['op'];
  pointer: string;
  ok: boolean | null;
  found: boolean;
  observed: JsonValue;
  expected: JsonValue;
  message: string;
}

/** Evaluate `assertion` against `document`; `document` is parsed JSON from the source. */
export function evaluateJsonAssertion(
  document: unknown,
  assertion: JsonAssertion,
  scope: TemplateScope,
): AssertionOutcome {
  const lookup = getByPointer(document, assertion.pointer);
  const observed = lookup.found ? (lookup.value as JsonValue) : null;
  const base = { op: assertion.op, pointer: assertion.pointer, found: lookup.found, observed };
  const at = assertion.pointer === '' ? 'the document' : assertion.pointer;
  switch (assertion.op) {
    case 'exists':
      return {
        ...base,
        ok: lookup.found,
        expected: true,
        message: lookup.found ? `${at} exists` : `${at} is missing`,
      };
    case 'absent':
      return {
        ...base,
        ok: !lookup.found,
        expected: false,
        message: lookup.found ? `${at} is present` : `${at} is absent`,
      };
    case 'matches': {
      const ok =
        typeof observed === 'string' &&
        new RegExp(assertion.pattern, `u${assertion.flags ?? ''}`).test(observed);
      return {
        ...base,
        ok,
        expected: assertion.pattern,
        message: ok ? `${at} matches` : `${at} does not match`,
      };
    }
    default: {
      const expected = expectedValue(assertion, scope);
      if (!expected.found) {
        return { ...base, ok: null, expected: null, message: `${assertion.from} is not in the proposal` };
      }
      if (!lookup.found) return { ...base, ok: false, expected: expected.value, message: `${at} is missing` };
      const ok =
        assertion.op === 'equals'
          ? jsonEquals(observed, expected.value)
          : compare(assertion.op, observed, expected.value);
      return {
        ...base,
        ok,
        expected: expected.value,
        message: `${at} ${ok ? 'satisfies' : 'fails'} ${assertion.op}`,
      };
    }
  }
}

function expectedValue(
  assertion: { value?: JsonValue | undefined; from?: string | undefined },
  scope: TemplateScope,
): { found: true; value: JsonValue } | { found: false } {
  if (assertion.from !== undefined) return readScope(scope, assertion.from);
  return { found: true, value: assertion.value ?? null };
}

/** JSON equality; a number and a decimal string that denote the same number are equal (databases often send numerics as text). */
export function jsonEquals(observed: JsonValue, expected: JsonValue): boolean {
  if (isDeepStrictEqual(observed, expected)) return true;
  const a = asNumber(observed);
  const b = asNumber(expected);
  return (
    (typeof observed === 'number' || typeof expected === 'number') && a !== null && b !== null && a === b
  );
}

function compare(op: 'gt' | 'gte' | 'lt' | 'lte', observed: JsonValue, expected: JsonValue): boolean {
  const a = asNumber(observed);
  const b = asNumber(expected);
  if (a === null || b === null) return false;
  return op === 'gt' ? a > b : op === 'gte' ? a >= b : op === 'lt' ? a < b : a <= b;
}

const DECIMAL = /^-?(0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?$/;

function asNumber(value: JsonValue): number | null {
  if (typeof value === 'number') return value;
  if (typeof value === 'string' && DECIMAL.test(value)) return Number(value);
  return null;
}

/** The verdict over several outcomes: any false fails, else any undecided is inconclusive, else pass. */
export function verdictOf(outcomes: readonly AssertionOutcome[]): 'pass' | 'fail' | 'inconclusive' {
  if (outcomes.some((o) => o.ok === false)) return 'fail';
  if (outcomes.some((o) => o.ok === null)) return 'inconclusive';
  return 'pass';
}
