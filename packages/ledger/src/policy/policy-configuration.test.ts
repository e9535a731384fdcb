import { describe, expect, it } from 'vitest';
import {
  canonicalPolicy,
  decisionSourceBreak,
  type PolicyConfiguration,
  pinnedPolicyOf,
  samePolicy,
} from './policy-configuration';

const opa: PolicyConfiguration = {
  engine: 'external',
  decisions: 'asked',
  decision_url: 'https://opa.internal:8181/v1/data/vouch/decision',
  identity: 'service:opa',
  source: 'opa',
};
const builtIn = { source: 'built_in', decided_by: 'policy:built_in' };
const byOpa = { source: 'opa', decided_by: 'service:opa' };

describe('decisionSourceBreak: the one rule of the pinned policy', () => {
  it('judges nothing where nothing was pinned', () => {
    expect(decisionSourceBreak(undefined, byOpa)).toBeNull();
    expect(decisionSourceBreak(undefined, builtIn)).toBeNull();
  });

  it('under the built-in policy, accepts only built-in decisions (either field claiming it counts)', () => {
    const pinned: PolicyConfiguration = { engine: 'built_in' };
    expect(decisionSourceBreak(pinned, builtIn)).toBeNull();
    expect(decisionSourceBreak(pinned, byOpa)).toMatch(/built-in one/);
    // Half a built-in claim is re-derived as the built-in policy's (built-in-decisions.ts), not refused here.
    expect(decisionSourceBreak(pinned, { source: 'opa', decided_by: 'policy:built_in' })).toBeNull();
  });

  it('under an engine that posts, accepts any source but the built-in policy', () => {
    const pinned: PolicyConfiguration = { engine: 'external', decisions: 'posted' };
    expect(decisionSourceBreak(pinned, byOpa)).toBeNull();
    expect(decisionSourceBreak(pinned, { source: 'cedar', decided_by: 'service:cedar' })).toBeNull();
    expect(decisionSourceBreak(pinned, builtIn)).toMatch(/external engine/);
  });

  it('under an engine the server asks, accepts only its identity (canonical form) and source', () => {
    expect(decisionSourceBreak(opa, byOpa)).toBeNull();
    expect(decisionSourceBreak(opa, { source: 'opa', decided_by: 'SERVICE:OPA' })).toBeNull();
    expect(decisionSourceBreak(opa, { source: 'rego', decided_by: 'service:opa' })).toMatch(/service:opa/);
    expect(decisionSourceBreak(opa, { source: 'opa', decided_by: 'service:other' })).toMatch(/service:opa/);
    expect(decisionSourceBreak(opa, builtIn)).toMatch(/external engine/);
  });

  it('refuses every decision under a pin that cannot be read', () => {
    expect(decisionSourceBreak(null, builtIn)).toMatch(/no readable policy/);
  });
});

describe('the canonical configuration', () => {
  it("keeps no secret of the engine's URL: no credentials, query or fragment", () => {
    const pinned = canonicalPolicy({
      ...opa,
      decision_url: 'https://u:secret@OPA.internal:443/v1/d?token=t#x',
    });
    expect(pinned).toMatchObject({ decision_url: 'https://opa.internal/v1/d' });
    expect(JSON.stringify(pinned)).not.toMatch(/secret|token/);
  });

  it('compares configurations by their canonical form', () => {
    expect(samePolicy(opa, { ...opa, decision_url: `${opa.decision_url}?x=1` })).toBe(true);
    expect(samePolicy(opa, { ...opa, source: 'rego' })).toBe(false);
    expect(samePolicy({ engine: 'built_in' }, { engine: 'external', decisions: 'posted' })).toBe(false);
  });

  it('reads back exactly the payloads the server writes, and nothing else', () => {
    for (const policy of [opa, { engine: 'built_in' }, { engine: 'external', decisions: 'posted' }]) {
      expect(pinnedPolicyOf({ format: 'policy/1', policy })).toEqual(policy);
    }
    expect(pinnedPolicyOf({ format: 'policy/2', policy: { engine: 'built_in' } })).toBeNull();
    expect(pinnedPolicyOf({ format: 'policy/1', policy: { engine: 'built_in', extra: 1 } })).toBeNull();
    expect(pinnedPolicyOf({ format: 'policy/1', policy: { ...opa, source: 'built_in' } })).toBeNull();
    expect(pinnedPolicyOf({ format: 'policy/1', policy: { ...opa, identity: '' } })).toBeNull();
    expect(pinnedPolicyOf('built_in')).toBeNull();
  });
});
