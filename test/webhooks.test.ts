import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { verifyWebhookSignature } from '@vouch/client';
import type { WebhookDelivery, WebhookDeliveryPage } from '@vouch/records';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { serverBackends } from './helpers/backends';
import { type StorageEnv, startVouchServer, type VouchServer } from './helpers/server';

// Issue 15, notifications: a real `vouch serve` with webhooks configured in vouch.config.json
// sends to a receiver this test runs on 127.0.0.1 (allow-listed per target). Checked: the
// signature with the receivers' helper, a retry after a 500 in the delivery log, no request to
// a private address without an allow-list, the Slack format, and a restart in the middle of
// retries that neither loses nor repeats a delivery.

const SECRET = 'whsec_e2e_3b9f0c1d2e4a';
// A Slack incoming-webhook URL is itself a secret: it must never show in a log or an answer.
const SLACK_TOKEN = 'T000SLACK/B000HOOK/xoxsecretpart';

interface Received {
  path: string;
  headers: IncomingHttpHeaders;
  body: string;
}

// biome-ignore lint/suspicious/noExplicitAny: response bodies are read loosely, then pinned with toMatchObject
type Json = Record<string, any>;

describe.each(serverBackends())('outbound webhooks on $name', (backend) => {
  const received: Received[] = [];
  let receiver: Server;
  let later = 503;
  let dir: string;
  let env: { storage: StorageEnv; drop(): Promise<void> };
  let server: VouchServer;
  let serverEnv: Record<string, string>;
  const keys = {} as Record<'gateway' | 'approver' | 'verifier' | 'auditor', string>;

  const at = (path: string) => received.filter((r) => r.path === path);
  const parsed = (r: Received) => JSON.parse(r.body) as Json;
  const until = async <T>(what: string, probe: () => T | undefined | Promise<T | undefined>): Promise<T> => {
    for (let i = 0; i < 1200; i++) {
      const value = await probe();
      if (value !== undefined && value !== false) return value;
      await delay(50);
    }
    throw new Error(`never happened: ${what}`);
  };
  const ok = async (response: Response, status = 200): Promise<Json> => {
    const text = await response.text();
    expect(response.status, text).toBe(status);
    return JSON.parse(text) as Json;
  };
  const deliveries = async (query: string): Promise<WebhookDelivery[]> =>
    (
      (await ok(
        await server.call('GET', `/v1/webhooks/deliveries?${query}`, { key: keys.auditor }),
      )) as WebhookDeliveryPage
    ).deliveries;

  beforeAll(async () => {
    let flaky = 0;
    receiver = createServer((req, res) => {
      let body = '';
      req.setEncoding('utf8').on('data', (chunk: string) => {
        body += chunk;
      });
      req.on('end', () => {
        received.push({ path: req.url ?? '', headers: req.headers, body });
        const status =
          req.url === '/flaky' ? (flaky++ === 0 ? 500 : 204) : req.url === '/later' ? later : 204;
        res.writeHead(status).end();
      });
    });
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
    const base = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`;
    dir = mkdtempSync(join(tmpdir(), 'vouch-webhooks-'));
    env = await backend.setup(dir);
    const local = { allowHosts: ['127.0.0.1'] };
    writeFileSync(
      join(dir, 'vouch.config.json'),
      JSON.stringify({
        webhooks: {
          // Due at once: the reminder's lead is longer than any approval lives.
          expiringLeadSeconds: 30 * 86_400,
          retryBaseMs: 50,
          retryMaxMs: 1000,
          maxAttempts: 30,
          pollIntervalMs: 50,
          targets: [
            {
              name: 'ops',
              url: `${base}/ops`,
              secretEnv: 'OPS_SECRET',
              events: [
                'approval.requested',
                'approval.expiring',
                'approval.resolved',
                'verification.failed',
                'outcome.unknown',
              ],
              ...local,
            },
            {
              name: 'flaky',
              url: `${base}/flaky`,
              secretEnv: 'OPS_SECRET',
              events: ['approval.requested'],
              ...local,
            },
            {
              name: 'later',
              url: `${base}/later`,
              secretEnv: 'OPS_SECRET',
              events: ['approval.resolved'],
              ...local,
            },
            {
              name: 'chat',
              urlEnv: 'SLACK_URL',
              format: 'slack',
              events: ['approval.requested', 'verification.failed'],
              ...local,
            },
            // No allow-list: 127.0.0.1 is loopback, which the SSRF policy refuses.
            {
              name: 'private',
              url: `${base}/private`,
              secretEnv: 'OPS_SECRET',
              events: ['approval.requested'],
            },
          ],
        },
      }),
    );
    serverEnv = { OPS_SECRET: SECRET, SLACK_URL: `${base}/slack/${SLACK_TOKEN}` };
    server = await startVouchServer({ storage: env.storage, cwd: dir, env: serverEnv });
    const issue = async (identity: string, roles: string[], extra: Json = {}) =>
      (
        await ok(
          await server.call('POST', '/v1/keys', {
            key: server.adminKey,
            body: { identity, roles, ...extra },
          }),
          201,
        )
      ).secret as string;
    keys.gateway = await issue('agent:billing-bot', ['gateway'], { scopes: ['billing:write'] });
    keys.approver = await issue('user:alice', ['approver']);
    keys.verifier = await issue('service:reconciler', ['verifier']);
    keys.auditor = await issue('user:audrey', ['auditor']);
    await ok(
      await server.call('POST', '/v1/tools', {
        key: server.adminKey,
        body: {
          server_id: 'billing',
          tool_name: 'refund.issue',
          side_effect: 'compensatable',
          required_scopes: ['billing:write'],
          approval_required: true,
        },
      }),
      201,
    );
  }, 240_000);
  afterAll(async () => {
    await server?.stop();
    await new Promise((resolve) => receiver?.close(resolve));
    await env?.drop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  const propose = async (order: string) => {
    const answer = await ok(
      await server.call('POST', '/v1/proposals', {
        key: keys.gateway,
        body: {
          idempotency_key: `refund-${order}`,
          action: 'refund.issue',
          server_id: 'billing',
          tool_name: 'refund.issue',
          target: { kind: 'order', id: order, env: 'production' },
          arguments: { order_id: order, amount: 4200 },
          side_effect: 'compensatable',
          postconditions: [{ name: 'refund.recorded', params: { order_id: order } }],
        },
      }),
      201,
    );
    return { proposalId: answer.proposal.id as string, approvalId: answer.approval.id as string };
  };
  const approveAndRun = async (ids: { proposalId: string; approvalId: string }, outcome: string) => {
    await ok(
      await server.call('POST', `/v1/approvals/${ids.approvalId}/approve`, { key: keys.approver, body: {} }),
    );
    await ok(await server.call('POST', `/v1/proposals/${ids.proposalId}/authorize`, { key: keys.gateway }));
    const observed = await ok(
      await server.call('POST', '/v1/observations', {
        key: keys.gateway,
        body: { proposal_id: ids.proposalId, outcome, result: {} },
      }),
      201,
    );
    return observed.observation.id as string;
  };

  let first: { proposalId: string; approvalId: string };
  const ofEvent = (path: string, type: string, subject: string) =>
    at(path).find((r) => parsed(r).type === type && parsed(r).subject === subject);

  it('sends approval.requested signed: the receivers’ helper accepts it, and refuses it tampered or replayed late', async () => {
    first = await propose('A-1');
    const delivery = await until('approval.requested at /ops', () =>
      ofEvent('/ops', 'approval.requested', first.approvalId),
    );
    const body = parsed(delivery);
    expect(body).toMatchObject({
      type: 'approval.requested',
      log: 'default',
      subject: first.approvalId,
      link: `${server.url}/v1/approvals/${first.approvalId}`,
      data: { id: first.approvalId, proposal_id: first.proposalId, tool_name: 'refund.issue' },
    });
    expect(delivery.headers['vouch-delivery']).toBe(body.id);
    const header = delivery.headers['vouch-signature'] as string;
    const signedAt = Number(/^t=(\d+),/.exec(header)?.[1]);
    const check = (over: { body?: string; now?: number; secret?: string }) =>
      verifyWebhookSignature({
        secret: over.secret ?? SECRET,
        header,
        body: over.body ?? delivery.body,
        now: over.now ?? signedAt,
      });
    expect(await check({})).toEqual({ valid: true, timestamp: signedAt });
    const tampered = delivery.body.replace(
      '"requester":"agent:billing-bot"',
      '"requester":"agent:other-bot"',
    );
    expect(tampered).not.toBe(delivery.body);
    expect(await check({ body: tampered })).toMatchObject({
      valid: false,
      code: 'SIGNATURE_MISMATCH',
    });
    expect(await check({ secret: 'another secret' })).toMatchObject({ code: 'SIGNATURE_MISMATCH' });
    expect(await check({ now: signedAt + 301 })).toMatchObject({ valid: false, code: 'SIGNATURE_EXPIRED' });
  }, 240_000);

  it('retries after a 500, and the delivery log shows both attempts', async () => {
    await until('two requests at /flaky', () => at('/flaky').length >= 2);
    const [one, two] = at('/flaky');
    expect(two!.headers['vouch-delivery']).toBe(one!.headers['vouch-delivery']);
    expect(two!.body).toBe(one!.body);
    const [logged] = await until('flaky delivered in the log', async () => {
      const found = await deliveries('target=flaky&status=delivered');
      return found.length > 0 ? found : undefined;
    });
    expect(logged!.id).toBe(one!.headers['vouch-delivery']);
    expect(logged!.attempts.map((a) => [a.attempt, a.outcome, a.status_code, a.error_code])).toEqual([
      [1, 'retry', 500, 'HTTP_STATUS'],
      [2, 'delivered', 204, null],
    ]);
    expect(logged!.attempts.every((a) => typeof a.duration_ms === 'number')).toBe(true);
  }, 240_000);

  it('sends nothing to a private address without an allow-list, and logs the refusal with its code', async () => {
    const [refused] = await until('private failed in the log', async () => {
      const found = await deliveries('target=private');
      return found[0]?.status === 'failed' ? found : undefined;
    });
    expect(refused!.attempts.map((a) => [a.outcome, a.error_code, a.status_code])).toEqual([
      ['failed', 'TARGET_FORBIDDEN', null],
    ]);
    expect(at('/private')).toEqual([]);
    expect(server.logs).toContainEqual(
      expect.objectContaining({
        msg: 'webhook delivery failed',
        target: 'private',
        code: 'TARGET_FORBIDDEN',
      }),
    );
  }, 240_000);

  it('sends Slack targets {"text": …} with a readable summary and a link', async () => {
    const slack = await until('a Slack message', () => received.find((r) => r.path.startsWith('/slack/')));
    const message = parsed(slack);
    expect(Object.keys(message)).toEqual(['text']);
    expect(message.text).toContain(
      'Approval requested: *refund.issue* on billing by agent:billing-bot in production',
    );
    expect(message.text).toContain(`<${server.url}/v1/approvals/${first.approvalId}|open>`);
    expect(slack.headers['vouch-signature']).toBeUndefined();
  }, 240_000);

  it('reminds of an approval about to expire, then sends its resolution, a failed verification and an unknown outcome', async () => {
    await until('approval.expiring', () => ofEvent('/ops', 'approval.expiring', first.approvalId));
    const observationId = await approveAndRun(first, 'succeeded');
    await ok(
      await server.call('POST', '/v1/verifications', {
        key: keys.verifier,
        body: {
          observation_id: observationId,
          checks: [
            { name: 'refund.recorded', status: 'fail', source: 'billing-ledger', evidence: { found: false } },
          ],
        },
      }),
      201,
    );
    const resolved = await until('approval.resolved', () =>
      ofEvent('/ops', 'approval.resolved', first.approvalId),
    );
    expect(parsed(resolved).data).toMatchObject({
      request_id: first.approvalId,
      resolution: 'approved',
      resolver: 'user:alice',
    });
    const failed = await until('verification.failed', () =>
      at('/ops').find((r) => parsed(r).type === 'verification.failed'),
    );
    expect(parsed(failed)).toMatchObject({ link: `${server.url}/v1/proposals/${first.proposalId}` });
    const chat = await until('verification.failed on Slack', () =>
      received.find((r) => r.path.startsWith('/slack/') && parsed(r).text.startsWith('Verification failed')),
    );
    expect(parsed(chat).text).toContain('refund.recorded did not hold');

    const second = await propose('A-2');
    await approveAndRun(second, 'unknown');
    const unknown = await until('outcome.unknown', () =>
      at('/ops').find((r) => parsed(r).type === 'outcome.unknown'),
    );
    expect(parsed(unknown).data).toMatchObject({ proposal_id: second.proposalId, outcome: 'unknown' });
  }, 240_000);

  it('loses and repeats nothing across a restart in the middle of retries', async () => {
    // `later` answers 503 to both resolutions so far: they are being retried when the server stops.
    await until('later retrying twice', async () => {
      const found = await deliveries('target=later&status=retrying');
      return found.length === 2 ? found : undefined;
    });
    expect(await server.stop()).toBe(0);
    later = 204;
    server = await startVouchServer({
      storage: env.storage,
      cwd: dir,
      env: serverEnv,
      adminKey: server.adminKey,
    });
    const third = await propose('A-3');
    await until('approval.requested of A-3 after the restart', () =>
      ofEvent('/ops', 'approval.requested', third.approvalId),
    );
    const resent = await until('later delivered after the restart', async () => {
      const found = await deliveries('target=later&status=delivered');
      return found.length === 2 ? found : undefined;
    });
    expect(resent.every((d) => d.attempts.at(-1)?.status_code === 204)).toBe(true);
    // Every delivery reached /ops once: none was sent again by the restarted server.
    const receivedIds = () => at('/ops').map((r) => String(r.headers['vouch-delivery']));
    const ids = receivedIds();
    expect(new Set(ids).size).toBe(ids.length);
    // A delivery is logged `delivered` after its receiver answered, and the server may still be
    // sending (a reminder comes due): read the log first, then what /ops received, until the
    // two agree. The log then holds exactly what /ops received, each once.
    const delivered = async () =>
      (await deliveries('target=ops&limit=200'))
        .filter((d) => d.status === 'delivered')
        .map((d) => d.id)
        .sort();
    const agreed = await until('every delivery /ops received logged as delivered, and no other', async () => {
      const logged = await delivered();
      const now = receivedIds();
      return logged.join() === [...now].sort().join() ? now : undefined;
    });
    expect(new Set(agreed).size).toBe(agreed.length);
    expect(agreed.length).toBeGreaterThanOrEqual(ids.length);
  }, 240_000);

  it('never shows a secret or a secret URL in a log line or an answer', async () => {
    const everything =
      JSON.stringify(await deliveries('limit=200')) + JSON.stringify(server.logs) + server.stderr();
    expect(everything).not.toContain(SECRET);
    expect(everything).not.toContain(SLACK_TOKEN);
    expect(everything).not.toContain('v1=');
  }, 240_000);
});
