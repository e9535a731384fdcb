import { describe, expect, it, vi } from 'vitest';
import type { ProposalRecord } from './api-types';
import { createVouchClient } from './client';
import { isVouchClientError } from './errors';
import type { ExecuteAction, ExecuteOptions, ExecuteResult, Invoke } from './execute';
import { createFakeVouch, type FakeVouch, type FakeVouchOptions } from './testing/fake-vouch';

const refund: ExecuteAction = {
  action: 'refund.issue',
  server_id: 'billing',
  tool_name: 'issue_refund',
  target: { kind: 'order', id: 'A-119', env: 'production' },
  arguments: { order: 'A-119', amount: 4200 },
  side_effect: 'compensatable',
};

// Waits are tiny: the fake answers at once, and every wait is bounded by timeoutMs.
const fast: ExecuteOptions<unknown> = { wait: { timeoutMs: 0, pollIntervalMs: 1, maxPollIntervalMs: 2 } };

function clientOf(fetch: typeof globalThis.fetch) {
  return createVouchClient({
    baseUrl: 'http://vouch.test',
    apiKey: 'k',
    fetch,
    retry: { minDelayMs: 0, maxDelayMs: 0 },
  });
}

function setup(options: FakeVouchOptions = {}, wrap?: (fake: FakeVouch) => typeof fetch) {
  const fake = createFakeVouch(options);
  const client = clientOf(wrap ? wrap(fake) : fake.fetch);
  const invoke = vi.fn<Invoke<{ refund_id: string }>>(async () => ({ refund_id: 'rf_1' }));
  const count = (route: string) => fake.requests.filter((r) => r === route).length;
  return { fake, client, invoke, count };
}

function approvalIdOf(result: ExecuteResult<unknown>): string {
  if (result.status !== 'pending' || !result.decision?.approval_request_id)
    throw new Error('not pending on approval');
  return result.decision.approval_request_id;
}

