import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { celCondition } from './cel-condition';
import { isVerifierError } from './errors';
import type { JsonValue } from './json';
import { exampleObservation, exampleProposal } from './testing';

const proposal = exampleProposal({
  target: { kind: 'invoice', id: 'inv-7', env: 'test' },
  arguments: { amount: 1250 },
});
const observation = exampleObservation();

describe('celCondition', () => {
  describe('when the expression does not compile', () => {
    it.each([
      ['a syntax error', 'observed.state ==', 'line 1, column'],
      ['an unknown variable', 'result.state == "paid"', 'line 1, column 1'],
      ['a type that cannot be a bool', '1 + 2', 'must evaluate to a bool, not int'],
      ['an empty expression', '  ', 'empty'],
      ['an expression too long', `${'true && '.repeat(600)}true`, 'longer than'],
    ])('throws CONDITION_INVALID for %s, at definition time', (_what, expression, says) => {
      let thrown: unknown;
      try {
        celCondition(expression);
      } catch (error) {
        thrown = error;
      }
      expect(isVerifierError(thrown)).toBe(true);
      expect(thrown).toMatchObject({ code: 'CONDITION_INVALID', evidence: { expression } });
      expect((thrown as Error).message).toContain(says);
    });

    it('points at the line and column of the mistake', () => {
      expect(() => celCondition('observed.ok &&\n  observed.(x)')).toThrow(/line 2, column \d+/);
    });
  });

  describe('when it evaluates to a bool', () => {
    const paid = celCondition(
      'observed.state == "paid" && observed.amount == params.amount && observed.id == proposal.target.id',
    );

    it('passes when it is true, with the expression and value as evidence', () => {
      const verdict = paid.evaluate({
        observed: { state: 'paid', amount: 1250, id: 'inv-7' },
        params: { amount: 1250 },
        proposal,
        observation,
      });
      expect(verdict).toEqual({
        status: 'pass',
        message: expect.any(String),
        evidence: { condition: { expression: paid.expression, value: true } },
      });
    });

    it('fails when it is false', () => {
      const verdict = paid.evaluate({
        observed: { state: 'open', amount: 1250, id: 'inv-7' },
        params: { amount: 1250 },
        proposal,
        observation,
      });
      expect(verdict).toMatchObject({ status: 'fail', evidence: { condition: { value: false } } });
    });

    it('reads the observation, and compares JSON integers as ints', () => {
      const claimed = celCondition('observation.outcome == "succeeded" && observed.count + 1 == 3');
      expect(claimed.evaluate({ observed: { count: 2 }, observation }).status).toBe('pass');
      expect(claimed.evaluate({ observed: { count: 2.5 }, observation }).status).not.toBe('pass');
    });

    it('sees null for the observation in the pre phase and {} for absent params', () => {
      const pre = celCondition('observation == null && size(params) == 0');
      expect(pre.evaluate({ observed: null, proposal, observation: null }).status).toBe('pass');
    });

    it('treats a key named __proto__ in what was read as a plain key', () => {
      const proto = celCondition('observed["__proto__"].x == 1');
      const observed = JSON.parse('{"__proto__": {"x": 1}}') as unknown;
      expect(proto.evaluate({ observed }).status).toBe('pass');
    });
  });

  describe('when it cannot be evaluated on what was read', () => {
    it('is inconclusive with CONDITION_ERROR for a missing key, never fail', () => {
      const verdict = celCondition('observed.state == "paid"').evaluate({ observed: {} });
      expect(verdict).toMatchObject({
        status: 'inconclusive',
        reason: 'CONDITION_ERROR',
        evidence: { condition: { expression: 'observed.state == "paid"', error: expect.any(String) } },
      });
    });

    it('is inconclusive with CONDITION_ERROR for a type mismatch', () => {
      expect(celCondition('observed.n > 1').evaluate({ observed: { n: 'two' } })).toMatchObject({
        status: 'inconclusive',
        reason: 'CONDITION_ERROR',
      });
    });

    it('is inconclusive with CONDITION_NOT_BOOLEAN when a dyn expression is not a bool', () => {
      expect(celCondition('observed.state').evaluate({ observed: { state: 'paid' } })).toMatchObject({
        status: 'inconclusive',
        reason: 'CONDITION_NOT_BOOLEAN',
        message: expect.stringContaining('a string'),
      });
    });

    it('never says fail and never throws, whatever JSON it reads (property)', () => {
      const conditions = [
        celCondition('observed.state == "paid"'),
        celCondition('observed.a.b > 3'),
        celCondition('observed'),
        celCondition('size(observed) > 0 && observed[0] == params.x'),
        celCondition('has(observed.x) && observed.x'),
      ];
      fc.assert(
        fc.property(fc.jsonValue(), fc.jsonValue(), (observed, x) => {
          for (const condition of conditions) {
            const verdict = condition.evaluate({ observed, params: { x: x as JsonValue } });
            if (verdict.status === 'fail') {
              // A fail is only ever a condition that evaluated to false.
              expect(verdict.evidence.condition.value).toBe(false);
            }
            if (verdict.status === 'inconclusive') expect(verdict.reason).toMatch(/^CONDITION_/);
          }
        }),
      );
    });

    it('is inconclusive, never fail, when the key it reads is not there (property)', () => {
      const condition = celCondition('observed.state == "paid"');
      const withoutState = fc
        .jsonValue()
        .filter((v) => typeof v !== 'object' || v === null || Array.isArray(v) || !('state' in v));
      fc.assert(
        fc.property(withoutState, (observed) => {
          expect(condition.evaluate({ observed })).toMatchObject({
            status: 'inconclusive',
            reason: 'CONDITION_ERROR',
          });
        }),
      );
    });

    it('gives the bool it read as the verdict, and nothing else as one (property)', () => {
      const condition = celCondition('observed');
      fc.assert(
        fc.property(fc.jsonValue(), (observed) => {
          const verdict = condition.evaluate({ observed });
          if (typeof observed === 'boolean') expect(verdict.status).toBe(observed ? 'pass' : 'fail');
          else expect(verdict).toMatchObject({ status: 'inconclusive', reason: 'CONDITION_NOT_BOOLEAN' });
        }),
      );
    });

    it('is a pure function of its input (property)', () => {
      const condition = celCondition('observed.state == "paid"');
      fc.assert(
        fc.property(fc.jsonValue(), (observed) => {
          const before = JSON.stringify(observed);
          expect(condition.evaluate({ observed })).toEqual(condition.evaluate({ observed }));
          expect(JSON.stringify(observed)).toBe(before);
        }),
      );
    });
  });
});
