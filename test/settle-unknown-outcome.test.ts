// An `unknown` outcome (the call timed out: the tool may still act) holds every verification at
// inconclusive until it settles. Once it has, the server verifies it by itself, as a durable
// job: the outcome settles without anyone asking, once, whatever the restarts and processes.
// A real `vouch serve` with a 6 s settle time, an http-json verifier reading an independent
// source, on each backend.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ServerBackend, serverBackends } from './helpers/backends';
import { runVouch, startVouchServer, type VouchServer } from './helpers/server';

// biome-ignore lint/suspicious/noExplicitAny: response bodies are read loosely, then pinned with toMatchObject
type Json = Record<string, any>;

/** The identity the server records its own settle verification under (`SETTLE_VERIFIER_IDENTITY`). */
const SETTLE_VERIFIER = 'vouch:settle-verifier';
const SETTLE_SECONDS = 6;
const SERVER_ENV = {
  VOUCH_UNKNOWN_OUTCOME_SETTLE_SECONDS: String(SETTLE_SECONDS),
  VOUCH_SETTLE_SWEEP_INTERVAL_MS: '200',
};

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Poll `read` until it returns a value (not undefined), or fail after `ms`. */
async function eventually<T>(what: string, read: () => Promise<T | undefined>, ms = 45_000): Promise<T> {
  const until = Date.now() + ms;
  for (;;) {
    const value = await read();
    if (value !== undefined) return value;
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await sleep(200);
  }
}

