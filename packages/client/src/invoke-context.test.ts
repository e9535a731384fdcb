import { describe, expect, it } from 'vitest';
import { createVouchClient } from './client';
import type { InvokeContext } from './execute';
import { createFakeVouch } from './testing/fake-vouch';

// The execute-path guard reads syntax; this is the part types can hold: only execute() makes
// an InvokeContext, so a function that needs one (a gateway's one upstream call) cannot be fed
// a hand-written context, by a fake `execute` or by anyone else, without a cast.
describe('InvokeContext', () => {
  describe('when code other than execute() writes one', () => {
    it('does not compile without a cast, though it holds every field execute() gives', async () => {
      const fake = createFakeVouch();
      const vouch = createVouchClient({ baseUrl: 'http://vouch.test', apiKey: 'k', fetch: fake.fetch });
      let given: InvokeContext | undefined;
      await vouch.execute(
        {
          action: 'refund.issue',
          server_id: 'billing',
          tool_name: 'issue_refund',
          target: { kind: 'order', id: 'A-119', env: 'production' },
          arguments: { order: 'A-119' },
          side_effect: 'compensatable',
        },
        (context) => {
          given = context;
        },
      );
      const real = given!;
      const handWritten = {
        signal: real.signal,
        proposal: real.proposal,
        decision: real.decision,
        approval: real.approval,
        idempotencyKey: real.idempotencyKey,
      };
      // @ts-expect-error only execute() makes an InvokeContext
      const forged: InvokeContext = handWritten;
      expect(forged).toEqual({ ...real });
    });
  });
});
