import {
  type CheckResult,
  defineVerifier,
  sourceUnavailable,
  VERIFIER_API_VERSION,
} from '@vouch/verifier-sdk';
import { z } from 'zod';

/** Checks with the carrier, not with the shop that claims it shipped, that an order left the warehouse. */
export const orderShipped = defineVerifier({
  // Third-party verifiers are named vendor/name; unprefixed ids belong to Vouch's built-ins.
  id: 'acme/order-shipped',
  version: '1.0.0',
  apiVersion: VERIFIER_API_VERSION,
  description: "Asks the carrier's tracking API whether an order has shipped.",
  handles: ['order.shipped'],
  options: z
    .object({
      carrierUrl: z.url(),
      // The name recorded as the check's source: the system we read, not the one that wrote.
      source: z.string().min(1).default('carrier-api'),
    })
    .strict(),
  timeoutMs: 3_000,
  requires: ['fetch'],
  // Annotating the return type makes TypeScript check every result against the contract.
  async check({ proposal, postcondition, options, fetch, signal }): Promise<CheckResult> {
    const url = `${options.carrierUrl}/shipments/${encodeURIComponent(proposal.target.id)}`;
    // Pass the signal on: the host aborts it at the deadline and when the request is cancelled.
    const response = await fetch!(url, { signal, headers: { accept: 'application/json' } });

    if (response.status === 404) {
      return {
        name: postcondition.name,
        status: 'fail',
        source: options.source,
        observed: { shipment: null },
        expected: { state: 'shipped' },
        evidence: { url, status: 404 },
        message: 'the carrier has no shipment for this order',
      };
    }
    if (!response.ok) {
      // Could not read the source: never a "fail". The host records SOURCE_UNAVAILABLE.
      throw sourceUnavailable(`the carrier answered ${response.status}`, {
        evidence: { url, status: response.status },
      });
    }

    const shipment = (await response.json()) as { state?: unknown; tracking?: unknown };
    if (typeof shipment.state !== 'string') {
      return {
        name: postcondition.name,
        status: 'inconclusive',
        source: options.source,
        reason: 'STATE_MISSING',
        evidence: { url },
        message: 'the carrier did not say which state the shipment is in',
      };
    }
    const shipped = shipment.state === 'in_transit' || shipment.state === 'delivered';
    return {
      name: postcondition.name,
      status: shipped ? 'pass' : 'fail',
      source: options.source,
      observed: { state: shipment.state },
      expected: { state: ['in_transit', 'delivered'] },
      evidence: { url, tracking: typeof shipment.tracking === 'string' ? shipment.tracking : null },
      message: shipped ? 'the carrier has the parcel' : `the shipment is ${shipment.state}`,
    };
  },
});
