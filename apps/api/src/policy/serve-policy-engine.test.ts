import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateApiKey } from '../auth/api-key';
import { serveConfig } from '../config';
import { createMemoryLogger } from '../logger';
import { type RunningServer, startServer } from '../server';
import { loadServerSettings } from '../settings/server-settings';

// biome-ignore lint/suspicious/noExplicitAny: answers are read loosely
type Json = Record<string, any>;

const TOKEN = 'serve-engine-token-9f8e7d6c5b4a';

let root: string;
let engine: Server;
let answer: { status: number; body: Json } = { status: 503, body: {} };
const authorizations: Array<string | undefined> = [];
const adminKey = generateApiKey().secret;
const logger = createMemoryLogger();

beforeAll(async () => {
  root = mkdtempSync(join(tmpdir(), 'vouch-serve-policy-'));
  engine = createServer((req, res) => {
    authorizations.push(req.headers.authorization);
    req.resume();
    req.on('end', () => {
      res.writeHead(answer.status, { 'content-type': 'application/json' });
      res.end(JSON.stringify(answer.body));
    });
  });
  await new Promise<void>((resolve) => engine.listen(0, '127.0.0.1', () => resolve()));
});
afterAll(async () => {
  engine.closeAllConnections();
  await new Promise<void>((resolve) => engine.close(() => resolve()));
  rmSync(root, { recursive: true, force: true });
});

/** `vouch serve` as the CLI starts it: the settings from the file and the environment. */
async function serve(): Promise<RunningServer> {
  const port = (engine.address() as AddressInfo).port;
  const file = join(root, 'vouch.config.json');
  writeFileSync(
    file,
    JSON.stringify({
      verifiers: [],
      server: {
        policy: {
          engine: 'external',
          decisionUrl: `http://127.0.0.1:${port}/v1/data/vouch/decision`,
          allowHosts: ['127.0.0.1'],
          identity: 'service:opa',
          source: 'opa',
        },
      },
    }),
  );
  const env = {
    VOUCH_DATA_DIR: join(root, 'data'),
    PORT: '0',
    VOUCH_ADMIN_KEY: adminKey,
    VOUCH_CONFIG: file,
    VOUCH_POLICY_TOKEN: TOKEN,
  };
  const config = serveConfig(env, root);
  const settings = await loadServerSettings({ file: config.verifierConfig, env });
  return startServer({ config: { ...config, settings }, logger, announceAdminKey: () => {} });
}

async function call(server: RunningServer, method: string, path: string, key: string, body?: unknown) {
  const response = await fetch(`${server.url}${path}`, {
    method,
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  return { status: response.status, body: (await response.json()) as Json };
}

describe('vouch serve with an external policy engine', () => {
  it('waits while the engine fails, and after a restart records its decision', async () => {
    let server = await serve();
    const issue = async (identity: string, roles: string[]) =>
      (await call(server, 'POST', '/v1/keys', adminKey, { identity, roles })).body.secret as string;
    const gateway = await issue('agent:gw', ['gateway']);
    const auditor = await issue('user:audrey', ['auditor']);
    const tool = { server_id: 'pay', tool_name: 'refund', side_effect: 'compensatable' };
    expect((await call(server, 'POST', '/v1/tools', adminKey, tool)).status).toBe(201);
    const proposed = await call(server, 'POST', '/v1/proposals', gateway, {
      idempotency_key: 'serve-1',
      action: 'pay.refund',
      ...tool,
      target: { kind: 'account', id: 'acct-1', env: 'production' },
      arguments: { amount: 5 },
    });
    expect(proposed.status).toBe(202);
    expect(proposed.body.decision).toBeNull();
    expect(logger.lines.some((line) => line.code === 'ENGINE_HTTP_STATUS')).toBe(true);
    await server.close();

    answer = { status: 200, body: { result: { decision: 'allow', reason: 'small refund' } } };
    server = await serve();
    try {
      // The loop's first round runs at start-up; the decision appears without another request.
      let decision: Json | null = null;
      for (let i = 0; i < 50 && decision === null; i++) {
        decision = (await call(server, 'GET', `/v1/proposals/${proposed.body.proposal.id}`, auditor)).body
          .decision;
        if (decision === null) await new Promise((resolve) => setTimeout(resolve, 100));
      }
      expect(decision).toMatchObject({ verdict: 'allow', source: 'opa', decided_by: 'service:opa' });
      expect(authorizations.every((header) => header === `Bearer ${TOKEN}`)).toBe(true);
      expect(JSON.stringify(logger.lines)).not.toContain(TOKEN);
      // The log pins the engine it asks, once across both starts, with no secret in it.
      const { events } = (await call(server, 'GET', '/v1/logs/default/events', auditor)).body;
      const pins = (events as Json[]).filter((e) => e.kind === 'policy.configured');
      expect(pins.map((e) => JSON.parse(e.payload).policy)).toEqual([
        expect.objectContaining({
          engine: 'external',
          decisions: 'asked',
          identity: 'service:opa',
          source: 'opa',
        }),
      ]);
      expect(JSON.stringify(events)).not.toContain(TOKEN);
    } finally {
      await server.close();
    }
  });
});
