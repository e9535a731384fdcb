import { describe, expect, it } from 'vitest';
import { preconditionBlock, preconditionResultOf, preconditionStatus, unprovenModeOf } from './preconditions';

const check = (name: string, status: string, more: Record<string, string> = {}) => ({
  name,
  status,
  source: 'crm',
  ...more,
});

describe('preconditionStatus', () => {
  describe('when every declared precondition has only passing checks', () => {
    it('is passed', () => {
      expect(preconditionStatus([check('a', 'pass'), check('b', 'pass')], ['a', 'b'])).toBe('passed');
    });
  });

  describe('when a declared precondition failed', () => {
    it('is failed, whatever else passed', () => {
      expect(preconditionStatus([check('a', 'pass'), check('b', 'fail')], ['a', 'b'])).toBe('failed');
    });
  });

  describe('when a failure was recorded as another status with its verdict kept', () => {
    it('is failed: an oversize result (RESULT_INVALID) or a downgraded fail still counts', () => {
      const oversize = check('a', 'error', { reason: 'RESULT_INVALID', reported: 'fail' });
      const downgraded = check('b', 'inconclusive', { reason: 'NOT_INDEPENDENT', reported: 'fail' });
      expect(preconditionStatus([oversize, check('b', 'pass')], ['a', 'b'])).toBe('failed');
      expect(preconditionStatus([check('a', 'pass'), downgraded], ['a', 'b'])).toBe('failed');
    });
  });

  describe('when a declared precondition has no check, or a check that is not a pass', () => {
    it.each([
      ['no check', [check('a', 'pass')]],
      ['an inconclusive check', [check('a', 'pass'), check('b', 'inconclusive')]],
      ['an error beside a pass', [check('a', 'pass'), check('b', 'pass'), check('b', 'error')]],
    ])('is inconclusive with %s', (_, checks) => {
      expect(preconditionStatus(checks, ['a', 'b'])).toBe('inconclusive');
    });
  });

  describe('when a check answers no declared precondition', () => {
    it('does not count it, neither a fail nor a pass', () => {
      expect(preconditionStatus([check('a', 'pass'), check('other', 'fail')], ['a'])).toBe('passed');
      expect(preconditionStatus([check('other', 'pass')], ['a'])).toBe('inconclusive');
    });
  });

  describe('when a host check names the precondition it answers', () => {
    it('matches by that, not by its name', () => {
      expect(preconditionStatus([check('reading-1', 'pass', { postcondition: 'a' })], ['a'])).toBe('passed');
    });
  });
});

describe('preconditionBlock', () => {
  const result = (status: 'passed' | 'failed' | 'inconclusive') => ({ status, checks: [] });
  it('blocks a failed precondition in either mode', () => {
    expect(preconditionBlock('p', result('failed'), 'warn')?.code).toBe('PRECONDITION_FAILED');
    expect(preconditionBlock('p', result('failed'), 'block')?.code).toBe('PRECONDITION_FAILED');
  });
  it('blocks an unproven one unless the tool says warn', () => {
    expect(preconditionBlock('p', result('inconclusive'), 'block')?.code).toBe('PRECONDITION_UNPROVEN');
    expect(preconditionBlock('p', result('inconclusive'), 'warn')).toBeNull();
  });
  it('lets a passed one, and a proposal without preconditions, through', () => {
    expect(preconditionBlock('p', result('passed'), 'block')).toBeNull();
    expect(preconditionBlock('p', null, 'block')).toBeNull();
  });
  it('reads block as the default mode', () => {
    expect(unprovenModeOf(null)).toBe('block');
    expect(unprovenModeOf({})).toBe('block');
    expect(unprovenModeOf({ unproven_preconditions: 'warn' })).toBe('warn');
  });
});

describe('preconditionResultOf', () => {
  it('is null for a proposal with no preconditions, and unproven when nothing ran', () => {
    expect(preconditionResultOf({ preconditions: [] }, [check('a', 'pass')])).toBeNull();
    expect(preconditionResultOf({ preconditions: [{ name: 'a' }] }, undefined)).toEqual({
      status: 'inconclusive',
      checks: [],
    });
  });
});
