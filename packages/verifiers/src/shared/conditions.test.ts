import { exampleObservation, exampleProposal } from '@vouch/verifier-sdk/testing';
import { describe, expect, it } from 'vitest';
import { conditionProblem, evaluateConditions } from './conditions';
import { templateScope } from './template';

const scope = templateScope({
  proposal: exampleProposal({ arguments: { amount: 1250 } }),
  postcondition: { name: 'refund.recorded' },
  observation: exampleObservation({ result: { refund_id: 're_1' } }),
});
const evaluate = (
  options: { successCondition?: string; failureCondition?: string },
  result: unknown = { status: 'succeeded', amount: 1250 },
) => evaluateConditions(options, { result, scope, extras: { status: 200 } });

describe('conditionProblem', () => {
  describe('when the expression is valid CEL over the known variables', () => {
    it.each([
      'result.status == "succeeded" && result.amount == arguments.amount',
      'status == 200',
      'result.items.exists(i, i.id == params.refund_id)',
      'result.?missing.orValue(0) == 0',
    ])('accepts %s', (source) => {
      expect(conditionProblem(source, ['status'])).toBeNull();
    });
  });

  describe('when the expression cannot be used', () => {
    it.each([
      ['a syntax error', 'result.amount == ', 'line 1, column 18'],
      ['a syntax error on a later line', 'result.amount == 1 &&\n  (', 'line 2, column 4'],
      ['an unknown variable', 'env.HOME == "x"', 'line 1, column 1'],
      ['a non-bool result', 'result.amount + 1', 'must evaluate to a bool'],
      [
        "a read of the tool's result",
        'result.amount == arguments.amount || observation.result.forced',
        'may not read observation',
      ],
    ])('names the position of %s', (_label, source, where) => {
      expect(conditionProblem(source, ['status'])).toContain(where);
    });
  });
});

describe('evaluateConditions (Argo semantics)', () => {
  describe('when no condition is configured', () => {
    it('gives no verdict', () => {
      expect(evaluate({}).verdict).toBeNull();
    });
  });

  describe('when only a successCondition is given', () => {
    it('passes when true and fails when false', () => {
      expect(evaluate({ successCondition: 'result.amount == arguments.amount' }).verdict).toBe('pass');
      expect(evaluate({ successCondition: 'result.amount > 2000' }).verdict).toBe('fail');
    });
  });

  describe('when only a failureCondition is given', () => {
    it('fails when true and passes when false', () => {
      expect(evaluate({ failureCondition: 'result.status == "failed"' }).verdict).toBe('pass');
      expect(evaluate({ failureCondition: 'result.status == "succeeded"' }).verdict).toBe('fail');
    });
  });

  describe('when both are given', () => {
    it('fails on a true failureCondition even if the successCondition holds', () => {
      expect(evaluate({ successCondition: 'true', failureCondition: 'status == 200' }).verdict).toBe('fail');
    });
    it('is inconclusive when neither holds', () => {
      expect(evaluate({ successCondition: 'false', failureCondition: 'false' })).toMatchObject({
        verdict: 'inconclusive',
        reason: 'CONDITIONS_UNDECIDED',
      });
    });
  });

  describe('when a condition cannot be evaluated', () => {
    it.each([
      ['a missing key', { successCondition: 'result.settled_at == "x"' }],
      ['a failureCondition over a missing key', { failureCondition: 'result.error.code == 1' }],
      ['a division by zero', { successCondition: 'result.amount / 0 == 1' }],
    ])('is inconclusive (CONDITION_ERROR) on %s, never fail', (_label, options) => {
      const outcome = evaluate(options);
      expect(outcome).toMatchObject({ verdict: 'inconclusive', reason: 'CONDITION_ERROR' });
    });

    it('is inconclusive when a dyn expression yields a non-bool', () => {
      expect(evaluate({ successCondition: 'result.status' })).toMatchObject({
        verdict: 'inconclusive',
        reason: 'CONDITION_ERROR',
      });
    });
  });

  describe('when the result has keys that are special in JavaScript', () => {
    it('treats __proto__ as a plain key', () => {
      const result = JSON.parse('{"__proto__": {"admin": true}}');
      expect(evaluate({ successCondition: 'has(result.admin)' }, result).verdict).toBe('fail');
      expect(evaluate({ successCondition: 'result["__proto__"].admin' }, result).verdict).toBe('pass');
    });
  });

  describe('when a condition holds', () => {
    it('records each expression and its value as evidence', () => {
      expect(evaluate({ successCondition: 'true', failureCondition: 'false' }).evidence).toEqual({
        failureCondition: { expression: 'false', value: false },
        successCondition: { expression: 'true', value: true },
      });
    });
  });
});
