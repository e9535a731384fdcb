import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createLedger, createRecords, createVerificationJobStore, OPERATOR_ACTOR } from '@vouch/ledger';
import { createVerifierRegistry, type MeasurementPolicy } from '@vouch/verifier-sdk';
import { createGuardedFetch, httpJsonVerifier } from '@vouch/verifiers';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApp, type VouchApp } from '../app';
import { createKeyStore } from '../auth/key-store';
import { createHarness, type Harness } from '../testing/app-harness';
import { createVerificationQueue, type VerificationQueue } from '../verification-queue';

// biome-ignore lint/suspicious/noExplicitAny: response bodies are read loosely, then pinned with toMatchObject
type Json = Record<string, any>;

// The payment provider's ledger: a refund shows up there only 3 s after it was made, as an
// eventually consistent replica would show it. Before that it answers 404.
const SHOWS_AFTER_MS = 3_000;
const refundsMadeAt = new Map<string, number>();
let server: Server;
let base: string;

/** An app whose only verifier reads that ledger over HTTP with `measurement` as its policy. */
function appWith(
  h: Harness,
  measurement: MeasurementPolicy,
  queue?: (host: VerificationHostLike) => VerificationQueue,
): VouchApp {
  const fetch = createGuardedFetch({ allowHosts: ['127.0.0.1'], resolveHost: async () => ['127.0.0.1'] });
  const registry = createVerifierRegistry([
    {
      verifier: httpJsonVerifier,
      name: 'refund-visible',
      handles: ['refund.recorded'],
      measurement,
      grants: { fetch },
      options: {
        url: `${base}/refunds/{observation.result.refund_id}`,
        source: 'provider-ledger',
        // The refund the tool's result names must be the proposal's payment's (evidence binding).
        bind: [{ pointer: '/payment_id', from: 'target.id' }],
        evidenceRef: 'refund:{result.id}',
      },
    },
  ]);
  const verification = { registry };
  return createApp({
    ledger: h.ledger,
    keys: h.keys,
    logger: h.logger,
    verification,
    ...(queue ? { verificationQueue: queue(verification) } : {}),
  });
}

type VerificationHostLike = { registry: ReturnType<typeof createVerifierRegistry> };

/** A queue over the harness's database, as a server process would have one. */
function queueOn(h: Harness, leaseMs?: number) {
  return (host: VerificationHostLike) =>
    createVerificationQueue({
      records: createRecords(h.ledger),
      host,
      store: createVerificationJobStore(h.database),
      logger: h.logger,
      ...(leaseMs === undefined ? {} : { leaseMs }),
    });
}

