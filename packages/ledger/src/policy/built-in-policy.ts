import {
  type JsonObject,
  type PolicyReason,
  type ProposalPayload,
  type Repair,
  SIDE_EFFECT_CLASSES,
  type SideEffectClass,
  type ToolRecord,
  type Verdict,
} from '../records/types';

/** Every reason the built-in policy can give; stable, so gateways and dashboards can key on them. */
export const POLICY_REASON_CODES = [
  'TOOL_NOT_REGISTERED',
  'MISSING_SCOPES',
  'ENVIRONMENT_NOT_ALLOWED',
  'CALLER_ENVIRONMENT_NOT_ALLOWED',
  'TARGET_ENV_MISSING',
  'TARGET_ID_MISSING',
  'SIDE_EFFECT_UNDERSTATED',
  'IRREVERSIBLE',
  'APPROVAL_REQUIRED',
  'DRY_RUN_FIRST',
  'POLICY_SATISFIED',
] as const;

/** One of {@link POLICY_REASON_CODES}. */
export type PolicyReasonCode = (typeof POLICY_REASON_CODES)[number];

/** What the built-in policy reads: the proposal, the tool's registration (if any) and the caller's key. */
export interface PolicyInput {
  proposal: ProposalPayload & { requester: string };
  /** The latest registration of `server_id` + `tool_name` in the proposal's log, or null. */
  tool: ToolRecord | null;
  caller: { scopes: readonly string[]; environments: readonly string[] | null };
}

/** The built-in policy's conclusion: a verdict and every reason behind it. */
export interface PolicyResult {
  verdict: Verdict;
  reasons: PolicyReason[];
  repair: Repair | null;
  authorized_identity: string | null;
}

/**
 * The built-in policy, a pure function: unregistered tool, missing scopes, an environment
 * the tool or the key does not allow, and an ambiguous target each deny; an irreversible
 * or approval-required tool needs a human. Every reason is collected, not just the first,
 * so a gateway can fix everything at once.
 *
 * An ambiguous target is denied even when a human might approve it: an approver who is
 * not told which environment an action hits cannot approve what will actually happen.
 *
 * @example
 * const { verdict, reasons } = evaluatePolicy({ proposal, tool: null, caller: { scopes: [], environments: null } });
 * // verdict 'deny', reasons[0].code 'TOOL_NOT_REGISTERED'
 */
export function evaluatePolicy(input: PolicyInput): PolicyResult {
  const { proposal, tool, caller } = input;
  const reasons: PolicyReason[] = [];
  const env = proposal.target.env;

  if (!tool) {
    reasons.push(
      reason('TOOL_NOT_REGISTERED', 'deny', `${proposal.server_id}/${proposal.tool_name} is not registered`, {
        server_id: proposal.server_id,
        tool_name: proposal.tool_name,
      }),
    );
  }
  if (env === null || env === '') {
    reasons.push(
      reason(
        'TARGET_ENV_MISSING',
        'deny',
        'the target names no environment, so nobody can tell where it acts',
      ),
    );
  } else {
    if (tool?.allowed_environments && !tool.allowed_environments.includes(env)) {
      reasons.push(
        reason('ENVIRONMENT_NOT_ALLOWED', 'deny', `the tool is not allowed in environment ${env}`, {
          env,
          allowed: tool.allowed_environments,
        }),
      );
    }
    if (caller.environments && !caller.environments.includes(env)) {
      reasons.push(
        reason(
          'CALLER_ENVIRONMENT_NOT_ALLOWED',
          'deny',
          `the requester's key may not act in environment ${env}`,
          {
            env,
            allowed: [...caller.environments],
          },
        ),
      );
    }
  }
  if ((tool?.requires_target_id ?? true) && (proposal.target.id === null || proposal.target.id === '')) {
    reasons.push(reason('TARGET_ID_MISSING', 'deny', `the target names no ${proposal.target.kind} id`));
  }
  if (tool) {
    const missing = tool.required_scopes.filter((scope) => !caller.scopes.includes(scope));
    if (missing.length > 0) {
      reasons.push(
        reason('MISSING_SCOPES', 'deny', `the requester's key lacks ${missing.join(', ')}`, { missing }),
      );
    }
  }

  // The registry speaks for the tool, the proposal for the call: the stricter class applies,
  // so a proposal cannot talk an irreversible tool down to read_only.
  const registered = tool?.side_effect ?? 'irreversible';
  const effective = stricter(registered, proposal.side_effect);
  if (tool && rank(proposal.side_effect) < rank(tool.side_effect)) {
    reasons.push(
      reason(
        'SIDE_EFFECT_UNDERSTATED',
        'note',
        `the proposal says ${proposal.side_effect}; the tool is registered ${tool.side_effect}, which applies`,
        { proposed: proposal.side_effect, registered: tool.side_effect },
      ),
    );
  }
  const needsApproval = effective === 'irreversible' || tool?.approval_required === true;
  if (effective === 'irreversible') {
    reasons.push(reason('IRREVERSIBLE', 'require_approval', 'an irreversible action needs a human approval'));
  }
  if (tool?.approval_required) {
    reasons.push(
      reason('APPROVAL_REQUIRED', 'require_approval', 'the tool is registered as approval-required'),
    );
  }
  // An approver shown no impact estimate approves blind; the tool's dry run gives one.
  if (needsApproval && tool?.dry_run_tool && proposal.impact === null) {
    reasons.push(
      reason('DRY_RUN_FIRST', 'repair', `run ${tool.dry_run_tool} first so the approver sees the impact`, {
        dry_run_tool: tool.dry_run_tool,
      }),
    );
  }

  const verdict = verdictOf(reasons);
  if (verdict === 'allow')
    reasons.push(reason('POLICY_SATISFIED', 'allow', 'every rule of the policy is met'));
  return {
    verdict,
    reasons,
    repair: repairFor(verdict, reasons, input),
    authorized_identity: verdict === 'allow' || verdict === 'require_approval' ? proposal.requester : null,
  };
}

