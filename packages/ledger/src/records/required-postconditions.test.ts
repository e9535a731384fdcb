import type { ParamBinding } from '@vouch/records';
import { describe, expect, it } from 'vitest';
import { isLedgerError } from '../errors';
import {
  applyRequiredPostconditions,
  bindRequiredPostconditions,
  mergePostconditions,
  requiredPostconditionsBreak,
} from './required-postconditions';
import type { ProposalPayload } from './types';

const payload: ProposalPayload = {
  action: 'pay.refund',
  server_id: 'pay',
  tool_name: 'refund',
  target: { kind: 'payment', id: 'pay_1', env: 'prod' },
  arguments: { order: { id: 'ord_7', 'a/b': 1, 'c~d': 2 }, lines: [{ sku: 'x' }, { sku: 'y' }], amount: 5 },
  side_effect: 'compensatable',
  preconditions: [],
  postconditions: [],
  impact: null,
};

const bind = (binding: ParamBinding) =>
  bindRequiredPostconditions([{ name: 'p', params: { v: binding } }], payload)[0]!.params!.v;
const reasonOf = (binding: ParamBinding) => {
  try {
    bind(binding);
  } catch (error) {
    return isLedgerError(error) ? [error.code, error.details?.reason] : error;
  }
  return 'bound';
};

describe('bindRequiredPostconditions', () => {
  describe('when a param is a JSON pointer', () => {
    it.each([
      ['/arguments/order/id', 'ord_7'],
      ['/arguments/order/a~1b', 1],
      ['/arguments/order/c~0d', 2],
      ['/arguments/lines/1/sku', 'y'],
      ['/target/env', 'prod'],
      ['/impact', null],
    ])('resolves %s (RFC 6901)', (pointer, value) => {
      expect(bind({ pointer })).toEqual(value);
    });

    it.each([
      '/arguments/missing',
      '/arguments/lines/2',
      '/arguments/lines/01',
      '/arguments/lines/-',
      '/postconditions',
      '/arguments/order/constructor',
    ])('refuses %s, which names nothing it may bind to', (pointer) => {
      expect(reasonOf({ pointer })).toEqual(['POSTCONDITION_BINDING_FAILED', 'POINTER_MISSING']);
    });
  });

  describe('when a param is CEL', () => {
    it.each([
      ['arguments.amount * 100.0', 500],
      ['size(arguments.lines)', 2],
      [
        '{"order": arguments.order.id, "skus": arguments.lines.map(l, l.sku)}',
        { order: 'ord_7', skus: ['x', 'y'] },
      ],
      ['target.id + "@" + target.env', 'pay_1@prod'],
    ])('evaluates %s over the payload', (cel, value) => {
      expect(bind({ cel })).toEqual(value);
    });

    it.each([
      ['arguments.amount * 100', 'CEL_ERROR'],
      ['arguments.nothing', 'CEL_ERROR'],
      ['9007199254740993', 'NOT_JSON'],
      ['b"bytes"', 'NOT_JSON'],
      ['duration("1s")', 'NOT_JSON'],
    ])('refuses %s with %s', (cel, reason) => {
      expect(reasonOf({ cel })).toEqual(['POSTCONDITION_BINDING_FAILED', reason]);
    });
  });

  it('takes a literal as it is, and marks each condition registry with its verifiers', () => {
    expect(
      bindRequiredPostconditions(
        [{ name: 'p', params: { v: { value: { a: [1] } } }, verifiers: ['ledger'] }, { name: 'q' }],
        payload,
      ),
    ).toEqual([
      { name: 'p', params: { v: { a: [1] } }, origin: 'registry', verifiers: ['ledger'] },
      { name: 'q', origin: 'registry' },
    ]);
  });
});

describe('mergePostconditions', () => {
  it('merges an identical agent condition (params compared canonically) and keeps one with other params', () => {
    const required = [{ name: 'p', params: { a: 1, b: 2 }, origin: 'registry' as const }];
    expect(
      mergePostconditions(
        [{ name: 'p', params: { b: 2, a: 1 } }, { name: 'p', params: { a: 2 } }, { name: 'q' }],
        required,
      ),
    ).toEqual([...required, { name: 'p', params: { a: 2 } }, { name: 'q' }]);
  });
});

describe('requiredPostconditionsBreak', () => {
  const tool = { postconditions: [{ name: 'p', params: { id: { pointer: '/target/id' } } }] };
  it('accepts what applyRequiredPostconditions wrote, and a proposal with no tool requirements', () => {
    const applied = applyRequiredPostconditions({ ...payload, postconditions: [{ name: 'x' }] }, tool);
    expect(requiredPostconditionsBreak(applied, tool)).toBeNull();
    expect(requiredPostconditionsBreak({ ...payload, postconditions: [{ name: 'x' }] }, null)).toBeNull();
  });

  it('reports a proposal missing what its tool required', () => {
    expect(requiredPostconditionsBreak(payload, tool)).toMatch(/not the agent/);
  });
});
