import type { Observation, Postcondition, Proposal } from '../records';

/**
 * A proposal for tests: a refund of payment `pay_123` in `test`, proposed to the tool server
 * `example-tool-server`. Top-level keys of `overrides` replace the defaults.
 */
export function exampleProposal(overrides: Partial<Proposal> = {}): Proposal {
  return {
    id: 'prp_example',
    action: 'refund.create',
    target: { kind: 'payment', id: 'pay_123', env: 'test' },
    arguments: { payment_id: 'pay_123', amount: 1250, currency: 'EUR' },
    postconditions: [],
    requester: 'agent:example',
    server_id: 'example-tool-server',
    tool_name: 'create_refund',
    ...overrides,
  };
}

/** The observation of that proposal: the tool said it succeeded. Top-level keys of `overrides` replace the defaults. */
export function exampleObservation(overrides: Partial<Observation> = {}): Observation {
  return {
    id: 'obs_example',
    outcome: 'succeeded',
    result: { status: 200, refund_id: 're_456' },
    server_id: 'example-tool-server',
    tool_name: 'create_refund',
    executed_by: 'agent:example',
    ...overrides,
  };
}

/** A fixed clock for tests: 2025-01-01T00:00:00Z. */
export function fixedNow(): Date {
  return new Date('2025-01-01T00:00:00.000Z');
}

/** `{ name }` from a name, or the postcondition itself. */
export function toPostcondition(value: Postcondition | string): Postcondition {
  return typeof value === 'string' ? { name: value } : value;
}
