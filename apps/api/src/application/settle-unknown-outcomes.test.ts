import { createRecords, createVerificationJobStore, type VerificationJobStore } from '@vouch/ledger';
import { testBackends } from '@vouch/ledger/testing';
import { createVerifierRegistry, defineVerifier, VERIFIER_API_VERSION } from '@vouch/verifier-sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApp, type VouchApp } from '../app';
import { createHarness, type Harness } from '../testing/app-harness';
import { createVerificationQueue, type VerificationQueue } from '../verification-queue';
import { queueSettlements, settlementJob } from './settle-unknown-outcomes';

// biome-ignore lint/suspicious/noExplicitAny: response bodies are read loosely, then pinned with toMatchObject
type Json = Record<string, any>;

const SETTLE_SECONDS = 1;
const SETTLE_VERIFIER = 'vouch:settle-verifier';
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

const recorded = defineVerifier({
  id: 'reads-ledger',
  version: '1.0.0',
  apiVersion: VERIFIER_API_VERSION,
  handles: ['refund.recorded'],
  check: () => ({ name: 'refund.recorded', status: 'pass' as const, source: 'billing-ledger' }),
});

describe.each(testBackends())('settling unknown outcomes, on $name', ({ open }) => {
  let h: Harness;
  let app: VouchApp;
  let store: VerificationJobStore;
  let gw: string;
  let n = 0;
  const queues: VerificationQueue[] = [];
  const host = { registry: createVerifierRegistry([{ verifier: recorded }]) };

  /** A queue of one more server process over the same database. */
  const queue = () => {
    const created = createVerificationQueue({
      records: createRecords(h.ledger, { unknownOutcomeSettleSeconds: SETTLE_SECONDS }),
      host,
      store,
      logger: h.logger,
      settleSeconds: SETTLE_SECONDS,
    });
    queues.push(created);
    return created;
  };

  beforeAll(async () => {
    h = await createHarness({ open });
    store = createVerificationJobStore(h.database);
    app = createApp({
      ledger: h.ledger,
      keys: h.keys,
      logger: h.logger,
      records: createRecords(h.ledger, { unknownOutcomeSettleSeconds: SETTLE_SECONDS }),
      verification: host,
    });
    const admin = await h.keyFor('user:root', ['admin']);
    gw = await h.keyFor('agent:gw', ['gateway']);
    const tool = { server_id: 'billing', tool_name: 'refund', side_effect: 'compensatable' };
    expect((await call('POST', '/v1/tools', admin, tool)).status).toBe(201);
  });
  afterAll(async () => {
    await Promise.all(queues.map((q) => q.close()));
    await h?.close();
  });

  async function call(method: string, path: string, key: string, body?: unknown) {
    const response = await app.request(path, {
      method,
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    return { status: response.status, body: (await response.json()) as Json };
  }

  async function executed(outcome: 'unknown' | 'succeeded') {
    const proposed = await call('POST', '/v1/proposals', gw, {
      idempotency_key: `settle-app-${++n}`,
      action: 'billing.refund',
      server_id: 'billing',
      tool_name: 'refund',
      target: { kind: 'order', id: `A-${n}`, env: 'test' },
      arguments: { amount: n },
      side_effect: 'compensatable',
      postconditions: [{ name: 'refund.recorded' }],
    });
    const proposalId = proposed.body.proposal.id as string;
    expect((await call('POST', `/v1/proposals/${proposalId}/authorize`, gw, {})).status).toBe(200);
    const observed = await call('POST', '/v1/observations', gw, { proposal_id: proposalId, outcome });
    expect(observed.status).toBe(201);
    return {
      log: 'default',
      proposalId,
      observationId: observed.body.observation.id as string,
      observedAt: observed.body.observation.observed_at as string,
    };
  }

  const settleVerifications = async (proposalId: string) =>
    ((await call('GET', `/v1/proposals/${proposalId}`, gw)).body.verifications as Json[]).filter(
      (v) => v.verifier === SETTLE_VERIFIER,
    );
  const settledAt = (observedAt: string) => new Date(Date.parse(observedAt) + SETTLE_SECONDS * 1000);

  describe('when two processes sweep at once after the outcome settled', () => {
    it('queues one job, and one verification is recorded', async () => {
      const unknown = await executed('unknown');
      const [a, b] = [queue(), queue()];
      const before = settledAt(unknown.observedAt);
      const early = await queueSettlements({
        store,
        queue: a,
        settleSeconds: SETTLE_SECONDS,
        now: new Date(before.getTime() - 1),
      });
      expect(early).toBe(0);
      await sleep(before.getTime() - Date.now() + 50);
      const queued = await Promise.all(
        [a, b].map((q) =>
          queueSettlements({ store, queue: q, settleSeconds: SETTLE_SECONDS, now: new Date() }),
        ),
      );
      expect(queued[0]! + queued[1]!).toBe(1);
      await Promise.all([a.idle(), b.idle()]);
      expect(await settleVerifications(unknown.proposalId)).toMatchObject([{ status: 'passed' }]);
      // Done: nothing is due any more.
      expect(
        await queueSettlements({ store, queue: a, settleSeconds: SETTLE_SECONDS, now: new Date() }),
      ).toBe(0);
    });
  });

  // The runtime role can insert a job row in the settle verifier's name: the row proves nothing.
  describe('when a settle job row names an observation', () => {
    it('records nothing for one whose outcome is not unknown', async () => {
      const done = await executed('succeeded');
      const job = settlementJob(done, new Date().toISOString());
      expect(await store.enqueue(job)).toBe(true);
      const q = queue();
      await q.resume();
      await q.idle();
      expect(await store.pendingOf(done.log, done.proposalId)).toEqual([]);
      expect(await settleVerifications(done.proposalId)).toEqual([]);
    });

    it('runs one before its observation settled only once it has', async () => {
      const unknown = await executed('unknown');
      expect(await store.enqueue(settlementJob(unknown, new Date().toISOString()))).toBe(true);
      const q = queue();
      await q.resume();
      await q.idle();
      expect(await store.pendingOf(unknown.log, unknown.proposalId)).toHaveLength(1);
      expect(await settleVerifications(unknown.proposalId)).toEqual([]);
      await sleep(settledAt(unknown.observedAt).getTime() - Date.now() + 50);
      await q.resume();
      await q.idle();
      expect(await store.pendingOf(unknown.log, unknown.proposalId)).toEqual([]);
      expect(await settleVerifications(unknown.proposalId)).toMatchObject([{ status: 'passed' }]);
    });
  });
});
