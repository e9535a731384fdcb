import { describe, expect, it } from 'vitest';
import { isLedgerError } from '../errors';
import { parseInput, proposalInputSchema, toolInputSchema } from './inputs';
import { proposalPayloadHash, proposalPayloadOf } from './payload-hash';

const body = () => ({
  idempotency_key: 'k1',
  action: 'refund',
  server_id: 'payments',
  tool_name: 'refund',
  target: { kind: 'payment', id: 'pay_1', env: 'prod' },
  arguments: { amount: 5, note: 'a\u0000b' },
  side_effect: 'compensatable',
});

const parse = (value: unknown, maxBytes = 10_000) =>
  parseInput(proposalInputSchema, value, { what: 'proposal', maxBytes });

const codeOf = (fn: () => unknown): string => {
  try {
    fn();
  } catch (error) {
    if (isLedgerError(error)) return error.code;
    throw error;
  }
  return 'NO_ERROR';
};

describe('parseInput', () => {
  describe('when a proposal is well formed', () => {
    it('fills defaults and keeps every JSON value as sent', () => {
      const parsed = parse(body());
      expect(parsed.preconditions).toEqual([]);
      expect(parsed.postconditions).toEqual([]);
      expect(parsed.impact).toBeNull();
      expect(parsed.arguments).toEqual({ amount: 5, note: 'a\u0000b' });
    });

    it('defaults a target without id or environment to nulls, for the policy to judge', () => {
      expect(parse({ ...body(), target: { kind: 'payment' } }).target).toEqual({
        kind: 'payment',
        id: null,
        env: null,
      });
    });
  });

  describe('when the body is not what the schema says', () => {
    it.each([
      ['an unknown side-effect class', { side_effect: 'mostly_harmless' }],
      ['a missing target', { target: undefined }],
      ['an unknown key', { requester: 'agent:admin' }],
      ['a control character in an idempotency key', { idempotency_key: 'k\n1' }],
      ['arguments that are not an object', { arguments: [1, 2] }],
    ])('refuses %s with VALIDATION_FAILED', (_, over) => {
      const value: Record<string, unknown> = { ...body(), ...over };
      for (const key of Object.keys(value)) if (value[key] === undefined) delete value[key];
      expect(codeOf(() => parse(value))).toBe('VALIDATION_FAILED');
    });

    it.each([
      ['a control character in a server id', { server_id: 'pay\nments' }, '/server_id'],
      [
        'a zero-width space in a postcondition name',
        { postconditions: [{ name: 'refund.recorded\u200b' }] },
        '/postconditions/0/name',
      ],
      ['a Cyrillic letter in an action', { action: 'p\u0430y.refund' }, '/action'],
      ['a space in a target kind', { target: { kind: 'pay ment', id: 'p', env: 'prod' } }, '/target/kind'],
    ])('refuses %s, a name an approver reads, with IDENTIFIER_INVALID at its path', (_, over, path) => {
      try {
        parse({ ...body(), ...over });
      } catch (error) {
        expect(isLedgerError(error) && [error.code, error.details?.path]).toEqual([
          'IDENTIFIER_INVALID',
          path,
        ]);
        return;
      }
      expect.unreachable();
    });

    it('points at the offending field', () => {
      try {
        parse({ ...body(), side_effect: 'x' });
      } catch (error) {
        expect(isLedgerError(error) && error.details?.issues).toMatchObject([{ path: '/side_effect' }]);
        return;
      }
      expect.unreachable();
    });
  });

  describe('when JSON cannot carry a value', () => {
    it.each([
      ['undefined', { amount: undefined }],
      ['NaN', { amount: Number.NaN }],
      ['a Date', { at: new Date(0) }],
      ['a BigInt', { amount: 5n }],
      ['a lone surrogate', { note: '\ud800' }],
    ])('refuses %s in arguments with PAYLOAD_NOT_JSON', (_, args) => {
      expect(codeOf(() => parse({ ...body(), arguments: args }))).toBe('PAYLOAD_NOT_JSON');
    });
  });

  describe('when the body is larger than the limit', () => {
    it('refuses it with PAYLOAD_TOO_LARGE', () => {
      expect(codeOf(() => parse({ ...body(), arguments: { blob: 'x'.repeat(2000) } }, 1000))).toBe(
        'PAYLOAD_TOO_LARGE',
      );
    });
  });

  describe('when a tool registration leaves the side-effect class out', () => {
    it('registers it as irreversible', () => {
      expect(
        parseInput(
          toolInputSchema,
          { server_id: 's', tool_name: 't', source: 'discovery' },
          { what: 't', maxBytes: 1000 },
        ).side_effect,
      ).toBe('irreversible');
    });
  });
});

describe('proposalPayloadHash', () => {
  describe('when the same proposal arrives with keys in another order', () => {
    it('gives the same hash', () => {
      const a = parse(body());
      const b = parse(JSON.parse(JSON.stringify({ ...body(), arguments: { note: 'a\u0000b', amount: 5 } })));
      expect(proposalPayloadHash(a)).toBe(proposalPayloadHash(b));
    });
  });

  describe('when anything an approver sees changes', () => {
    it.each([
      ['the arguments', { arguments: { amount: 6 } }],
      ['the environment', { target: { kind: 'payment', id: 'pay_1', env: 'staging' } }],
      ['the impact estimate', { impact: { rows: 1 } }],
    ])('changes with %s', (_, over) => {
      expect(proposalPayloadHash(parse({ ...body(), ...over }))).not.toBe(proposalPayloadHash(parse(body())));
    });
  });

  describe('when only the idempotency key differs', () => {
    it('keeps the hash, which covers only what the approver is shown', () => {
      expect(proposalPayloadHash(parse({ ...body(), idempotency_key: 'k2' }))).toBe(
        proposalPayloadHash(parse(body())),
      );
      expect(Object.keys(proposalPayloadOf(parse(body()))).sort()).toEqual([
        'action',
        'arguments',
        'impact',
        'postconditions',
        'preconditions',
        'server_id',
        'side_effect',
        'target',
        'tool_name',
      ]);
    });
  });
});
