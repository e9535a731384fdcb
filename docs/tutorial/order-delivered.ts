import {
  type CheckResult,
  celCondition,
  defineVerifier,
  type JsonValue,
  sourceUnavailable,
  VERIFIER_API_VERSION,
} from '@vouch/verifier-sdk';
import { z } from 'zod';

// Compiled once, when the module loads: a typo fails there with CONDITION_INVALID, not per check.
const delivered = celCondition(
  'observed.state == "delivered" && observed.recipient == proposal.arguments.recipient',
);

/** Asks the carrier whether the parcel reached the recipient the agent named; the rule is CEL. */
export const orderDelivered = defineVerifier({
  id: 'acme/order-delivered',
  version: '1.0.0',
  apiVersion: VERIFIER_API_VERSION,
  description: 'Checks with the carrier that an order was delivered to its recipient.',
  handles: ['order.delivered'],
  options: z.object({ carrierUrl: z.url(), source: z.string().min(1).default('carrier-api') }).strict(),
  requires: ['fetch'],
  async check({ proposal, observation, postcondition, options, fetch, signal }): Promise<CheckResult> {
    const url = `${options.carrierUrl}/shipments/${encodeURIComponent(proposal.target.id)}`;
    const response = await fetch!(url, { signal, headers: { accept: 'application/json' } });
    if (!response.ok) {
      throw sourceUnavailable(`the carrier answered ${response.status}`, {
        evidence: { url, status: response.status },
      });
    }
    const shipment = (await response.json()) as JsonValue;
    // pass when true, fail when false; a missing field or a non-bool is inconclusive, never fail.
    const verdict = delivered.evaluate({
      observed: shipment,
      params: postcondition.params,
      proposal,
      observation,
    });
    return {
      name: postcondition.name,
      source: options.source,
      observed: shipment,
      ...verdict,
      evidence: { url, ...verdict.evidence },
    };
  },
});
