import { describe, expect, it } from 'vitest';
import type { ApprovalStatus, ApprovalView, ProposalRecord } from './api-types';
import { approvalStateOf } from './approval-state';

const proposal = {
  id: 'prp_1',
  requester: 'agent:a',
  server_id: 's',
  tool_name: 't',
  payload_hash: 'a'.repeat(64),
} as ProposalRecord;

function view(
  status: ApprovalStatus,
  overrides: { request?: object; validity?: 'once' | 'window'; uses?: string[] } = {},
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
      status === 'pending' || status === 'expired'
        ? null
        : {
            id: 'res_1',
            request_id: 'apr_1',
            resolution: status === 'denied' ? 'denied' : 'approved',
            resolver: 'user:b',
            validity: overrides.validity ?? 'once',
            window_seconds: null,
            window_source: null,
            valid_until: '2026-01-01T14:00:00.000Z',
            comment: null,
            resolved_at: '2026-01-01T11:30:00.000Z',
          },
    uses: (overrides.uses ?? []).map((proposalId, i) => ({
      id: `use_${i}`,
      request_id: 'apr_1',
      resolution_id: 'res_1',
      proposal_id: proposalId,
      validity: overrides.validity ?? 'once',
      used_by: 'agent:a',
      used_at: '2026-01-01T12:00:00.000Z',
    })),
    status,
    proposal,
  };
}

describe('approvalStateOf', () => {
  describe('when the approval is for this payload, requester, server and tool', () => {
    it('is approved', () => expect(approvalStateOf(view('approved'), proposal)).toBe('approved'));
  });
  describe('when the approver saw another payload', () => {
    it('is payload_mismatch, whatever the status', () =>
      expect(approvalStateOf(view('approved', { request: { payload_hash: 'b'.repeat(64) } }), proposal)).toBe(
        'payload_mismatch',
      ));
  });
  describe('when the request names the requester in another spelling', () => {
    it('is the same requester (one canonical identity, as the server compares)', () => {
      const requester = proposal.requester.toUpperCase();
      expect(approvalStateOf(view('approved', { request: { requester } }), proposal)).toBe('approved');
    });
  });
  describe('when the request is another requester, server or tool', () => {
    it('is scope_mismatch', () => {
      expect(approvalStateOf(view('approved', { request: { requester: 'agent:z' } }), proposal)).toBe(
        'scope_mismatch',
      );
      expect(approvalStateOf(view('approved', { request: { server_id: 'other' } }), proposal)).toBe(
        'scope_mismatch',
      );
      expect(approvalStateOf(view('approved', { request: { tool_name: 'other' } }), proposal)).toBe(
        'scope_mismatch',
      );
    });
  });
  describe('when the server says pending, denied or expired', () => {
    it('says the same', () => {
      expect(approvalStateOf(view('pending'), proposal)).toBe('pending');
      expect(approvalStateOf(view('denied'), proposal)).toBe('denied');
      expect(approvalStateOf(view('expired'), proposal)).toBe('expired');
    });
  });
  describe('when a single-use approval was used', () => {
    it('is consumed when another proposal used it', () =>
      expect(approvalStateOf(view('used', { uses: ['prp_0'] }), proposal)).toBe('consumed'));
    it('is approved when this proposal claimed it earlier', () =>
      expect(approvalStateOf(view('used', { uses: ['prp_1'] }), proposal)).toBe('approved'));
    it('is consumed even when the server still says approved', () =>
      expect(approvalStateOf(view('approved', { uses: ['prp_0'] }), proposal)).toBe('consumed'));
  });
  describe('when a window approval was used before and is still open', () => {
    it('is approved', () =>
      expect(approvalStateOf(view('approved', { validity: 'window', uses: ['prp_0'] }), proposal)).toBe(
        'approved',
      ));
  });
});
