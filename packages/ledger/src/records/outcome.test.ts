import { describe, expect, it } from 'vitest';
import { deriveOutcome, deriveStage } from './outcome';

describe('deriveOutcome', () => {
  describe('when a verification exists', () => {
    it.each([
      ['passed', 'completed'],
      ['failed', 'failed'],
      ['inconclusive', 'aborted'],
    ] as const)('maps %s to %s', (status, outcome) => {
      expect(deriveOutcome({ verification: { status } })).toBe(outcome);
    });
  });

  describe('when nothing was verified yet', () => {
    it('is pending, whatever the tool said', () => {
      expect(deriveOutcome({ verification: null })).toBe('pending');
    });
  });
});

describe('deriveStage', () => {
  const none = { decision: null, resolution: null, observation: null, verification: null, refusals: [] };

  describe('when records accumulate', () => {
    it.each([
      ['awaiting_decision', {}],
      ['denied', { decision: { verdict: 'deny' } }],
      ['repair_proposed', { decision: { verdict: 'repair' } }],
      ['authorized', { decision: { verdict: 'allow' } }],
      ['awaiting_approval', { decision: { verdict: 'require_approval' } }],
      [
        'approval_denied',
        { decision: { verdict: 'require_approval' }, resolution: { resolution: 'denied' } },
      ],
      ['authorized', { decision: { verdict: 'require_approval' }, resolution: { resolution: 'approved' } }],
      ['refused', { decision: { verdict: 'deny' }, refusals: [{ id: 'ref_1' }] }],
      ['executed', { decision: { verdict: 'allow' }, observation: { id: 'obs_1' } }],
      [
        'verified',
        { decision: { verdict: 'allow' }, observation: { id: 'obs_1' }, verification: { status: 'failed' } },
      ],
    ] as const)('reports %s', (stage, over) => {
      expect(deriveStage({ ...none, ...over })).toBe(stage);
    });
  });
});
