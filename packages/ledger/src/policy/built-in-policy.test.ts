import { describe, expect, it } from 'vitest';
import type { ProposalPayload, ToolRecord } from '../records/types';
import { evaluatePolicy, type PolicyInput, stricter } from './built-in-policy';

const tool = (over: Partial<ToolRecord> = {}): ToolRecord => ({
  id: 'tool_1',
  server_id: 'payments',
  tool_name: 'refund',
  version: 1,
  side_effect: 'compensatable',
  required_scopes: ['payments:write'],
  allowed_environments: ['staging', 'prod'],
  dry_run_tool: null,
  compensation_tool: null,
  approval_required: false,
  requires_target_id: true,
  max_approval_window_seconds: null,
  source: 'manual',
  registered_by: 'user:ops',
  registered_at: '2026-01-01T00:00:00.000Z',
  ...over,
});

const proposal = (over: Partial<ProposalPayload> = {}): ProposalPayload & { requester: string } => ({
  action: 'refund',
  server_id: 'payments',
  tool_name: 'refund',
  target: { kind: 'payment', id: 'pay_1', env: 'prod' },
  arguments: { amount: 5 },
  side_effect: 'compensatable',
  preconditions: [],
  postconditions: [],
  impact: null,
  requester: 'agent:billing',
  ...over,
});

const caller = { scopes: ['payments:write'], environments: null };

const evaluate = (over: Partial<PolicyInput> = {}) =>
  evaluatePolicy({ proposal: proposal(), tool: tool(), caller, ...over });

const codes = (input: Partial<PolicyInput>) => evaluate(input).reasons.map((r) => r.code);