describe('execute', () => {
  describe('when the policy allows', () => {
    it('invokes once, records a succeeded observation and returns the verification', async () => {
      const { client, invoke, fake } = setup();
      const result = await client.execute(refund, invoke, fast);
      expect(result.status).toBe('executed');
      if (result.status !== 'executed') return;
      expect(result.invoked).toBe(true);
      expect(result.value).toEqual({ refund_id: 'rf_1' });
      expect(result.observation.outcome).toBe('succeeded');
      expect(result.observation.result).toEqual({ refund_id: 'rf_1' });
      expect(result.verification?.status).toBe('passed');
      expect(invoke).toHaveBeenCalledTimes(1);
      expect(fake.observations).toHaveLength(1);
    });

    it('takes two round trips: propose with authorize, observe with verify', async () => {
      const { client, invoke, fake } = setup();
      const result = await client.execute(refund, invoke, fast);
      expect(result.status === 'executed' && result.verification?.status).toBe('passed');
      expect(fake.requests).toEqual(['POST /v1/proposals', 'POST /v1/observations']);
    });

    it('hands invoke the records that authorize it', async () => {
      const { client, invoke } = setup();
      await client.execute(refund, invoke, fast);
      const context = invoke.mock.calls[0]![0];
      expect(context.decision.verdict).toBe('allow');
      expect(context.proposal.arguments).toEqual(refund.arguments);
      expect(context.signal.aborted).toBe(false);
    });
  });

  describe('when the policy denies', () => {
    it('returns every reason and never invokes or observes', async () => {
      const { client, invoke, count } = setup({ decide: () => 'deny' });
      const result = await client.execute(refund, invoke, fast);
      expect(result.status).toBe('denied');
      if (result.status !== 'denied') return;
      expect(result.reasons.map((r) => r.code)).toEqual(['TOOL_NOT_REGISTERED']);
      expect(invoke).not.toHaveBeenCalled();
      expect(count('POST /v1/observations')).toBe(0);
    });
  });

  describe('when the policy answers with a repair', () => {
    it('returns the suggested action and never invokes', async () => {
      const { client, invoke } = setup({ decide: () => 'repair' });
      const result = await client.execute(refund, invoke, fast);
      expect(result.status).toBe('repair');
      if (result.status !== 'repair') return;
      expect(result.repair?.tool_name).toBe('issue_refund_dry_run');
      expect(result.reasons.map((r) => r.code)).toEqual(['DRY_RUN_FIRST']);
      expect(invoke).not.toHaveBeenCalled();
    });
  });

  describe('when an approval is required and nobody answers in time', () => {
    it('returns pending with the approval request and never invokes', async () => {
      const { client, invoke, count } = setup({ decide: () => 'require_approval' });
      const result = await client.execute(refund, invoke, fast);
      expect(result.status).toBe('pending');
      if (result.status !== 'pending') return;
      expect(result.waitingFor).toBe('approval');
      expect(result.approval?.status).toBe('pending');
      expect(result.approval?.request.payload_hash).toBe(result.proposal.payload_hash);
      expect(invoke).not.toHaveBeenCalled();
      expect(count('POST /v1/observations')).toBe(0);
    });
  });

  describe('when it claims the execution', () => {
    /** Every `claim_seconds` the client sent: from the fast path's query, or the `authorize` body. */
    function claimDeadlinesSent(decide: 'allow' | 'require_approval') {
      const asked: string[] = [];
      const wrapped = setup(
        { decide: () => decide },
        (fake) =>
          (async (input, init) => {
            const url = new URL(String(input));
            if (url.searchParams.has('claim_seconds'))
              asked.push(`query:${url.searchParams.get('claim_seconds')}`);
            if (url.pathname.endsWith('/authorize')) {
              asked.push(`body:${JSON.parse(String(init?.body)).claim_seconds}`);
            }
            return fake.fetch(input, init);
          }) as typeof fetch,
      );
      return { ...wrapped, asked };
    }

    it('asks for a deadline of the invoke time limit plus the margin on the fast path', async () => {
      const { client, invoke, asked } = claimDeadlinesSent('allow');
      const result = await client.execute(refund, invoke, { ...fast, invokeTimeoutMs: 4500 });
      expect(result.status).toBe('executed');
      expect(asked).toEqual(['query:35']);
    });

    it('asks for the same deadline when it authorizes after an approval', async () => {
      const { client, invoke, asked, fake } = claimDeadlinesSent('require_approval');
      const first = await client.execute(refund, invoke, { ...fast, invokeTimeoutMs: 10_000 });
      fake.approve(approvalIdOf(first));
      await client.execute(refund, invoke, { ...fast, invokeTimeoutMs: 10_000 });
      // Each proposal request offers the fast path (the decision is not known yet); the
      // approved call's own `authorize` asks for the same deadline.
      expect(asked).toEqual(['query:40', 'query:40', 'body:40']);
    });

    it('asks for the deadline the caller gives', async () => {
      const { client, invoke, asked } = claimDeadlinesSent('allow');
      await client.execute(refund, invoke, { ...fast, claimSeconds: 7 });
      expect(asked).toEqual(['query:7']);
    });
  });

  describe('when the approval arrives while execute waits', () => {
    it('polls until approved, then invokes exactly once', async () => {
      let polls = 0;
      const { client, invoke } = setup(
        { decide: () => 'require_approval' },
        (fake) =>
          (async (input, init) => {
            const response = await fake.fetch(input, init);
            if (String(input).includes('/v1/approvals/') && ++polls === 2) {
              const approvalId = String(input).split('/').pop()!;
              fake.approve(approvalId);
            }
            return response;
          }) as typeof fetch,
      );
      const result = await client.execute(refund, invoke, {
        wait: { timeoutMs: 5000, pollIntervalMs: 1, maxPollIntervalMs: 2 },
      });
      expect(result.status).toBe('executed');
      expect(polls).toBe(3);
      expect(invoke).toHaveBeenCalledTimes(1);
    });
  });

  describe('when the same action is executed again after its approval', () => {
    it('continues the same proposal and runs it once', async () => {
      const { client, invoke, fake } = setup({ decide: () => 'require_approval' });
      const first = await client.execute(refund, invoke, fast);
      fake.approve(approvalIdOf(first));
      const second = await client.execute(refund, invoke, fast);
      expect(second.status).toBe('executed');
      expect(second.replayed).toBe(true);
      expect(second.proposal.id).toBe(first.proposal.id);
      expect(invoke).toHaveBeenCalledTimes(1);
    });

    it('treats other arguments as another action that needs its own approval', async () => {
      const { client, invoke, fake } = setup({ decide: () => 'require_approval' });
      const first = await client.execute(refund, invoke, fast);
      fake.approve(approvalIdOf(first));
      const other = await client.execute(
        { ...refund, arguments: { order: 'A-119', amount: 9999 } },
        invoke,
        fast,
      );
      expect(other.status).toBe('pending');
      expect(other.proposal.id).not.toBe(first.proposal.id);
      expect(invoke).not.toHaveBeenCalled();
    });
  });

  describe('when the approval is denied', () => {
    it('returns not_authorized APPROVAL_DENIED and never invokes', async () => {
      const { client, invoke, fake } = setup({ decide: () => 'require_approval' });
      const first = await client.execute(refund, invoke, fast);
      fake.deny(approvalIdOf(first));
      const result = await client.execute(refund, invoke, fast);
      expect(result.status).toBe('not_authorized');
      if (result.status !== 'not_authorized') return;
      expect(result.code).toBe('APPROVAL_DENIED');
      expect(invoke).not.toHaveBeenCalled();
    });
  });

  describe('when the approval request expired unanswered', () => {
    it('returns not_authorized APPROVAL_EXPIRED and never invokes', async () => {
      const { client, invoke, fake } = setup({ decide: () => 'require_approval' });
      const first = await client.execute(refund, invoke, fast);
      fake.expire(approvalIdOf(first));
      const result = await client.execute(refund, invoke, fast);
      expect(result.status === 'not_authorized' && result.code).toBe('APPROVAL_EXPIRED');
      expect(invoke).not.toHaveBeenCalled();
    });
  });

  describe('when the approval window has closed', () => {
    it('returns not_authorized APPROVAL_EXPIRED and never invokes', async () => {
      const { client, invoke, fake } = setup({ decide: () => 'require_approval' });
      const first = await client.execute(refund, invoke, fast);
      fake.approve(approvalIdOf(first), {
        validity: 'window',
        validUntil: new Date(Date.now() - 1).toISOString(),
      });
      const result = await client.execute(refund, invoke, fast);
      expect(result.status === 'not_authorized' && result.code).toBe('APPROVAL_EXPIRED');
      expect(invoke).not.toHaveBeenCalled();
    });
  });

  describe('when the caller cancels while waiting for approval', () => {
    it('rejects with ABORTED and never invokes', async () => {
      const { client, invoke } = setup({ decide: () => 'require_approval' });
      const controller = new AbortController();
      const running = client.execute(refund, invoke, {
        signal: controller.signal,
        wait: { timeoutMs: 60_000, pollIntervalMs: 1, maxPollIntervalMs: 2 },
      });
      controller.abort();
      await expect(running).rejects.toMatchObject({ name: 'VouchClientError', code: 'ABORTED' });
      expect(invoke).not.toHaveBeenCalled();
    });
  });

  describe('when an external engine has not decided yet', () => {
    it('returns pending on the decision, then runs once it is decided', async () => {
      const { client, invoke, fake } = setup({ decide: () => null });
      const first = await client.execute(refund, invoke, fast);
      expect(first.status === 'pending' && first.waitingFor).toBe('decision');
      fake.decide(first.proposal.id, 'allow');
      const second = await client.execute(refund, invoke, fast);
      expect(second.status).toBe('executed');
      expect(invoke).toHaveBeenCalledTimes(1);
    });
  });

  describe('when invoke outlives its time limit', () => {
    it('records outcome unknown once, aborts the call, and a retried execute does not invoke again', async () => {
      const { client, fake, count } = setup();
      let seenSignal: AbortSignal | undefined;
      const hang = vi.fn<Invoke<never>>(
        ({ signal }) =>
          new Promise<never>(() => {
            seenSignal = signal;
          }),
      );
      const result = await client.execute(refund, hang, { ...fast, invokeTimeoutMs: 10 });
      expect(result.status).toBe('executed');
      if (result.status !== 'executed') return;
      expect(result.observation.outcome).toBe('unknown');
      expect(result.observation.result).toEqual({ error: { code: 'INVOKE_TIMEOUT', timeout_ms: 10 } });
      expect(seenSignal?.aborted).toBe(true);

      const again = await client.execute(refund, hang, { ...fast, invokeTimeoutMs: 10 });
      expect(again.status === 'executed' && again.invoked).toBe(false);
      expect(again.status === 'executed' && again.observation.outcome).toBe('unknown');
      expect(hang).toHaveBeenCalledTimes(1);
      expect(count('POST /v1/observations')).toBe(1);
      expect(fake.observations).toHaveLength(1);
    });
  });

  describe('when the caller cancels during invoke', () => {
    it('records outcome unknown, then rejects with ABORTED', async () => {
      const { client, fake } = setup();
      const controller = new AbortController();
      const running = client.execute(
        refund,
        () => {
          controller.abort();
          return new Promise<never>(() => {});
        },
        { ...fast, signal: controller.signal },
      );
      await expect(running).rejects.toMatchObject({ code: 'ABORTED' });
      expect(fake.observations.map((o) => o.outcome)).toEqual(['unknown']);
    });
  });

  describe('when invoke throws', () => {
    it('records outcome failed with the error and returns it', async () => {
      const { client, fake } = setup();
      const boom = Object.assign(new Error('card declined'), { code: 'DECLINED' });
      const result = await client.execute(
        refund,
        () => {
          throw boom;
        },
        fast,
      );
      expect(result.status === 'executed' && result.error).toBe(boom);
      expect(fake.observations[0]!.outcome).toBe('failed');
      expect(fake.observations[0]!.result).toEqual({
        error: { name: 'Error', message: 'card declined', code: 'DECLINED' },
      });
    });
  });

  describe('when observe maps the value', () => {
    it('records the transport status and tool error flag it returns', async () => {
      const { client, fake } = setup();
      await client.execute(refund, async () => ({ status: 200, body: { ok: false } }), {
        ...fast,
        observe: (value) => ({
          outcome: 'failed',
          result: value.body,
          transport_status: value.status,
          tool_error: true,
        }),
      });
      expect(fake.observations[0]).toMatchObject({
        outcome: 'failed',
        transport_status: 200,
        tool_error: true,
      });
    });
  });

  describe('when execute is retried after it completed', () => {
    it('replays the stored observation and does not invoke again', async () => {
      const { client, invoke, count } = setup();
      const first = await client.execute(refund, invoke, fast);
      const second = await client.execute(refund, invoke, fast);
      expect(second.status).toBe('executed');
      if (second.status !== 'executed' || first.status !== 'executed') return;
      expect(second.replayed).toBe(true);
      expect(second.invoked).toBe(false);
      expect(second.observation.id).toBe(first.observation.id);
      expect(invoke).toHaveBeenCalledTimes(1);
      expect(count('POST /v1/observations')).toBe(1);
    });
  });

  describe('when two executes of one action run at once', () => {
    it('invokes once and gives both the same result', async () => {
      const { client, invoke } = setup();
      const [a, b] = await Promise.all([
        client.execute(refund, invoke, fast),
        client.execute(refund, invoke, fast),
      ]);
      expect(a).toBe(b);
      expect(invoke).toHaveBeenCalledTimes(1);
    });
  });

  describe('when the proposal request fails on the network', () => {
    it('retries it (the idempotency key makes that safe) and creates one proposal', async () => {
      const { client, invoke, fake, count } = setup();
      fake.failNext('POST /v1/proposals', 'network');
      const result = await client.execute(refund, invoke, fast);
      expect(result.status).toBe('executed');
      expect(count('POST /v1/proposals')).toBe(2);
      expect(fake.proposals.size).toBe(1);
    });
  });

  describe('when the observation request fails', () => {
    it('does not post it again and throws OBSERVATION_NOT_RECORDED with what was observed', async () => {
      const { client, invoke, fake, count } = setup();
      fake.failNext('POST /v1/observations', 'network', 3);
      const error = await client.execute(refund, invoke, fast).catch((e: unknown) => e);
      expect(isVouchClientError(error, 'OBSERVATION_NOT_RECORDED')).toBe(true);
      expect(count('POST /v1/observations')).toBe(1);
      expect(invoke).toHaveBeenCalledTimes(1);
      expect((error as { details: { observed: { outcome: string } } }).details.observed.outcome).toBe(
        'succeeded',
      );
    });
  });

  describe('when the flow reaches the tool', () => {
    it('claims the execution with authorize (payload hash and approval request) before invoking', async () => {
      const { client, fake } = setup({ decide: () => 'require_approval' });
      const first = await client.execute(refund, async () => 'ok', fast);
      fake.approve(approvalIdOf(first));
      let requestsAtInvoke: string[] = [];
      await client.execute(
        refund,
        async () => {
          requestsAtInvoke = [...fake.requests];
        },
        fast,
      );
      expect(requestsAtInvoke.at(-1)).toBe(`POST /v1/proposals/${first.proposal.id}/authorize`);
    });
  });

  describe('when authorize refuses because the single-use approval was used by another proposal', () => {
    it('returns not_authorized with the server code and never invokes', async () => {
      const { client, invoke, fake } = setup({ decide: () => 'require_approval' });
      const first = await client.execute(refund, invoke, fast);
      fake.approve(approvalIdOf(first));
      fake.failNext(`POST /v1/proposals/${first.proposal.id}/authorize`, {
        status: 409,
        code: 'APPROVAL_CONSUMED',
      });
      const result = await client.execute(refund, invoke, fast);
      expect(result.status === 'not_authorized' && result.code).toBe('APPROVAL_CONSUMED');
      expect(invoke).not.toHaveBeenCalled();
    });
  });

  describe('when a precondition fails at authorize', () => {
    it('returns precondition_failed with the checks and never invokes', async () => {
      const { client, invoke, fake } = setup();
      const checks = {
        status: 'failed',
        checks: [{ name: 'balance.enough', status: 'fail', source: 'bank' }],
      };
      fake.failNext('POST /v1/proposals/prp_1/authorize', {
        status: 412,
        code: 'PRECONDITION_FAILED',
        details: checks,
      });
      const result = await client.execute(refund, invoke, fast);
      expect(result.status).toBe('precondition_failed');
      expect(result.status === 'precondition_failed' && result.preconditions).toEqual(checks);
      expect(invoke).not.toHaveBeenCalled();
    });
  });

  describe('when the answer to the observation was lost and execute is retried', () => {
    it('records outcome unknown (in doubt) and does not invoke again', async () => {
      const { client, invoke, fake } = setup();
      fake.failNext('POST /v1/observations', 'network');
      await expect(client.execute(refund, invoke, fast)).rejects.toMatchObject({
        code: 'OBSERVATION_NOT_RECORDED',
      });
      const retried = await client.execute(refund, invoke, fast);
      expect(retried.status === 'executed' && retried.invoked).toBe(false);
      expect(fake.observations.map((o) => o.outcome)).toEqual(['unknown']);
      expect(fake.observations[0]!.result).toMatchObject({ error: { code: 'EXECUTION_IN_DOUBT' } });
      expect(invoke).toHaveBeenCalledTimes(1);
    });

    it('recognizes an execution claimed by another client instance without an approval', async () => {
      const { client, invoke, fake } = setup();
      fake.failNext('POST /v1/observations', 'network');
      await expect(client.execute(refund, invoke, fast)).rejects.toMatchObject({
        code: 'OBSERVATION_NOT_RECORDED',
      });
      // A restarted gateway: its journal is empty, but the server holds the claim.
      const restarted = clientOf(fake.fetch);
      const retried = await restarted.execute(refund, invoke, fast);
      expect(retried.status === 'executed' && retried.observation.outcome).toBe('unknown');
      expect(invoke).toHaveBeenCalledTimes(1);
    });

    it('recognizes the claimed approval from another client instance too', async () => {
      const { client, invoke, fake } = setup({ decide: () => 'require_approval' });
      const first = await client.execute(refund, invoke, fast);
      fake.approve(approvalIdOf(first));
      fake.failNext('POST /v1/observations', 'network');
      await expect(client.execute(refund, invoke, fast)).rejects.toMatchObject({
        code: 'OBSERVATION_NOT_RECORDED',
      });
      // A restarted gateway: a new client with an empty journal, the same server.
      const restarted = clientOf(fake.fetch);
      const retried = await restarted.execute(refund, invoke, fast);
      expect(retried.status === 'executed' && retried.observation.outcome).toBe('unknown');
      expect(invoke).toHaveBeenCalledTimes(1);
    });
  });

  describe('when the earlier attempt records its observation while the retry is in doubt', () => {
    it('answers with the recorded observation and does not invoke again', async () => {
      // Once armed, the earlier attempt's own retry lands between the story read and the
      // in-doubt post of this one.
      let armed = false;
      const { client, invoke, fake } = setup({}, (fake) => async (input, init) => {
        if (armed && init?.method === 'POST' && new URL(String(input)).pathname === '/v1/observations') {
          armed = false;
          const body = { ...JSON.parse(String(init.body)), outcome: 'succeeded', result: { ok: true } };
          await fake.fetch(input, { ...init, body: JSON.stringify(body) });
        }
        return fake.fetch(input, init);
      });
      fake.failNext('POST /v1/observations', 'network');
      await expect(client.execute(refund, invoke, fast)).rejects.toMatchObject({
        code: 'OBSERVATION_NOT_RECORDED',
      });
      armed = true;
      const retried = await client.execute(refund, invoke, fast);
      expect(armed).toBe(false);
      expect(retried).toMatchObject({ status: 'executed', invoked: false, replayed: true });
      expect(retried.status === 'executed' && retried.observation.outcome).toBe('succeeded');
      expect(fake.observations.map((o) => o.outcome)).toEqual(['succeeded']);
      expect(invoke).toHaveBeenCalledTimes(1);
    });
  });

  describe('when the server records a payload other than the one sent', () => {
    it('throws PAYLOAD_HASH_MISMATCH before invoking', async () => {
      const { client, invoke } = setup(
        {},
        (fake) =>
          (async (input, init) => {
            const response = await fake.fetch(input, init);
            if (new URL(String(input)).pathname !== '/v1/proposals') return response;
            const body = (await response.json()) as { proposal: ProposalRecord };
            body.proposal.payload_hash = '0'.repeat(64);
            return new Response(JSON.stringify(body), { status: response.status });
          }) as typeof fetch,
      );
      await expect(client.execute(refund, invoke, fast)).rejects.toMatchObject({
        code: 'PAYLOAD_HASH_MISMATCH',
      });
      expect(invoke).not.toHaveBeenCalled();
    });
  });

  describe('when the decision authorizes another identity', () => {
    it('returns not_authorized IDENTITY_MISMATCH and never invokes', async () => {
      const { client, invoke } = setup(
        {},
        (fake) =>
          (async (input, init) => {
            const response = await fake.fetch(input, init);
            if (new URL(String(input)).pathname !== '/v1/proposals') return response;
            const body = (await response.json()) as { decision: { authorized_identity: string } };
            body.decision.authorized_identity = 'agent:someone-else';
            return new Response(JSON.stringify(body), { status: response.status });
          }) as typeof fetch,
      );
      const result = await client.execute(refund, invoke, fast);
      expect(result.status === 'not_authorized' && result.code).toBe('IDENTITY_MISMATCH');
      expect(invoke).not.toHaveBeenCalled();
    });
  });

  describe('when verification cannot be run', () => {
    it('still returns the execution, with the verification error', async () => {
      const { client, invoke, fake } = setup();
      fake.failNext('POST /v1/observations/obs_3/verify', 501);
      const result = await client.execute(refund, invoke, fast);
      expect(result.status === 'executed' && result.verification).toBeNull();
      expect(result.status === 'executed' && result.verificationError?.status).toBe(501);
    });
  });

  describe('when an idempotency key is given', () => {
    it('uses it instead of the derived one', async () => {
      const { client, invoke, fake } = setup();
      const result = await client.execute(refund, invoke, { ...fast, idempotencyKey: 'my-key-1' });
      expect(result.idempotencyKey).toBe('my-key-1');
      expect([...fake.proposals.values()][0]!.idempotency_key).toBe('my-key-1');
    });
  });
});