/** The stricter of two side-effect classes. */
export function stricter(a: SideEffectClass, b: SideEffectClass): SideEffectClass {
  return rank(a) >= rank(b) ? a : b;
}

function rank(value: SideEffectClass): number {
  return SIDE_EFFECT_CLASSES.indexOf(value);
}

function verdictOf(reasons: readonly PolicyReason[]): Verdict {
  const effects = new Set(reasons.map((r) => r.effect));
  if (effects.has('deny')) return 'deny';
  if (effects.has('repair')) return 'repair';
  if (effects.has('require_approval')) return 'require_approval';
  return 'allow';
}

function repairFor(verdict: Verdict, reasons: readonly PolicyReason[], input: PolicyInput): Repair | null {
  const { proposal, tool, caller } = input;
  if (verdict === 'repair' && tool?.dry_run_tool) {
    return {
      kind: 'dry_run_first',
      action: proposal.action,
      server_id: proposal.server_id,
      tool_name: tool.dry_run_tool,
      target: proposal.target,
      arguments: proposal.arguments,
      message: `propose ${tool.dry_run_tool} first, then this action again with its impact estimate`,
    };
  }
  if (verdict !== 'deny') return null;
  // Pin the environment only when exactly one is possible: guessing among several would be
  // the policy choosing where an action lands, which is the ambiguity we deny.
  const denials = reasons.filter((r) => r.effect === 'deny');
  if (denials.length !== 1 || denials[0]!.code !== 'TARGET_ENV_MISSING' || !tool) return null;
  const candidates = intersect(tool.allowed_environments, caller.environments);
  if (candidates === null || candidates.length !== 1) return null;
  const env = candidates[0]!;
  return {
    kind: 'pin_environment',
    action: proposal.action,
    server_id: proposal.server_id,
    tool_name: proposal.tool_name,
    target: { ...proposal.target, env },
    arguments: proposal.arguments,
    message: `propose the same action with the target pinned to ${env}`,
  };
}

function intersect(a: readonly string[] | null, b: readonly string[] | null): string[] | null {
  if (a === null) return b === null ? null : [...b];
  return b === null ? [...a] : a.filter((x) => b.includes(x));
}

function reason(
  code: PolicyReasonCode,
  effect: PolicyReason['effect'],
  message: string,
  details?: JsonObject,
): PolicyReason {
  return details === undefined ? { code, effect, message } : { code, effect, message, details };
}
