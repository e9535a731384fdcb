import { VerifierTester } from '@vouch/verifier-sdk/testing';
import { describe, it } from 'vitest';
import { fakeCarrier } from './fake-carrier';
import { orderDelivered } from './order-delivered';

const carrier = fakeCarrier({
  'ord-1': { state: 'delivered', recipient: 'Ada' },
  'ord-2': { state: 'delivered', recipient: 'Bob' },
  'ord-3': { state: 'delivered' },
  'ord-4': 503,
});
const order = (id: string) => ({
  target: { kind: 'order', id, env: 'test' },
  arguments: { recipient: 'Ada' },
});
const options = { carrierUrl: 'https://carrier.example' };

new VerifierTester({ describe, it, grants: { fetch: carrier } }).run('acme/order-delivered', orderDelivered, {
  pass: [{ name: 'delivered to the recipient', options, proposal: order('ord-1') }],
  fail: [{ name: 'delivered to someone else', options, proposal: order('ord-2') }],
  inconclusive: [
    { name: 'no recipient in the answer', options, proposal: order('ord-3'), reason: 'CONDITION_ERROR' },
    { name: 'the carrier is down', options, proposal: order('ord-4'), reason: 'SOURCE_UNAVAILABLE' },
  ],
});
