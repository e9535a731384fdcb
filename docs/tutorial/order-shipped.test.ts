import { VerifierTester } from '@vouch/verifier-sdk/testing';
import { describe, it } from 'vitest';
import { fakeCarrier } from './fake-carrier';
import { orderShipped } from './order-shipped';

const carrier = fakeCarrier({
  'ord-1': { state: 'in_transit', tracking: '1Z999' },
  'ord-2': { state: 'label_created' },
  'ord-3': {},
  'ord-4': 503,
});
const order = (id: string) => ({ target: { kind: 'order', id, env: 'test' } });
const options = { carrierUrl: 'https://carrier.example' };

new VerifierTester({ describe, it, grants: { fetch: carrier } }).run('acme/order-shipped', orderShipped, {
  pass: [{ name: 'an order in transit', options, proposal: order('ord-1') }],
  fail: [
    { name: 'a label but no parcel', options, proposal: order('ord-2') },
    { name: 'an order the carrier never saw', options, proposal: order('ord-9') },
  ],
  inconclusive: [
    { name: 'a shipment without a state', options, proposal: order('ord-3'), reason: 'STATE_MISSING' },
    { name: 'the carrier is down', options, proposal: order('ord-4'), reason: 'SOURCE_UNAVAILABLE' },
    { name: 'no fetch granted', options, proposal: order('ord-1'), grants: {}, reason: 'GRANT_MISSING' },
  ],
  invalidOptions: [
    { name: 'no carrier URL', options: {}, field: '/options/carrierUrl' },
    {
      name: 'a carrier URL that is not a URL',
      options: { carrierUrl: 'carrier' },
      field: '/options/carrierUrl',
    },
    { name: 'a misspelt option', options: { ...options, sorce: 'x' }, field: '/options' },
  ],
});
