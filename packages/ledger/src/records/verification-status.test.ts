import { canonicalJson } from '@vouch/audit';
import { describe, expect, it } from 'vitest';
import { verificationCodec } from './codec';
import type { VerificationRecord } from './types';
import { effectiveVerification, legacyRecordStatus } from './verification-status';

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

describe('effectiveVerification under the rules of #32', () => {
  describe('when a stored check holds a fail downgraded under the earlier rule', () => {
    it('counts it as failed, whatever status the record states', () => {
      const legacy = record([], {
        checks: [
          {
            name: 'refund.recorded',
            status: 'inconclusive',
            source: 'payments-mcp',
            reason: 'NOT_INDEPENDENT',
            reported: 'fail',
          },
        ],
        status: 'inconclusive',
      });
      expect(effective([legacy])).toMatchObject({
        status: 'failed',
        postconditions: [{ name: 'refund.recorded', status: 'failed', decided_by: [legacy.id] }, {}],
      });
    });
  });

  describe('when the proposal limits who may prove a postcondition', () => {
    const limited = {
      postconditions: [{ name: 'refund.recorded', verifiers: ['ledger-reader', 'service:auditor'] }],
    };
    const of = (verifications: VerificationRecord[]) =>
      effectiveVerification({ proposal: limited, observation, verifications, settleSeconds: 900, now: T0 });
    const serverRun = (name: string, status: string) =>
      record([], {
        checks: [
          {
            name: 'refund.recorded',
            status,
            source: 'ledger-api',
            verifier: { id: 'x', version: '1', apiVersion: 1, name },
          },
        ],
        verifier: 'agent:gw',
      });

    it("counts a pass from a listed verifier, by the server's configured name or the record's identity", () => {
      expect(of([serverRun('ledger-reader', 'pass')]).status).toBe('passed');
      expect(of([record([['refund.recorded', 'pass']], { verifier: 'service:Auditor' })]).status).toBe(
        'passed',
      );
    });

    it('does not count a pass from any other verifier', () => {
      expect(of([serverRun('other-reader', 'pass')]).status).toBe('inconclusive');
      expect(of([record([['refund.recorded', 'pass']], { verifier: 'agent:gw' })]).status).toBe(
        'inconclusive',
      );
    });

    it('counts a fail from any verifier', () => {
      expect(of([serverRun('other-reader', 'fail')]).status).toBe('failed');
    });
  });

  describe('when two postconditions share a name', () => {
    it('gives each its own verdict with its params', () => {
      const two = {
        postconditions: [
          { name: 'refund.recorded', params: { refund_id: 're_1' } },
          { name: 'refund.recorded', params: { refund_id: 're_2' } },
        ],
      };
      const a = record([], {
        checks: [{ name: 'refund.recorded', status: 'pass', source: 'bank', params: { refund_id: 're_2' } }],
      });
      expect(
        effectiveVerification({ proposal: two, observation, verifications: [a], settleSeconds: 900, now: T0 })
          .postconditions,
      ).toEqual([
        { name: 'refund.recorded', params: { refund_id: 're_1' }, status: 'inconclusive', decided_by: [] },
        { name: 'refund.recorded', params: { refund_id: 're_2' }, status: 'passed', decided_by: [a.id] },
      ]);
    });
  });
});

describe('legacyRecordStatus', () => {
  describe('when a proposal with two postconditions of one name was verified before params counted', () => {
    it('gives the status the earlier rule gave: one name-only pass proved the name', () => {
      const two = [
        { name: 'refund.recorded', params: { refund_id: 're_1' } },
        { name: 'refund.recorded', params: { refund_id: 're_2' } },
      ];
      const old = record([['refund.recorded', 'pass']], { status: 'passed' });
      expect(legacyRecordStatus(old, two)).toBe('passed');
    });
  });

  describe('when a stored fail was downgraded under the earlier rule', () => {
    it('gives inconclusive, as that rule did', () => {
      const old = record([], {
        checks: [
          {
            name: 'refund.recorded',
            status: 'inconclusive',
            source: 'x',
            reason: 'NOT_INDEPENDENT',
            reported: 'fail',
          },
        ],
      });
      expect(legacyRecordStatus(old, [{ name: 'refund.recorded' }])).toBe('inconclusive');
    });
  });
});
