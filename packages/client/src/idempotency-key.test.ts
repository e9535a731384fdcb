import { canonicalJson, sha256Hex } from '@vouch/audit';
import { describe, expect, it } from 'vitest';
import { deriveIdempotencyKey, payloadHashOf, proposalPayloadOf } from './idempotency-key';

const action = {
  action: 'refund.issue',
  server_id: 'billing',
  tool_name: 'issue_refund',
  target: { kind: 'order', id: 'A-119', env: 'production' },
  arguments: { order: 'A-119', amount: 4200 },
  side_effect: 'compensatable' as const,
};

describe('proposalPayloadOf', () => {
  describe('when optional fields are left out', () => {
    it('fills in the server defaults so the hash matches what the server stores', () => {
      expect(proposalPayloadOf({ ...action, target: { kind: 'order' } })).toEqual({
        ...action,
        target: { kind: 'order', id: null, env: null },
        preconditions: [],
        postconditions: [],
        impact: null,
      });
    });
  });
});

describe('payloadHashOf', () => {
  describe('when given a payload', () => {
    it('is SHA-256 of its RFC 8785 canonical JSON', () => {
      const payload = proposalPayloadOf(action);
      expect(payloadHashOf(payload)).toBe(sha256Hex(canonicalJson(payload)));
    });
  });
});

describe('deriveIdempotencyKey', () => {
  describe('when the same action is given twice, in another key order', () => {
    it('gives the same key', () => {
      const { side_effect, ...rest } = action;
      const reordered = { side_effect, ...rest, arguments: { amount: 4200, order: 'A-119' } };
      expect(deriveIdempotencyKey(proposalPayloadOf(reordered))).toBe(
        deriveIdempotencyKey(proposalPayloadOf(action)),
      );
    });
  });

  describe('when the arguments or the scope differ', () => {
    it('gives another key', () => {
      const base = deriveIdempotencyKey(proposalPayloadOf(action));
      expect(deriveIdempotencyKey(proposalPayloadOf({ ...action, arguments: { amount: 1 } }))).not.toBe(base);
      expect(deriveIdempotencyKey(proposalPayloadOf(action), 'call-2')).not.toBe(base);
    });
  });

  describe('when the action holds a value JSON cannot carry', () => {
    it('throws INVALID_ARGUMENT', () => {
      const bad = proposalPayloadOf({ ...action, arguments: { amount: Number.NaN } });
      expect(() => deriveIdempotencyKey(bad)).toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENT' }));
    });
  });
});
