import type { PolicyConfiguration } from '@vouch/ledger';
import type { PolicySettings } from '../settings/server-settings';

/**
 * The policy a server pins in each log it decides in (docs/chain.md, "The policy is
 * pinned"), from its settings: the built-in policy, an external engine posting its decisions,
 * or the engine it asks, by its URL (origin and path: no credentials, query or token), the
 * identity its decisions are recorded by and their source label.
 */
export function pinnedPolicyOf(policy: PolicySettings): PolicyConfiguration {
  if (policy.engine === 'built_in') return { engine: 'built_in' };
  if (!('decisionUrl' in policy)) return { engine: 'external', decisions: 'posted' };
  const { origin, pathname } = new URL(policy.decisionUrl);
  return {
    engine: 'external',
    decisions: 'asked',
    decision_url: `${origin}${pathname}`,
    identity: policy.identity,
    source: policy.source,
  };
}
