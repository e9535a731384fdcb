import { describe, expect, it } from 'vitest';
import type { ApprovalView, ProposalRecord } from './api-types';
import { approvalStateOf } from './approval-state';

const now = new Date('2026-01-01T12:00:00.000Z');
const proposal = {
  id: 'prp_1',
  requester: 'agent:a',
  server_id: 's',
  tool_name: 't',
  payload_hash: 'a'.repeat(64),
} as ProposalRecord;

function view(
  overrides: { request?: object; resolution?: object | null; uses?: object[] } = {},
): ApprovalView {
  return {
    request: {
      id: 'apr_1',
      proposal_id: 'prp_1',
      payload_hash: 'a'.repeat(64),
      requester: 'agent:a',
      server_id: 's',
      tool_name: 't',
      environment: 'prod',
      expires_at: '2026-01-01T13:00:00.000Z',
      max_window_seconds: 3600,
      requested_at: '2026-01-01T11:00:00.000Z',
      ...overrides.request,
    },
    resolution:
      overrides.resolution === null
        ? null
        : ({
            id: 'res_1',
            request_id: 'apr_1',
            resolution: 'approved',
            resolver: 'user:b',
            validity: 'once',
            window_seconds: null,
            window_source: null,
            valid_until: null,
            comment: null,
            resolved_at: '2026-01-01T11:30:00.000Z',
            ...overrides.resolution,
          } as ApprovalView['resolution']),
    uses: (overrides.uses ?? []) as ApprovalView['uses'],
    status: 'approved',
  };
}

describe('approvalStateOf', () => {
  describe('when the approval is for this payload, requester, server and tool', () => {
    it('is approved', () => expect(approvalStateOf(view(), proposal, now)).toBe('approved'));
  });
  describe('when the approver saw another payload', () => {
    it('is payload_mismatch', () =>
      expect(approvalStateOf(view({ request: { payload_hash: 'b'.repeat(64) } }), proposal, now)).toBe(
        'payload_mismatch',
      ));
  });
  describe('when the request is another requester, server or tool', () => {
    it('is scope_mismatch', () => {
      expect(approvalStateOf(view({ request: { requester: 'agent:z' } }), proposal, now)).toBe(
        'scope_mismatch',
      );
      expect(approvalStateOf(view({ request: { tool_name: 'other' } }), proposal, now)).toBe(
        'scope_mismatch',
      );
    });
  });
  describe('when nobody answered', () => {
    it('is pending before expiry and expired after', () => {
      expect(approvalStateOf(view({ resolution: null }), proposal, now)).toBe('pending');
      expect(
        approvalStateOf(view({ resolution: null }), proposal, new Date('2026-01-01T13:00:00.000Z')),
      ).toBe('expired');
    });
  });
  describe('when it was denied', () => {
    it('is denied', () =>
      expect(approvalStateOf(view({ resolution: { resolution: 'denied' } }), proposal, now)).toBe('denied'));
  });
  describe('when a single-use approval was used by another proposal', () => {
    it('is consumed', () =>
      expect(approvalStateOf(view({ uses: [{ proposal_id: 'prp_0' }] }), proposal, now)).toBe('consumed'));
  });
  describe('when its window has closed', () => {
    it('is expired', () =>
      expect(
        approvalStateOf(
          view({ resolution: { validity: 'window', valid_until: '2026-01-01T12:00:00.000Z' } }),
          proposal,
          now,
        ),
      ).toBe('expired'));
  });
  describe('when a window approval was used before and is still open', () => {
    it('is approved', () =>
      expect(
        approvalStateOf(
          view({
            resolution: { validity: 'window', valid_until: '2026-01-01T12:30:00.000Z' },
            uses: [{ proposal_id: 'prp_0' }],
          }),
          proposal,
          now,
        ),
      ).toBe('approved'));
  });
});
