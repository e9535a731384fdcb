import { describe, expect, it } from 'vitest';
import type { ApprovalRequestRecord, ApprovalResolutionRecord, ApprovalUseRecord } from '../records/types';
import { addSeconds, checkApproval, isReusableRequest, shortestWindow } from './approval-validity';

const T0 = '2026-01-01T00:00:00.000Z';
const at = (seconds: number) => addSeconds(T0, seconds);

const request: ApprovalRequestRecord = {
  id: 'apr_1',
  proposal_id: 'prop_1',
  payload_hash: 'a'.repeat(64),
  requester: 'agent:billing',
  server_id: 'payments',
  tool_name: 'refund',
  environment: 'prod',
  expires_at: at(3600),
  max_window_seconds: 600,
  requested_at: T0,
};

const approved = (over: Partial<ApprovalResolutionRecord> = {}): ApprovalResolutionRecord => ({
  id: 'res_1',
  request_id: 'apr_1',
  resolution: 'approved',
  resolver: 'user:alice',
  validity: 'once',
  window_seconds: 600,
  window_source: 'policy',
  valid_until: at(700),
  comment: null,
  resolved_at: at(100),
  ...over,
});

const use = (proposalId: string): ApprovalUseRecord => ({
  id: `use_${proposalId}`,
  request_id: 'apr_1',
  resolution_id: 'res_1',
  proposal_id: proposalId,
  validity: 'once',
  used_by: 'agent:billing',
  used_at: at(200),
});

const proposal = {
  id: 'prop_1',
  requester: 'agent:billing',
  server_id: 'payments',
  tool_name: 'refund',
  payload_hash: 'a'.repeat(64),
};

const check = (over: Partial<Parameters<typeof checkApproval>[0]> = {}) =>
  checkApproval({ request, resolution: approved(), uses: [], proposal, now: at(200), ...over });

const codeOf = (result: ReturnType<typeof checkApproval>) => (result.ok ? 'OK' : result.code);

describe('shortestWindow', () => {
  describe('when several rules set a window', () => {
    it('picks the shortest and names its source', () => {
      expect(
        shortestWindow([
          { source: 'approver', seconds: 3600 },
          { source: 'tool', seconds: 600 },
          { source: 'service', seconds: 1800 },
        ]),
      ).toEqual({ source: 'tool', seconds: 600 });
    });
  });

  describe('when a rule sets no window', () => {
    it('ignores it', () => {
      expect(
        shortestWindow([
          { source: 'approver', seconds: null },
          { source: 'service', seconds: 60 },
        ]),
      ).toEqual({
        source: 'service',
        seconds: 60,
      });
      expect(shortestWindow([{ source: 'tool' }])).toBeNull();
    });
  });
});

