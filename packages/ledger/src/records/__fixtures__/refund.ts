// Test support: the refund tool and proposal the integrity and red-team tests build on.
import type { ProposalInput, ToolInput } from '../inputs';

/** `payments/refund`: compensatable, needs `payments:write`, production (`prod`) only. */
export const refundTool = (over: Partial<ToolInput> = {}): ToolInput => ({
  server_id: 'payments',
  tool_name: 'refund',
  side_effect: 'compensatable',
  required_scopes: ['payments:write'],
  allowed_environments: ['prod'],
  ...over,
});

/** A refund of 5 EUR on `pay_1` in `prod`, under idempotency key `key`. */
export const refund = (key: string, over: Partial<ProposalInput> = {}): ProposalInput => ({
  idempotency_key: key,
  action: 'refund',
  server_id: 'payments',
  tool_name: 'refund',
  target: { kind: 'payment', id: 'pay_1', env: 'prod' },
  arguments: { amount: 5, currency: 'EUR' },
  side_effect: 'compensatable',
  ...over,
});
