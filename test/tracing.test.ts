// One gateway tool call, followed across processes: the agent (MCP SDK client) ->
// `vouch-mcp-gateway` -> `vouch serve`, both with tracing switched on by the standard
// OTEL_* environment and exporting OTLP/HTTP JSON to a receiver this test runs on loopback.
// The spans of both services must be ONE trace, the API's request spans children of the
// gateway's client spans, and the ledger's work children of the API's request spans.
import { createHash, randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { createVouchClient } from '@vouch/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { writeBooks } from './helpers/mcp-bank-upstream';
import {
  bankUpstream,
  type GatewayAgent,
  type HttpGatewayProcess,
  startGatewayAgent,
  startHttpGatewayProcess,
} from './helpers/mcp-gateway-process';
import { startVouchServer, type VouchServer } from './helpers/server';

/** One span as the OTLP JSON encoding carries it, with its service's name. */
interface ReceivedSpan {
  service: string;
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  attributes: Record<string, unknown>;
}

const SPAN_KIND_SERVER = 2;
const SPAN_KIND_CLIENT = 3;

type AnyValue = { stringValue?: string; intValue?: string | number; boolValue?: boolean };
type KeyValue = { key: string; value: AnyValue };

function attributesOf(list: KeyValue[] = []): Record<string, unknown> {
  return Object.fromEntries(
    list.map(({ key, value }) => [
      key,
      value.stringValue ?? (value.intValue === undefined ? value.boolValue : Number(value.intValue)),
    ]),
  );
}

/** A loopback OTLP/HTTP receiver (JSON protocol) that keeps every span it is sent. */
async function startReceiver(): Promise<{ url: string; spans: ReceivedSpan[]; server: Server }> {
  const spans: ReceivedSpan[] = [];
  const server = createServer((req, res) => {
    let body = '';
    req.setEncoding('utf8').on('data', (chunk: string) => {
      body += chunk;
    });
    req.on('end', () => {
      if (req.method === 'POST' && req.url === '/v1/traces') {
        const request = JSON.parse(body) as {
          resourceSpans: Array<{
            resource: { attributes: KeyValue[] };
            scopeSpans: Array<{
              spans: Array<Omit<ReceivedSpan, 'service' | 'attributes'> & { attributes: KeyValue[] }>;
            }>;
          }>;
        };
        for (const resourceSpans of request.resourceSpans) {
          const service = String(attributesOf(resourceSpans.resource.attributes)['service.name']);
          for (const scope of resourceSpans.scopeSpans)
            for (const span of scope.spans)
              spans.push({ ...span, service, attributes: attributesOf(span.attributes) });
        }
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, spans, server };
}

/** Poll `read` until it returns a value (not undefined), or fail after `ms`. */
async function eventually<T>(what: string, read: () => T | undefined, ms = 30_000): Promise<T> {
  const until = Date.now() + ms;
  for (;;) {
    const value = read();
    if (value !== undefined) return value;
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

let dir: string;
let receiver: Awaited<ReturnType<typeof startReceiver>>;
let server: VouchServer;
let gateway: GatewayAgent;
let httpGateway: HttpGatewayProcess;
const AGENT_TOKEN = 'tracing-agent-token-0123456789';

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'vouch-tracing-'));
  receiver = await startReceiver();
  const otel = {
    OTEL_TRACES_EXPORTER: 'otlp',
    OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
    OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
    OTEL_BSP_SCHEDULE_DELAY: '100',
  };
  server = await startVouchServer({ storage: { VOUCH_DATA_DIR: join(dir, 'data') }, cwd: dir, env: otel });
  const admin = createVouchClient({ baseUrl: server.url, apiKey: server.adminKey });
  const gatewaySecret = (await admin.keys.create({ identity: 'agent:bank-gateway', roles: ['gateway'] }))
    .secret;
  await admin.tools.register({
    server_id: 'bank',
    tool_name: 'get_balance',
    side_effect: 'read_only',
    allowed_environments: ['production'],
  });
  const booksPath = join(dir, 'books.json');
  writeBooks(booksPath, { accounts: { 'acct-1': 100 }, calls: [] });
  const configPath = join(dir, 'gateway.json');
  writeFileSync(
    configPath,
    JSON.stringify({
      upstream: bankUpstream(booksPath),
      vouch: { url: server.url },
      serverId: 'bank',
      environment: 'production',
      tools: { get_balance: { target: { kind: 'account', idArgument: 'account' } } },
    }),
  );
  gateway = await startGatewayAgent({ configPath, apiKey: gatewaySecret, env: otel });

  // The same gateway serving agents over Streamable HTTP.
  const httpConfigPath = join(dir, 'gateway-http.json');
  writeFileSync(
    httpConfigPath,
    JSON.stringify({
      upstream: bankUpstream(booksPath),
      vouch: { url: server.url },
      serverId: 'bank',
      environment: 'production',
      agentServer: {
        port: 0,
        agents: [
          {
            name: 'traced',
            tokenSha256: createHash('sha256').update(AGENT_TOKEN).digest('hex'),
            apiKeyEnv: 'AGENT_KEY',
          },
        ],
      },
    }),
  );
  httpGateway = await startHttpGatewayProcess({
    configPath: httpConfigPath,
    env: { ...otel, AGENT_KEY: gatewaySecret },
  });
}, 120_000);

afterAll(async () => {
  await gateway?.close();
  await httpGateway?.stop();
  await server?.stop();
  receiver?.server.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe('tracing across the MCP gateway and the API', () => {
  describe('when an agent makes one governed tool call', () => {
    it('exports one trace: the gateway call span, its client spans, the API request spans under them, and the ledger work under those', async () => {
      const result = await gateway.agent.callTool({ name: 'get_balance', arguments: { account: 'acct-1' } });
      expect(result.isError ?? false).toBe(false);

      const call = await eventually('the gateway call span', () =>
        receiver.spans.find((s) => s.service === 'vouch-mcp-gateway' && s.name === 'tools/call get_balance'),
      );
      expect(call).toMatchObject({
        kind: SPAN_KIND_SERVER,
        attributes: { 'gen_ai.tool.name': 'get_balance', 'vouch.status': 'executed' },
      });
      const inTrace = () => receiver.spans.filter((s) => s.traceId === call.traceId);
      const upstream = await eventually('the upstream call span', () =>
        receiver.spans.find((s) => s.name === 'upstream tools/call get_balance'),
      );
      expect(upstream).toMatchObject({
        traceId: call.traceId,
        parentSpanId: call.spanId,
        kind: SPAN_KIND_CLIENT,
      });
      // The gateway proposes, then records the observation: at least two requests to the API.
      const apiRequests = await eventually('the API request spans of the call', () => {
        const spans = inTrace().filter((s) => s.service === 'vouch-api' && s.kind === SPAN_KIND_SERVER);
        return spans.length >= 2 && spans.some((s) => s.attributes['http.route'] === '/v1/proposals')
          ? spans
          : undefined;
      });
      const clientSpans = inTrace().filter(
        (s) => s.service === 'vouch-mcp-gateway' && s.kind === SPAN_KIND_CLIENT,
      );
      for (const request of apiRequests) {
        const parent = clientSpans.find((s) => s.spanId === request.parentSpanId);
        expect(parent, `the parent of ${request.name}`).toBeDefined();
        expect(parent!.parentSpanId).toBe(call.spanId);
        expect(request.attributes['http.response.status_code']).toBe(
          request.name.startsWith('POST') ? 201 : 200,
        );
      }
      const proposal = apiRequests.find((s) => s.attributes['http.route'] === '/v1/proposals')!;
      expect(proposal.name).toBe('POST /v1/proposals');

      // The ledger's work for the proposal runs under the API's request span.
      const ledgerWork = await eventually('the ledger spans of the proposal', () => {
        const spans = inTrace().filter((s) => s.service === 'vouch-api' && s.name.startsWith('ledger.'));
        return spans.some((s) => s.name === 'ledger.batch') ? spans : undefined;
      });
      const apiSpanIds = new Set(
        inTrace()
          .filter((s) => s.service === 'vouch-api')
          .map((s) => s.spanId),
      );
      for (const span of ledgerWork) expect(apiSpanIds.has(span.parentSpanId!), span.name).toBe(true);

      // The API's request log lines carry the same trace id.
      const logged = server.logs.filter((line) => line.msg === 'request' && line.trace_id === call.traceId);
      expect(logged.map((line) => line.span_id).sort()).toEqual(apiRequests.map((s) => s.spanId).sort());
    });
  });

  describe('when an agent calls over HTTP with its own W3C traceparent', () => {
    it("continues the agent's trace: the gateway call span is a child of the agent's span", async () => {
      const traceId = randomBytes(16).toString('hex');
      const agentSpanId = randomBytes(8).toString('hex');
      const agent = new Client({ name: 'traced-agent', version: '0.0.0' });
      await agent.connect(
        new StreamableHTTPClientTransport(new URL(httpGateway.url), {
          requestInit: {
            headers: {
              authorization: `Bearer ${AGENT_TOKEN}`,
              traceparent: `00-${traceId}-${agentSpanId}-01`,
            },
          },
        }),
      );
      try {
        const result = await agent.callTool({ name: 'get_balance', arguments: { account: 'acct-1' } });
        expect(result.isError ?? false).toBe(false);
      } finally {
        await agent.close();
      }
      const call = await eventually('the gateway call span in the agent trace', () =>
        receiver.spans.find((s) => s.name === 'tools/call get_balance' && s.traceId === traceId),
      );
      expect(call).toMatchObject({ parentSpanId: agentSpanId, kind: SPAN_KIND_SERVER });
      // The API's request spans join the same trace, under the gateway's.
      await eventually('an API request span in the agent trace', () =>
        receiver.spans.find((s) => s.service === 'vouch-api' && s.traceId === traceId),
      );
    });
  });
});
