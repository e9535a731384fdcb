import { describe, expect, it } from 'vitest';
import { deriveOutcome, deriveStage } from './derive-outcome';
import { PROPOSAL_OUTCOMES, PROPOSAL_STAGES } from './proposal-life';

describe('deriveOutcome', () => {
  describe('when nothing was executed', () => {
    it.each([null, 'passed', 'failed', 'inconclusive'] as const)(
      'is not_executed (verification status %s)',
      (verificationStatus) => {
        expect(deriveOutcome({ observation: null, verificationStatus })).toBe('not_executed');
      },
    );
  });

  describe('when the tool was called and nothing was verified yet', () => {
    it.each(['succeeded', 'failed'] as const)('awaits verification when the tool said %s', (outcome) => {
      expect(deriveOutcome({ observation: { outcome }, verificationStatus: null })).toBe(
        'awaiting_verification',
      );
    });

    it('awaits resolution when the outcome is unknown', () => {
      expect(deriveOutcome({ observation: { outcome: 'unknown' }, verificationStatus: null })).toBe(
        'awaiting_resolution',
      );
    });
  });

  describe('when a verification status is given', () => {
    it.each([
      ['succeeded', 'passed', 'verified'],
      ['failed', 'passed', 'verified'],
      ['unknown', 'passed', 'verified'],
      ['succeeded', 'failed', 'verification_failed'],
      ['unknown', 'failed', 'verification_failed'],
      ['succeeded', 'inconclusive', 'unverified'],
      ['failed', 'inconclusive', 'unverified'],
      ['unknown', 'inconclusive', 'awaiting_resolution'],
    ] as const)('an observation %s verified %s is %s', (outcome, verificationStatus, expected) => {
      expect(deriveOutcome({ observation: { outcome }, verificationStatus })).toBe(expected);
    });
  });

  describe('when its values are documented', () => {
    it('describes each value the function can return', () => {
      const observations = [
        null,
        { outcome: 'succeeded' },
        { outcome: 'failed' },
        { outcome: 'unknown' },
      ] as const;
      const statuses = [null, 'passed', 'failed', 'inconclusive'] as const;
      const returned = new Set(
        observations.flatMap((observation) =>
          statuses.map((verificationStatus) => deriveOutcome({ observation, verificationStatus })),
        ),
      );
      expect([...returned].sort()).toEqual(Object.keys(PROPOSAL_OUTCOMES).sort());
    });
  });
});

describe('deriveStage', () => {
  const proposal = { id: 'prop_1' };
  const none = { proposal, decision: null, approval: null, observation: null, refusals: [] };
  const gated = { verdict: 'require_approval' } as const;
  const approval = (status: 'pending' | 'approved' | 'denied' | 'expired' | 'used', usedBy?: string) => ({
    status,
    uses: usedBy ? [{ proposal_id: usedBy }] : [],
  });

  const cases = [
    ['awaiting_decision', {}],
    ['denied', { decision: { verdict: 'deny' } }],
    ['repair_proposed', { decision: { verdict: 'repair' } }],
    ['authorized', { decision: { verdict: 'allow' } }],
    ['awaiting_approval', { decision: gated }],
    ['awaiting_approval', { decision: gated, approval: approval('pending') }],
    ['approval_denied', { decision: gated, approval: approval('denied') }],
    ['approval_expired', { decision: gated, approval: approval('expired') }],
    ['approval_used', { decision: gated, approval: approval('used', 'prop_2') }],
    ['authorized', { decision: gated, approval: approval('approved') }],
    ['execution_refused', { decision: { verdict: 'deny' }, refusals: [{ id: 'ref_1' }] }],
    ['executed', { decision: { verdict: 'allow' }, observation: { id: 'obs_1' } }],
    [
      'executed',
      { decision: { verdict: 'allow' }, observation: { id: 'obs_1' }, refusals: [{ id: 'ref_1' }] },
    ],
  ] as const;

  describe('when records accumulate', () => {
    it.each(cases)('reports %s for %j', (stage, over) => {
      expect(deriveStage({ ...none, ...over })).toBe(stage);
    });
  });

  describe('when this proposal claimed its approval and has not recorded the execution', () => {
    it.each(['used', 'expired'] as const)('stays authorized when the approval is now %s', (status) => {
      expect(deriveStage({ ...none, decision: gated, approval: approval(status, 'prop_1') })).toBe(
        'authorized',
      );
    });
  });

  describe('when its values are documented', () => {
    it('reaches every documented stage and no other', () => {
      const reached = new Set(cases.map(([, over]) => deriveStage({ ...none, ...over })));
      expect([...reached].sort()).toEqual(Object.keys(PROPOSAL_STAGES).sort());
    });
  });
});