describe('POST /v1/observations/{id}/verify with a measurement policy', () => {
  let h: Harness;
  let gw: string;
  let auditor: string;
  let n = 0;

  beforeAll(async () => {
    server = createServer((req, res) => {
      const id = decodeURIComponent(req.url!.split('/').pop()!);
      const madeAt = refundsMadeAt.get(id);
      const visible = madeAt !== undefined && Date.now() - madeAt >= SHOWS_AFTER_MS;
      res.writeHead(visible ? 200 : 404, { 'content-type': 'application/json' });
      const payment = id.replace(/^re_/, 'pay_');
      res.end(
        JSON.stringify(visible ? { id, payment_id: payment, status: 'succeeded' } : { error: 'not found' }),
      );
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    h = await createHarness();
    const admin = await h.keyFor('user:root', ['admin']);
    gw = await h.keyFor('agent:gw', ['gateway']);
    auditor = await h.keyFor('user:audrey', ['auditor']);
    const tool = { server_id: 'payments-mcp', tool_name: 'refund', side_effect: 'compensatable' };
    expect((await h.json('POST', '/v1/tools', admin, tool)).status).toBe(201);
  });
  afterAll(async () => {
    await h?.close();
    await new Promise((resolve) => server?.close(resolve));
  });

  async function call(app: VouchApp, method: string, path: string, key: string, body?: unknown) {
    const response = await app.request(path, {
      method,
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    return { status: response.status, body: (await response.json()) as Json };
  }

  /** A refund made by the tool just now (the provider will show it in 3 s), proposed and observed. */
  async function refunded(app: VouchApp) {
    const refundId = `re_${++n}`;
    const proposed = await call(app, 'POST', '/v1/proposals', gw, {
      idempotency_key: `measure-${n}`,
      action: 'payments.refund',
      server_id: 'payments-mcp',
      tool_name: 'refund',
      target: { kind: 'payment', id: `pay_${n}`, env: 'test' },
      arguments: { amount: 1250 },
      side_effect: 'compensatable',
      postconditions: [{ name: 'refund.recorded' }],
    });
    expect(proposed.body.decision?.verdict).toBe('allow');
    const claimed = await call(app, 'POST', `/v1/proposals/${proposed.body.proposal.id}/authorize`, gw, {});
    expect(claimed.status).toBe(200);
    refundsMadeAt.set(refundId, Date.now());
    const observed = await call(app, 'POST', '/v1/observations', gw, {
      proposal_id: proposed.body.proposal.id,
      outcome: 'succeeded',
      result: { refund_id: refundId },
    });
    expect(observed.status).toBe(201);
    return {
      proposalId: proposed.body.proposal.id as string,
      observationId: observed.body.observation.id as string,
    };
  }

  describe('when the refund shows up before the readings run out', () => {
    it('passes, with the readings that did not see it kept as evidence', async () => {
      const app = appWith(h, { interval: '400ms', count: 25, consecutiveSuccessLimit: 1, failureLimit: -1 });
      const { proposalId, observationId } = await refunded(app);
      const verified = await call(app, 'POST', `/v1/observations/${observationId}/verify`, gw);
      expect(verified.status).toBe(201);
      expect(verified.body).toMatchObject({ status: 'passed', verification_status: { status: 'passed' } });
      const [check] = verified.body.checks;
      expect(check).toMatchObject({ status: 'pass', source: 'provider-ledger' });
      expect(check.measurement).toMatchObject({ status: 'pass', decidedBy: 'CONSECUTIVE_SUCCESS_LIMIT' });
      const readings = check.measurement.attempts.map((a: Json) => a.status);
      expect(readings.at(-1)).toBe('pass');
      expect(readings.slice(0, -1)).toContain('fail');
      expect(readings.slice(0, -1).every((r: string) => r === 'fail')).toBe(true);

      const story = await call(app, 'GET', `/v1/proposals/${proposalId}`, auditor);
      expect(story.body.verifications[0].checks[0].measurement.attempts).toHaveLength(readings.length);
    });
  });

  describe('when the count runs out before the refund shows up', () => {
    it('fails, every reading kept', async () => {
      const app = appWith(h, { interval: '50ms', count: 3, consecutiveSuccessLimit: 1, failureLimit: -1 });
      const { observationId } = await refunded(app);
      const verified = await call(app, 'POST', `/v1/observations/${observationId}/verify`, gw);
      expect(verified.status).toBe(201);
      expect(verified.body).toMatchObject({ status: 'failed', verification_status: { status: 'failed' } });
      expect(verified.body.checks[0].measurement).toMatchObject({
        status: 'fail',
        decidedBy: 'COUNT_REACHED',
      });
      expect(verified.body.checks[0].measurement.attempts.map((a: Json) => a.status)).toEqual([
        'fail',
        'fail',
        'fail',
      ]);
    });
  });

  describe('when the caller asks for the answer asynchronously', () => {
    const slow: MeasurementPolicy = {
      interval: '400ms',
      count: 25,
      consecutiveSuccessLimit: 1,
      failureLimit: -1,
    };
    const story = async (app: VouchApp, proposalId: string) =>
      (await call(app, 'GET', `/v1/proposals/${proposalId}`, auditor)).body;

    it('queues it (202), the story shows verifying, then the verification it recorded', async () => {
      let queue: VerificationQueue | undefined;
      const app = appWith(h, slow, (host) => {
        queue = queueOn(h)(host);
        return queue;
      });
      const { proposalId, observationId } = await refunded(app);
      const response = await app.request(`/v1/observations/${observationId}/verify`, {
        method: 'POST',
        headers: { authorization: `Bearer ${gw}`, prefer: 'respond-async' },
      });
      expect(response.status).toBe(202);
      expect(response.headers.get('preference-applied')).toBe('respond-async');
      const accepted = (await response.json()) as Json;
      expect(accepted.verification_job).toMatchObject({ status: 'queued', observation_id: observationId });
      // The refund cannot show before 3 s, and the policy waits for it: the job is still running.
      expect(await story(app, proposalId)).toMatchObject({
        verifying: true,
        verification_jobs: [{ id: accepted.verification_job.id }],
        verification_status: { status: 'inconclusive', reason: 'NOT_VERIFIED' },
      });

      await queue!.idle();
      const after = await story(app, proposalId);
      expect(after).toMatchObject({
        verifying: false,
        verification_jobs: [],
        verification_status: { status: 'passed' },
      });
      expect(after.verifications[0]).toMatchObject({ verifier: 'agent:gw', status: 'passed' });
    });

    it('resumes a queued verification after a restart', async () => {
      const first = queueOn(h);
      let before: VerificationQueue | undefined;
      const app = appWith(h, slow, (host) => {
        before = first(host);
        return before;
      });
      const { proposalId, observationId } = await refunded(app);
      const response = await app.request(`/v1/observations/${observationId}/verify`, {
        method: 'POST',
        headers: { authorization: `Bearer ${gw}`, prefer: 'respond-async' },
      });
      expect(response.status).toBe(202);
      // The server stops mid-measurement: nothing is recorded, the job stays queued.
      await before!.close();
      expect(await story(app, proposalId)).toMatchObject({ verifying: true, verifications: [] });

      let after: VerificationQueue | undefined;
      const restarted = appWith(h, slow, (host) => {
        after = queueOn(h)(host);
        return after;
      });
      expect(await after!.resume()).toBeGreaterThanOrEqual(1);
      await after!.idle();
      const resumed = await story(restarted, proposalId);
      expect(resumed).toMatchObject({ verifying: false, verification_status: { status: 'passed' } });
      expect(resumed.verifications).toHaveLength(1);
    });

    it('records nothing for a job whose row names someone who may not verify', async () => {
      const fast: MeasurementPolicy = {
        interval: '10ms',
        count: 1,
        consecutiveSuccessLimit: 1,
        failureLimit: -1,
      };
      const app = appWith(h, fast);
      const { proposalId, observationId } = await refunded(app);
      // Rows the runtime role can insert: one in the name of nobody with a key, one of an auditor.
      const store = createVerificationJobStore(h.database);
      const forged = ['user:ghost', 'user:audrey'].map((requestedBy, i) => ({
        log: 'default',
        id: `vjob_${String(i).repeat(32)}`,
        observationId,
        proposalId,
        requestedBy,
        body: {},
        requestedAt: new Date().toISOString(),
      }));
      for (const job of forged) await store.enqueue(job);
      const warned = h.logger.lines.length;
      const queue = queueOn(h)({ registry: createVerifierRegistry([]) });
      expect(await queue.resume()).toBe(2);
      await queue.idle();
      await queue.close();
      expect(await store.pendingOf('default', proposalId)).toEqual([]);
      expect(await story(app, proposalId)).toMatchObject({ verifying: false, verifications: [] });
      const refusals = h.logger.lines
        .slice(warned)
        .filter(
          (line) => line.msg === 'verification job refused: its requester may not record a verification',
        );
      expect(refusals.map((line) => [line.job, line.code]).sort()).toEqual([
        [forged[0]!.id, 'WRITER_ROLE_FORBIDDEN'],
        [forged[1]!.id, 'WRITER_ROLE_FORBIDDEN'],
      ]);
    });

    it("runs a job whose requester's key a server with a clock ahead issued, recorded no earlier than the key", async () => {
      // Another server, its clock half a minute ahead, issues the verifier's key; this one runs the job
      // before its own clock reaches the key's time.
      const ahead = createLedger(h.database, { now: () => new Date(Date.now() + 30_000) });
      const issued = await createKeyStore(ahead).create({
        identity: 'service:late-checker',
        roles: ['verifier'],
        createdBy: OPERATOR_ACTOR,
      });
      await ahead.close();
      const app = appWith(h, { interval: '10ms', count: 1, consecutiveSuccessLimit: 1, failureLimit: -1 });
      const { proposalId, observationId } = await refunded(app);
      const store = createVerificationJobStore(h.database);
      await store.enqueue({
        log: 'default',
        id: `vjob_${'e'.repeat(32)}`,
        observationId,
        proposalId,
        requestedBy: 'service:late-checker',
        body: {},
        requestedAt: new Date().toISOString(),
      });
      let queue: VerificationQueue | undefined;
      appWith(h, { interval: '10ms', count: 1, consecutiveSuccessLimit: 1, failureLimit: -1 }, (host) => {
        queue = queueOn(h)(host);
        return queue;
      });
      expect(await queue!.resume()).toBe(1);
      await queue!.idle();
      await queue!.close();
      const after = await story(app, proposalId);
      expect(after.verifications).toMatchObject([{ verifier: 'service:late-checker' }]);
      const events = await h.ledger.events('default', { limit: 10_000 });
      const recorded = events.find((event) => event.entity === after.verifications[0].id)!;
      expect(Date.parse(recorded.at)).toBeGreaterThanOrEqual(Date.parse(issued.key.createdAt));
      const verified = await h.json('GET', '/v1/logs/default/verify', auditor);
      expect(
        verified.body.failures.filter((failure: Json) => failure.actor === 'service:late-checker'),
      ).toEqual([]);
    });

    describe('when lease rows were inserted to hold jobs (the runtime role may insert them)', () => {
      const fast: MeasurementPolicy = {
        interval: '10ms',
        count: 1,
        consecutiveSuccessLimit: 1,
        failureLimit: -1,
      };
      const job = (id: string, observationId: string, proposalId: string, requestedAt: string) => ({
        log: 'default',
        id,
        observationId,
        proposalId,
        requestedBy: 'agent:gw',
        body: {},
        requestedAt,
      });
      const runQueue = async () => {
        let queue: VerificationQueue | undefined;
        appWith(h, fast, (host) => {
          queue = queueOn(h)(host);
          return queue;
        });
        const started = await queue!.resume();
        await queue!.idle();
        await queue!.close();
        return started;
      };

      it('takes over a job whose lease ends further ahead than any queue writes', async () => {
        const app = appWith(h, fast);
        const { proposalId, observationId } = await refunded(app);
        const store = createVerificationJobStore(h.database);
        const id = `vjob_${'f'.repeat(32)}`;
        await store.enqueue(job(id, observationId, proposalId, new Date().toISOString()));
        const now = new Date().toISOString();
        expect(
          await store.claim('default', id, { holder: 'nobody', now, until: '9999-12-31T00:00:00.000Z' }),
        ).toBe(true);
        expect(await runQueue()).toBe(1);
        expect(await story(app, proposalId)).toMatchObject({ verifying: false, verifications: [{}] });
      });

      it('claims the other jobs when one cannot be claimed at all', async () => {
        const app = appWith(h, fast);
        const first = await refunded(app);
        const second = await refunded(app);
        const store = createVerificationJobStore(h.database);
        const stuck = `vjob_${'0'.repeat(31)}1`;
        const good = `vjob_${'0'.repeat(31)}2`;
        const early = new Date(Date.now() - 60_000).toISOString();
        await store.enqueue(job(stuck, first.observationId, first.proposalId, early));
        await store.enqueue(job(good, second.observationId, second.proposalId, new Date().toISOString()));
        // The last term an integer column holds: no next term can be written for this job.
        await h.database.rows(
          sql`insert into verification_job_leases (log_id, job_id, term, holder, lease_until)
              values ('default', ${stuck}, 2147483647, 'nobody', ${early})`,
        );
        const warned = h.logger.lines.length;
        expect(await runQueue()).toBe(1);
        expect(await story(app, second.proposalId)).toMatchObject({ verifying: false, verifications: [{}] });
        expect(await story(app, first.proposalId)).toMatchObject({ verifying: true });
        expect(h.logger.lines.slice(warned).map((line) => [line.msg, line.job])).toContainEqual([
          'verification job could not be claimed',
          stuck,
        ]);
      });
    });

    it('runs a job once when two servers resume it together, and never while another holds it', async () => {
      const app = appWith(h, slow);
      const { proposalId, observationId } = await refunded(app);
      // A process that queued the job and then died: its claim lasts until its lease runs out.
      const store = createVerificationJobStore(h.database);
      const jobId = `vjob_${'d'.repeat(32)}`;
      await store.enqueue({
        log: 'default',
        id: jobId,
        observationId,
        proposalId,
        requestedBy: 'agent:gw',
        body: {},
        requestedAt: new Date().toISOString(),
      });
      const at = Date.now();
      const dead = { holder: 'gone:1:dead', now: new Date(at).toISOString() };
      expect(
        await store.claim('default', jobId, { ...dead, until: new Date(at + 60_000).toISOString() }),
      ).toBe(true);

      const queues: VerificationQueue[] = [];
      const server = (leaseMs?: number) =>
        appWith(h, slow, (host) => {
          const queue = queueOn(h, leaseMs)(host);
          queues.push(queue);
          return queue;
        });
      const [a, b] = [server(), server()];
      // The dead process's lease is still running: nobody takes the job over yet.
      expect(await Promise.all(queues.map((q) => q.resume()))).toEqual([0, 0]);
      expect(await story(a, proposalId)).toMatchObject({ verifying: true, verifications: [] });

      // Its lease ran out (the next term, as a renewal would be, with an end already past).
      expect(await store.claim('default', jobId, { ...dead, until: new Date(at).toISOString() })).toBe(true);
      const started = await Promise.all(queues.map((q) => q.resume()));
      expect(started.reduce((x, y) => x + y, 0)).toBe(1);
      await Promise.all(queues.map((q) => q.idle()));
      const done = await story(b, proposalId);
      expect(done).toMatchObject({ verifying: false, verification_status: { status: 'passed' } });
      expect(done.verifications).toHaveLength(1);
      // Finished: no process can claim it again.
      expect(
        await store.claim('default', jobId, {
          holder: 'late:2:x',
          now: new Date().toISOString(),
          until: new Date().toISOString(),
        }),
      ).toBe(false);
      await Promise.all(queues.map((q) => q.close()));
    });
  });
});