// Each step starts real processes on a shared, loaded machine: generous limits.
describe.each(serverBackends())(
  'an unknown outcome settles by itself, on $name',
  { timeout: 180_000 },
  (backend) => {
    let dir: string;
    let env: Awaited<ReturnType<ServerBackend['setup']>>;
    let server: VouchServer;
    let billing: Server;
    const keys = {} as Record<'gateway' | 'auditor', string>;
    let n = 0;

    const start = () => startVouchServer({ storage: env.storage, cwd: dir, env: SERVER_ENV });

    beforeAll(async () => {
      dir = mkdtempSync(join(tmpdir(), `vouch-settle-${backend.name}-`));
      env = await backend.setup(dir);
      // The independent source: billing's ledger shows every refund that was made.
      billing = createServer((_req, res) => {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ refunded_amount: 4200 }));
      });
      await new Promise<void>((resolve) => billing.listen(0, '127.0.0.1', resolve));
      const { port } = billing.address() as AddressInfo;
      writeFileSync(
        join(dir, 'vouch.config.json'),
        JSON.stringify({
          connections: { 'billing-ledger': { type: 'http', allowHosts: ['127.0.0.1'] } },
          verifiers: [
            {
              use: 'http-json',
              name: 'refund-recorded',
              handles: ['refund.recorded'],
              connection: 'billing-ledger',
              options: {
                url: `http://127.0.0.1:${port}/orders/{target.id}/refunds`,
                source: 'billing-ledger',
                assertions: [{ op: 'equals', pointer: '/refunded_amount', from: 'arguments.amount' }],
              },
            },
          ],
        }),
      );
      server = await start();
      const issue = async (identity: string, roles: string[]) => {
        const created = await server.call('POST', '/v1/keys', {
          key: server.adminKey,
          body: { identity, roles },
        });
        expect(created.status).toBe(201);
        return ((await created.json()) as Json).secret as string;
      };
      keys.gateway = await issue('agent:billing-bot', ['gateway']);
      keys.auditor = await issue('user:audrey', ['auditor']);
      const tool = { server_id: 'billing', tool_name: 'refund.issue', side_effect: 'compensatable' };
      expect((await server.call('POST', '/v1/tools', { key: server.adminKey, body: tool })).status).toBe(201);
    }, 120_000);
    afterAll(async () => {
      await server?.stop();
      await new Promise((resolve) => billing?.close(resolve));
      await env?.drop();
      if (dir) rmSync(dir, { recursive: true, force: true });
    });

    async function call(method: string, path: string, key: string, body?: unknown): Promise<Json> {
      const response = await server.call(method, path, { key, ...(body === undefined ? {} : { body }) });
      return { status: response.status, body: await response.json() };
    }

    /** A refund proposed, allowed, and observed as `unknown` (its call timed out). */
    async function timedOut(options: {
      verify: boolean;
    }): Promise<{ proposalId: string; observedAt: string }> {
      n++;
      const proposed = await call('POST', '/v1/proposals', keys.gateway, {
        idempotency_key: `settle-${n}`,
        action: 'refund.issue',
        server_id: 'billing',
        tool_name: 'refund.issue',
        target: { kind: 'order', id: `A-${n}`, env: 'production' },
        arguments: { order_id: `A-${n}`, amount: 4200 },
        side_effect: 'compensatable',
        postconditions: [{ name: 'refund.recorded' }],
      });
      expect(proposed.body.decision?.verdict).toBe('allow');
      const proposalId = proposed.body.proposal.id as string;
      expect((await call('POST', `/v1/proposals/${proposalId}/authorize`, keys.gateway, {})).status).toBe(
        200,
      );
      const observed = await call(
        'POST',
        `/v1/observations${options.verify ? '?verify=true' : ''}`,
        keys.gateway,
        { proposal_id: proposalId, outcome: 'unknown', result: null, tool_error: true },
      );
      expect(observed.status).toBe(201);
      return { proposalId, observedAt: observed.body.observation.observed_at as string };
    }

    const story = async (proposalId: string): Promise<Json> =>
      (await call('GET', `/v1/proposals/${proposalId}`, keys.auditor)).body;

    /** The story once its outcome has settled (no longer `awaiting_resolution`). */
    const settled = (proposalId: string) =>
      eventually('the outcome to settle', async () => {
        const told = await story(proposalId);
        return told.outcome === 'awaiting_resolution' ? undefined : told;
      });

    const bySettleVerifier = (told: Json) =>
      (told.verifications as Json[]).filter((v) => v.verifier === SETTLE_VERIFIER);

    let first = '';
    let second = '';

    describe('when nobody asks again after the settle time', () => {
      it('verifies it once by itself, after holding the verification asked for before', async () => {
        const { proposalId } = await timedOut({ verify: true });
        first = proposalId;
        expect(await story(proposalId)).toMatchObject({
          outcome: 'awaiting_resolution',
          verification_status: { status: 'inconclusive', reason: 'OUTCOME_UNKNOWN' },
          verifications: [{ verifier: 'agent:billing-bot', held: 'OUTCOME_UNKNOWN' }],
        });
        const told = await settled(proposalId);
        expect(told).toMatchObject({ outcome: 'verified', verification_status: { status: 'passed' } });
        expect(bySettleVerifier(told)).toMatchObject([
          {
            status: 'passed',
            checks: [{ name: 'refund.recorded', status: 'pass', source: 'billing-ledger' }],
          },
        ]);
        expect(bySettleVerifier(told)[0]?.held).toBeUndefined();
        // Later sweeps find nothing more to do.
        await sleep(1_000);
        expect(bySettleVerifier(await story(proposalId))).toHaveLength(1);
      });
    });

    describe('when the outcome settles while no server runs', () => {
      it('is verified once by the next server to start, and never again after another restart', async () => {
        const { proposalId, observedAt } = await timedOut({ verify: false });
        second = proposalId;
        await server.stop();
        const settlesAt = Date.parse(observedAt) + SETTLE_SECONDS * 1000;
        // Stopped before it settled: nothing was verified yet.
        expect(Date.now()).toBeLessThan(settlesAt);
        await sleep(settlesAt - Date.now() + 500);
        const restartedAt = new Date().toISOString();
        server = await start();
        const told = await settled(proposalId);
        expect(told).toMatchObject({ outcome: 'verified' });
        expect(bySettleVerifier(told)).toMatchObject([{ status: 'passed' }]);
        expect(bySettleVerifier(told)[0]?.verified_at >= restartedAt).toBe(true);

        await server.stop();
        server = await start();
        await sleep(1_500);
        for (const id of [first, second]) expect(bySettleVerifier(await story(id)), id).toHaveLength(1);
      });
    });

    // Two processes on one database need a database server: PGlite is embedded in one process by design.
    describe.runIf(backend.name === 'postgres')('when two servers start after it settled', () => {
      it('is verified once', async () => {
        const { proposalId, observedAt } = await timedOut({ verify: false });
        await server.stop();
        await sleep(Date.parse(observedAt) + SETTLE_SECONDS * 1000 - Date.now() + 500);
        const [a, b] = await Promise.all([start(), start()]);
        server = a;
        try {
          const told = await settled(proposalId);
          expect(told).toMatchObject({ outcome: 'verified' });
          await sleep(1_500);
          expect(bySettleVerifier(await story(proposalId))).toHaveLength(1);
        } finally {
          await b.stop();
        }
      });
    });

    describe('after every settle verification above', () => {
      it('leaves a log that `vouch verify` finds intact', async () => {
        // PGlite is one process's: stop the server, then verify the database as an auditor would.
        expect(await server.stop()).toBe(0);
        const verified = await runVouch(['verify'], { storage: env.storage, cwd: dir });
        expect(verified.code, verified.stderr + verified.stdout).toBe(0);
      });
    });
  },
);
