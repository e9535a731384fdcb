import type { ChainFailure, StoredEvent } from '@vouch/audit';
import {
  decisionSourceBreak,
  POLICY_CONFIGURED_KIND,
  POLICY_ENTITY,
  POLICY_PINNER,
  type PolicyConfiguration,
  pinnedPolicyOf,
} from '../policy/policy-configuration';
import { recordRuleFailure } from './record-rules';
import type { DecisionRecord } from './types';

/** The event kinds the check reads. */
export const POLICY_PIN_KINDS: readonly string[] = [POLICY_CONFIGURED_KIND, 'decision'];

/**
 * `verifyChain`'s side of the pinned policy, from the events in chain order: every decision
 * is judged by the policy the log pinned before it (`decisionSourceBreak`, the rule the
 * server's reads apply), `DECISION_SOURCE_NOT_PINNED` at the decision's seq; a pin that is
 * not one the server writes is `POLICY_CONFIGURATION_INVALID` at its own. `status()`:
 * `pinned` when the log holds a pin and every decision came after one, `not_pinned` when a
 * decision came before any (it was not judged by this rule), `no_decisions` when the log
 * holds neither.
 */
export function createPolicyPinCheck(fail: (failure: ChainFailure) => void) {
  /** undefined: nothing pinned yet; null: a pin that pins nothing readable. */
  let pinned: PolicyConfiguration | null | undefined;
  let unpinnedDecisions = 0;
  let decisions = 0;
  return {
    add(event: StoredEvent): void {
      if (event.kind === POLICY_CONFIGURED_KIND) {
        pinned = pinnedPolicyOf(parsed(event.payload));
        if (pinned === null || event.entity !== POLICY_ENTITY || event.actor !== POLICY_PINNER) {
          fail({
            ...recordRuleFailure(
              event,
              'POLICY_CONFIGURATION_INVALID',
              `is not a pin the server writes (entity ${POLICY_ENTITY}, actor ${POLICY_PINNER}, a readable policy)`,
            ),
            table: 'audit_events',
          });
        }
        return;
      }
      if (event.kind !== 'decision') return;
      decisions++;
      if (pinned === undefined) {
        unpinnedDecisions++;
        return;
      }
      const decision = parsed(event.payload) as Partial<DecisionRecord> | undefined;
      if (typeof decision !== 'object' || decision === null) return; // the record rules report it
      const broken = decisionSourceBreak(pinned, {
        source: String(decision.source),
        decided_by: String(decision.decided_by),
      });
      if (broken !== null) fail(recordRuleFailure(event, 'DECISION_SOURCE_NOT_PINNED', broken));
    },
    status(): 'pinned' | 'not_pinned' | 'no_decisions' {
      if (unpinnedDecisions > 0) return 'not_pinned';
      return pinned === undefined && decisions === 0 ? 'no_decisions' : 'pinned';
    },
  };
}

function parsed(payload: string): unknown {
  try {
    return JSON.parse(payload);
  } catch {
    return undefined; // the chain check reports a payload that is not what was hashed
  }
}