describe('evaluatePolicy', () => {
  describe('when every rule is met', () => {
    it('allows and authorizes the requester', () => {
      const result = evaluate();
      expect(result.verdict).toBe('allow');
      expect(result.authorized_identity).toBe('agent:billing');
      expect(result.reasons.map((r) => r.code)).toEqual(['POLICY_SATISFIED']);
      expect(result.repair).toBeNull();
    });
  });

  describe('when the tool is not registered', () => {
    it('denies with TOOL_NOT_REGISTERED and authorizes nobody', () => {
      const result = evaluate({ tool: null });
      expect(result.verdict).toBe('deny');
      expect(result.authorized_identity).toBeNull();
      expect(result.reasons.map((r) => r.code)).toContain('TOOL_NOT_REGISTERED');
    });

    it('treats the unknown tool as irreversible too', () => {
      expect(codes({ tool: null, proposal: proposal({ side_effect: 'read_only' }) })).toContain(
        'IRREVERSIBLE',
      );
    });
  });

  describe('when the key lacks a required scope', () => {
    it('denies with MISSING_SCOPES naming each missing scope', () => {
      const result = evaluate({
        tool: tool({ required_scopes: ['payments:write', 'payments:refund'] }),
        caller: { scopes: [], environments: null },
      });
      expect(result.verdict).toBe('deny');
      expect(result.reasons.find((r) => r.code === 'MISSING_SCOPES')?.details).toEqual({
        missing: ['payments:write', 'payments:refund'],
      });
    });
  });

  describe('when the environment is not allowed', () => {
    it('denies with ENVIRONMENT_NOT_ALLOWED when the tool forbids it', () => {
      const result = evaluate({ proposal: proposal({ target: { kind: 'payment', id: 'p', env: 'dev' } }) });
      expect(result.verdict).toBe('deny');
      expect(result.reasons.map((r) => r.code)).toContain('ENVIRONMENT_NOT_ALLOWED');
    });

    it('denies with CALLER_ENVIRONMENT_NOT_ALLOWED when the key forbids it', () => {
      const result = evaluate({ caller: { scopes: ['payments:write'], environments: ['staging'] } });
      expect(result.verdict).toBe('deny');
      expect(result.reasons.map((r) => r.code)).toEqual(['CALLER_ENVIRONMENT_NOT_ALLOWED']);
    });

    it('allows any environment when the tool sets no list', () => {
      expect(
        evaluate({
          tool: tool({ allowed_environments: null }),
          proposal: proposal({ target: { kind: 'payment', id: 'p', env: 'dev' } }),
        }).verdict,
      ).toBe('allow');
    });
  });

  describe('when the target is ambiguous', () => {
    it('denies a target with no environment even for a tool that would need approval', () => {
      const result = evaluate({
        tool: tool({ approval_required: true }),
        proposal: proposal({ target: { kind: 'payment', id: 'pay_1', env: null } }),
      });
      expect(result.verdict).toBe('deny');
      expect(result.authorized_identity).toBeNull();
      expect(result.reasons.map((r) => r.code)).toEqual(['TARGET_ENV_MISSING', 'APPROVAL_REQUIRED']);
    });

    it('denies a missing target id the tool needs', () => {
      expect(codes({ proposal: proposal({ target: { kind: 'payment', id: null, env: 'prod' } }) })).toEqual([
        'TARGET_ID_MISSING',
      ]);
    });

    it('accepts a missing target id when the tool does not need one', () => {
      const result = evaluate({
        tool: tool({ requires_target_id: false }),
        proposal: proposal({ target: { kind: 'payment', id: null, env: 'prod' } }),
      });
      expect(result.verdict).toBe('allow');
    });

    it('offers a repair pinned to the only environment possible', () => {
      const result = evaluate({
        tool: tool({ allowed_environments: ['staging', 'prod'] }),
        caller: { scopes: ['payments:write'], environments: ['staging'] },
        proposal: proposal({ target: { kind: 'payment', id: 'pay_1', env: null } }),
      });
      expect(result.verdict).toBe('deny');
      expect(result.repair).toMatchObject({
        kind: 'pin_environment',
        tool_name: 'refund',
        target: { kind: 'payment', id: 'pay_1', env: 'staging' },
      });
    });

    it('offers no repair when several environments are possible', () => {
      expect(
        evaluate({ proposal: proposal({ target: { kind: 'payment', id: 'p', env: null } }) }).repair,
      ).toBeNull();
    });

    it('offers no pinned repair when another rule also denies', () => {
      const result = evaluate({
        tool: tool({ allowed_environments: ['prod'] }),
        caller: { scopes: [], environments: null },
        proposal: proposal({ target: { kind: 'payment', id: 'p', env: null } }),
      });
      expect(result.repair).toBeNull();
    });
  });

  describe('when several rules fail at once', () => {
    it('collects every reason, not just the first', () => {
      expect(
        codes({
          tool: tool({ required_scopes: ['x'], allowed_environments: ['staging'] }),
          caller: { scopes: [], environments: ['staging'] },
          proposal: proposal({ target: { kind: 'payment', id: null, env: 'prod' } }),
        }),
      ).toEqual([
        'ENVIRONMENT_NOT_ALLOWED',
        'CALLER_ENVIRONMENT_NOT_ALLOWED',
        'TARGET_ID_MISSING',
        'MISSING_SCOPES',
      ]);
    });
  });

  describe('when the action is irreversible or approval-required', () => {
    it('requires approval for an irreversible tool', () => {
      const result = evaluate({ tool: tool({ side_effect: 'irreversible' }) });
      expect(result.verdict).toBe('require_approval');
      expect(result.authorized_identity).toBe('agent:billing');
      expect(result.reasons.map((r) => r.code)).toEqual(['SIDE_EFFECT_UNDERSTATED', 'IRREVERSIBLE']);
    });

    it('requires approval when the proposal itself says irreversible', () => {
      expect(evaluate({ proposal: proposal({ side_effect: 'irreversible' }) }).verdict).toBe(
        'require_approval',
      );
    });

    it('requires approval for an approval-required tool', () => {
      expect(codes({ tool: tool({ approval_required: true }) })).toEqual(['APPROVAL_REQUIRED']);
    });

    it('proposes the dry run first when the approver would see no impact estimate', () => {
      const result = evaluate({
        tool: tool({ side_effect: 'irreversible', dry_run_tool: 'refund_preview' }),
      });
      expect(result.verdict).toBe('repair');
      expect(result.authorized_identity).toBeNull();
      expect(result.repair).toMatchObject({
        kind: 'dry_run_first',
        tool_name: 'refund_preview',
        target: { kind: 'payment', id: 'pay_1', env: 'prod' },
        arguments: { amount: 5 },
      });
    });

    it('requires approval once an impact estimate is there', () => {
      const result = evaluate({
        tool: tool({ side_effect: 'irreversible', dry_run_tool: 'refund_preview' }),
        proposal: proposal({ impact: { rows_affected: 1 } }),
      });
      expect(result.verdict).toBe('require_approval');
      expect(result.repair).toBeNull();
    });
  });
});

describe('stricter', () => {
  describe('when two classes differ', () => {
    it('returns the more dangerous one whichever comes first', () => {
      expect(stricter('read_only', 'irreversible')).toBe('irreversible');
      expect(stricter('compensatable', 'idempotent')).toBe('compensatable');
    });
  });
});
