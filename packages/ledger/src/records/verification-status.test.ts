import { canonicalJson } from '@vouch/audit';
import { describe, expect, it } from 'vitest';
import { verificationCodec } from './codec';
import type { VerificationRecord } from './types';
import { effectiveVerification } from './verification-status';

const T0 = '2026-01-01T00:00:00.000Z';
const proposal = { postconditions: [{ name: 'refund.recorded' }, { name: 'customer.notified' }] };
const observation = { outcome: 'succeeded' as const, observed_at: T0 };

let n = 0;
const record = (
  checks: Array<[string, string]>,
  extra: Partial<VerificationRecord> = {},
): VerificationRecord => ({
  id: `ver_${++n}`,
  observation_id: 'obs_1',
  proposal_id: 'prop_1',
  checks: checks.map(([name, status]) => ({ name, status, source: 'ledger-api' })),
  status: 'inconclusive',
  verifier: 'service:verifier',
  verified_at: T0,
  undeclared: [],
  ...extra,
});
const effective = (verifications: VerificationRecord[]) =>
  effectiveVerification({ proposal, observation, verifications, settleSeconds: 900, now: T0 });

describe('effectiveVerification', () => {
  describe('when nothing was recorded', () => {
    it('is inconclusive, NOT_VERIFIED, every postcondition unproven', () => {
      expect(effective([])).toEqual({
        status: 'inconclusive',
        reason: 'NOT_VERIFIED',
        postconditions: [
          { name: 'refund.recorded', status: 'inconclusive', decided_by: [] },
          { name: 'customer.notified', status: 'inconclusive', decided_by: [] },
        ],
        superseded: [],
        settles_at: null,
      });
    });
  });

  describe('when records prove different postconditions', () => {
    it('combines them one postcondition at a time', () => {
      const a = record([['refund.recorded', 'pass']]);
      const b = record([
        ['customer.notified', 'pass'],
        ['refund.recorded', 'inconclusive'],
      ]);
      expect(effective([a, b])).toMatchObject({
        status: 'passed',
        reason: null,
        postconditions: [{ decided_by: [a.id] }, { decided_by: [b.id] }],
      });
    });
  });

  describe('when any record in effect failed a postcondition', () => {
    it('is failed whatever passed before or after', () => {
      const passed = record([
        ['refund.recorded', 'pass'],
        ['customer.notified', 'pass'],
      ]);
      const failed = record([['refund.recorded', 'fail']]);
      const passedAgain = record([['refund.recorded', 'pass']]);
      expect(effective([passed, failed, passedAgain]).status).toBe('failed');
    });
  });

  describe('when the failed record is superseded', () => {
    it('counts it no more, and names what superseded it', () => {
      const failed = record([['refund.recorded', 'fail']]);
      const again = record(
        [
          ['refund.recorded', 'pass'],
          ['customer.notified', 'pass'],
        ],
        { supersedes: [failed.id], reason: 'recheck' },
      );
      expect(effective([failed, again])).toMatchObject({
        status: 'passed',
        superseded: [{ id: failed.id, by: again.id }],
      });
    });
  });

  describe('when a record is held because the outcome was unknown', () => {
    it('proves nothing, even a failure', () => {
      const held = record([['refund.recorded', 'fail']], { held: 'OUTCOME_UNKNOWN' });
      expect(effective([held])).toMatchObject({ status: 'inconclusive', reason: 'UNPROVEN' });
    });
  });
});

describe('verificationCodec', () => {
  const roundTrip = (r: VerificationRecord) =>
    canonicalJson(verificationCodec.toRecord(verificationCodec.toRow({ logId: 'l', eventSeq: 1 }, r)));

  describe('when a record predates migration 0006', () => {
    it('rebuilds its payload without the new keys', () => {
      const { undeclared: _, ...old } = record([['refund.recorded', 'pass']]);
      expect(roundTrip(old)).toBe(canonicalJson(old));
    });
  });

  describe('when a record supersedes others', () => {
    it('rebuilds every field', () => {
      const r = record([['refund.recorded', 'pass']], {
        supersedes: ['ver_a', 'ver_b'],
        reason: 'the ledger replicated late',
        held: 'OUTCOME_UNKNOWN',
        undeclared: ['unrelated.thing'],
      });
      expect(roundTrip(r)).toBe(canonicalJson(r));
    });
  });
});
