import { createVerifierRegistry, runVerifiers, type VerificationOutcome } from '@vouch/verifier-sdk';
import { fakeCarrier } from './fake-carrier';
import { orderShipped } from './order-shipped';

/** Register the verifier, then verify one observation the way the Vouch server does. */
export async function verifyShipment(orderId: string): Promise<VerificationOutcome> {
  const registry = createVerifierRegistry([
    {
      verifier: orderShipped,
      options: { carrierUrl: 'https://carrier.example' },
      grants: {
        fetch: fakeCarrier({ 'ord-1': { state: 'delivered' }, 'ord-2': { state: 'label_created' } }),
      },
    },
  ]);

  return runVerifiers({
    registry,
    proposal: {
      id: 'prp_1',
      action: 'order.ship',
      target: { kind: 'order', id: orderId, env: 'production' },
      arguments: { carrier: 'acme' },
      postconditions: [{ name: 'order.shipped' }],
      requester: 'agent:fulfilment',
      server_id: 'shop-mcp',
      tool_name: 'ship_order',
    },
    // The shop's tool says it shipped. That is a claim; the carrier is the independent source.
    observation: {
      id: 'obs_1',
      outcome: 'succeeded',
      result: { ok: true },
      server_id: 'shop-mcp',
      tool_name: 'ship_order',
      executed_by: 'agent:fulfilment',
    },
  });
}
