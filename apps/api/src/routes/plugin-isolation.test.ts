import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApp, type VouchApp } from '../app';
import { createHarness, type Harness } from '../testing/app-harness';
import { loadVerificationHost, type VerificationHost } from '../verification';

// biome-ignore lint/suspicious/noExplicitAny: response bodies are read loosely, then pinned with toMatchObject
type Json = Record<string, any>;

// Third-party plugins that try to leave their worker (packages/verifiers), configured in a
// vouch.config.json and loaded as `vouch serve` loads it.
const plugins = path.resolve(
  import.meta.dirname,
  '../../../../packages/verifiers/src/plugin/fixtures/hostile-plugins.mjs',
);

describe('plugin isolation, over HTTP', () => {
  let h: Harness;
  let app: VouchApp;
  let host: VerificationHost;
  let dir: string;
  let gw: string;
  let admin: string;
  let n = 0;
  // The loopback service a plugin tries to reach on its own; it records every request.
  const requests: string[] = [];
  const loopback = http.createServer((req, res) => {
    requests.push(`${req.method} ${req.url}`);
    res.end('{}');
  });

  beforeAll(async () => {
    await new Promise<void>((resolve) => loopback.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${(loopback.address() as AddressInfo).port}`;
    dir = await mkdtemp(path.join(tmpdir(), 'vouch-plugin-isolation-'));
    const file = path.join(dir, 'vouch.config.json');
    const entry = (exportName: string, handles: string, extra = {}) => ({
      use: plugins,
      export: exportName,
      handles: [handles],
      options: { url },
      ...extra,
    });
    await writeFile(
      file,
      JSON.stringify({
        verifiers: [
          entry('globalFetch', 'ticket.closed'),
          entry('spinner', 'spin', { timeoutMs: 1_000 }),
          entry('memoryHog', 'hog', { memoryMb: 64, timeoutMs: 30_000 }),
          entry('spinner', 'plain', { name: 'answers' }),
        ],
      }),
    );
    h = await createHarness();
    host = await loadVerificationHost(file, h.logger);
    app = createApp({ ledger: h.ledger, keys: h.keys, logger: h.logger, verification: host });
    admin = await h.keyFor('user:root', ['admin']);
    gw = await h.keyFor('agent:gw', ['gateway']);
    expect(
      (
        await call('POST', '/v1/tools', admin, {
          server_id: 'tickets-mcp',
          tool_name: 'close',
          side_effect: 'compensatable',
        })
      ).status,
    ).toBe(201);
  });
  afterAll(async () => {
    await host?.close?.();
    await h?.close();
    loopback.close();
    await rm(dir, { recursive: true, force: true });
  });

  async function call(method: string, route: string, key: string, body?: unknown) {
    const response = await app.request(route, {
      method,
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    return { status: response.status, body: (await response.json()) as Json };
  }

  /** Propose, execute and verify one call with `postcondition`; the verification's answer. */
  async function verified(postcondition: string) {
    const proposed = await call('POST', '/v1/proposals', gw, {
      idempotency_key: `iso-${++n}`,
      action: 'tickets.close',
      server_id: 'tickets-mcp',
      tool_name: 'close',
      target: { kind: 'ticket', id: `t_${n}`, env: 'test' },
      arguments: {},
      side_effect: 'compensatable',
      postconditions: [{ name: postcondition }],
    });
    expect(proposed.body.decision?.verdict).toBe('allow');
    expect((await call('POST', `/v1/proposals/${proposed.body.proposal.id}/authorize`, gw, {})).status).toBe(
      200,
    );
    const observed = await call('POST', '/v1/observations', gw, {
      proposal_id: proposed.body.proposal.id,
      outcome: 'succeeded',
      result: {},
    });
    expect(observed.status).toBe(201);
    const answer = await call('POST', `/v1/observations/${observed.body.observation.id}/verify`, gw);
    expect(answer.status).toBe(201);
    return answer.body;
  }

  it("refuses a plugin's own fetch to a loopback service: the check is an error, the service saw nothing", async () => {
    const body = await verified('ticket.closed');
    expect(body.status).toBe('inconclusive');
    expect(body.checks).toHaveLength(1);
    expect(body.checks[0]).toMatchObject({ status: 'error', reason: 'VERIFIER_CRASHED' });
    expect(body.checks[0].message).toMatch(/PLUGIN_NETWORK_DENIED/);
    expect(requests).toEqual([]);
  });

  it('records a spinning plugin as VERIFIER_TIMEOUT, and the server and the plugin answer afterwards', async () => {
    const body = await verified('spin');
    expect(body.checks[0]).toMatchObject({ status: 'error', reason: 'VERIFIER_TIMEOUT' });
    expect((await verified('spin-free')).status).toBe('inconclusive');
    expect((await verified('plain')).checks[0]).toMatchObject({ status: 'pass', observed: 'answered' });
  });

  it('records a plugin that runs out of memory as VERIFIER_CRASHED; the server goes on', async () => {
    const body = await verified('hog');
    expect(body.status).toBe('inconclusive');
    expect(body.checks[0]).toMatchObject({ status: 'error', reason: 'VERIFIER_CRASHED' });
    expect(body.checks[0].message).toMatch(/out of memory/);
    expect((await verified('plain')).checks[0]).toMatchObject({ status: 'pass', observed: 'answered' });
  });
});
