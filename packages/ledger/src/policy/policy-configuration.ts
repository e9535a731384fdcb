import { canonicalJson, type DsseEnvelope, sameIdentity } from '@vouch/audit';
import { BUILT_IN_POLICY, isBuiltInDecision } from '../records/built-in-decisions';
import type { DecisionRecord } from '../records/types';

/**
 * The policy a server enforces, as it is pinned in a log (docs/chain.md, "The policy is
 * pinned"): the built-in policy; an external engine that posts its decisions (any identity
 * holding a `policy` key, any source but `built_in`); or an external engine the server asks,
 * whose decisions it records by one identity under one source label. No secret: the engine's
 * URL is kept without credentials, query or fragment.
 */
export type PolicyConfiguration =
  | { engine: 'built_in' }
  | { engine: 'external'; decisions: 'posted' }
  | {
      engine: 'external';
      decisions: 'asked';
      /** The engine's decision route: origin and path only. */
      decision_url: string;
      /** Who the recorded decisions are by (`decided_by`). */
      identity: string;
      /** The label of the recorded decisions (`source`). */
      source: string;
    };

/** The event that pins a log's policy; its entity (one per log, indexed by entity). */
export const POLICY_CONFIGURED_KIND = 'policy.configured';
export const POLICY_ENTITY = 'policy';
/** The payload's format, so a later one (with a server signature beside `policy`) is told apart. */
export const POLICY_FORMAT = 'policy/1';
/** Who writes the pin: the server itself; no API key can act as it (identities are `agent:…`, `service:…`, `user:…`). */
export const POLICY_PINNER = 'vouch:server';

/** What the server signs a pin as (claims: the pinned policy, canonical). */
export const PIN_POLICY_ACTION = 'policy.configure';

/** The payload of a `policy.configured` event: the policy, and the server's signature once its key is enrolled. */
export interface PolicyConfiguredPayload {
  format: typeof POLICY_FORMAT;
  policy: PolicyConfiguration;
  signature?: DsseEnvelope;
}

/**
 * The canonical form of `configuration`: only the members its kind has, the URL without
 * credentials, query or fragment. Throws on a URL that does not parse.
 */
export function canonicalPolicy(configuration: PolicyConfiguration): PolicyConfiguration {
  if (configuration.engine === 'built_in') return { engine: 'built_in' };
  if (configuration.decisions === 'posted') return { engine: 'external', decisions: 'posted' };
  const url = new URL(configuration.decision_url);
  return {
    engine: 'external',
    decisions: 'asked',
    decision_url: `${url.origin}${url.pathname}`,
    identity: configuration.identity,
    source: configuration.source,
  };
}

/** Whether two configurations pin the same policy. */
export function samePolicy(a: PolicyConfiguration, b: PolicyConfiguration): boolean {
  return canonicalJson(canonicalPolicy(a)) === canonicalJson(canonicalPolicy(b));
}

/**
 * The configuration a `policy.configured` payload pins, or null when it is not one (a
 * payload the rules cannot read pins nothing that a decision could obey).
 */
export function pinnedPolicyOf(payload: unknown): PolicyConfiguration | null {
  if (!isObject(payload) || payload.format !== POLICY_FORMAT || !isObject(payload.policy)) return null;
  const p = payload.policy;
  const only = (...members: string[]) => Object.keys(p).every((key) => members.includes(key));
  if (p.engine === 'built_in' && only('engine')) return { engine: 'built_in' };
  if (p.engine !== 'external') return null;
  if (p.decisions === 'posted' && only('engine', 'decisions'))
    return { engine: 'external', decisions: 'posted' };
  const strings = [p.decision_url, p.identity, p.source].every((v) => typeof v === 'string' && v !== '');
  if (
    p.decisions !== 'asked' ||
    !strings ||
    !only('engine', 'decisions', 'decision_url', 'identity', 'source')
  )
    return null;
  const asked = p as Extract<PolicyConfiguration, { decisions: 'asked' }>;
  if (asked.source === 'built_in') return null;
  return asked;
}

/**
 * The one rule of the pinned policy, for `verifyChain` and for the server's read checks:
 * why `decision` is not one the policy pinned at its point of the log (`pinned`) gives, or
 * null when it is, or when nothing was pinned (`pinned` undefined: an old install, a ledger
 * used as a library). `pinned` null: a pin that cannot be read, which no decision obeys.
 */
export function decisionSourceBreak(
  pinned: PolicyConfiguration | null | undefined,
  decision: Pick<DecisionRecord, 'source' | 'decided_by'>,
): string | null {
  if (pinned === undefined) return null;
  const what = `decided by ${decision.decided_by} (source ${decision.source})`;
  if (pinned === null) return `${what} under a policy.configured event that pins no readable policy`;
  const builtIn = isBuiltInDecision(decision);
  if (pinned.engine === 'built_in') {
    return builtIn ? null : `${what}, but the policy pinned then is the built-in one (${BUILT_IN_POLICY})`;
  }
  if (builtIn) return `${what}: a built-in decision, but the policy pinned then is an external engine`;
  if (pinned.decisions === 'posted') return null;
  if (decision.source !== pinned.source || !sameIdentity(decision.decided_by, pinned.identity)) {
    return `${what}, but the engine pinned then records its decisions as ${pinned.identity} (source ${pinned.source})`;
  }
  return null;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