describe('checkApproval', () => {
  describe('when a once approval is fresh', () => {
    it('authorizes and asks for a new use', () => {
      expect(check()).toMatchObject({ ok: true, existingUse: null });
    });
  });

  describe('when the approval is bound elsewhere', () => {
    it('refuses another payload with APPROVAL_PAYLOAD_MISMATCH', () => {
      expect(codeOf(check({ proposal: { ...proposal, payload_hash: 'b'.repeat(64) } }))).toBe(
        'APPROVAL_PAYLOAD_MISMATCH',
      );
    });

    it.each([
      ['requester', { requester: 'agent:other' }],
      ['server', { server_id: 'other' }],
      ['tool', { tool_name: 'charge' }],
    ])('refuses another %s with APPROVAL_SCOPE_MISMATCH', (_, over) => {
      expect(codeOf(check({ proposal: { ...proposal, ...over } }))).toBe('APPROVAL_SCOPE_MISMATCH');
    });

    it('holds for the same requester in another spelling (one canonical identity)', () => {
      expect(check({ proposal: { ...proposal, requester: 'AGENT:Billing' } })).toMatchObject({ ok: true });
    });
  });

  describe('when the request is not approved', () => {
    it('refuses a pending request with EXECUTION_NOT_AUTHORIZED', () => {
      expect(codeOf(check({ resolution: null }))).toBe('EXECUTION_NOT_AUTHORIZED');
    });

    it('refuses a request that expired unanswered with APPROVAL_EXPIRED', () => {
      expect(codeOf(check({ resolution: null, now: at(3600) }))).toBe('APPROVAL_EXPIRED');
    });

    it('refuses a denied request with EXECUTION_NOT_AUTHORIZED', () => {
      expect(
        codeOf(
          check({
            resolution: approved({
              resolution: 'denied',
              validity: null,
              window_seconds: null,
              valid_until: null,
            }),
          }),
        ),
      ).toBe('EXECUTION_NOT_AUTHORIZED');
    });
  });

  describe('when the answer breaks the bounds the server writes', () => {
    it.each([
      ['open-ended', { valid_until: null }],
      ['stretched past the request', { window_seconds: 6000, valid_until: at(6100) }],
      ['answered after the request expired', { resolved_at: at(3600), valid_until: at(4200) }],
    ])('refuses one %s with APPROVAL_BOUNDS_VIOLATED, and never reuses it', (_, change) => {
      expect(codeOf(check({ resolution: approved(change) }))).toBe('APPROVAL_BOUNDS_VIOLATED');
      expect(
        isReusableRequest({ request, resolution: approved(change), used: false, proposal, now: at(200) }),
      ).toBe(false);
    });
  });

  describe('when time runs out', () => {
    it('refuses at valid_until with APPROVAL_EXPIRED', () => {
      expect(codeOf(check({ now: at(700) }))).toBe('APPROVAL_EXPIRED');
    });

    it('still honours a use this proposal claimed in time', () => {
      expect(check({ now: at(900), uses: [use('prop_1')] })).toMatchObject({
        ok: true,
        existingUse: { id: 'use_prop_1' },
      });
    });
  });

  describe('when a once approval was used', () => {
    it('refuses another proposal with APPROVAL_CONSUMED', () => {
      expect(codeOf(check({ uses: [use('prop_2')] }))).toBe('APPROVAL_CONSUMED');
    });
  });

  describe('when a window approval was used', () => {
    it('authorizes again within the window', () => {
      expect(check({ resolution: approved({ validity: 'window' }), uses: [use('prop_2')] })).toMatchObject({
        ok: true,
        existingUse: null,
      });
    });
  });
});

describe('isReusableRequest', () => {
  const reusable = (over: Partial<Parameters<typeof isReusableRequest>[0]> = {}) =>
    isReusableRequest({ request, resolution: null, used: false, proposal, now: at(10), ...over });

  describe('when the request is pending', () => {
    it('is reused for the same payload, requester, server and tool', () => {
      expect(reusable()).toBe(true);
    });

    it('is not reused for another payload or requester', () => {
      expect(reusable({ proposal: { ...proposal, payload_hash: 'c'.repeat(64) } })).toBe(false);
      expect(reusable({ proposal: { ...proposal, requester: 'agent:x' } })).toBe(false);
    });

    it('is reused for the same requester in another spelling', () => {
      expect(reusable({ proposal: { ...proposal, requester: 'agent:BILLING' } })).toBe(true);
    });

    it('is not reused once expired', () => {
      expect(reusable({ now: at(3600) })).toBe(false);
    });
  });

  describe('when the request was answered', () => {
    it('is reused while a window approval is open', () => {
      expect(reusable({ resolution: approved({ validity: 'window' }) })).toBe(true);
      expect(reusable({ resolution: approved({ validity: 'window' }), now: at(700) })).toBe(false);
    });

    it('is never reused after a denial, or a single-use approval once used', () => {
      expect(
        reusable({
          resolution: approved({
            resolution: 'denied',
            validity: null,
            window_seconds: null,
            valid_until: null,
          }),
        }),
      ).toBe(false);
      expect(reusable({ resolution: approved(), used: true })).toBe(false);
    });

    it('is reused while a single-use approval is unused and open, so it survives the gateway that asked', () => {
      expect(reusable({ resolution: approved() })).toBe(true);
      expect(reusable({ resolution: approved(), now: at(700) })).toBe(false);
    });
  });
});
