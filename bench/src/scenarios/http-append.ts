import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { Agent, request } from 'node:http';
import { fileURLToPath } from 'node:url';
import type { BenchDatabase } from '../backends';
import type { BenchOptions } from '../options';
import { type Figure, figure } from '../report';
import { closedLoop } from '../stats';
import { appendThroughputBaseline } from './append-throughput';

const child = fileURLToPath(new URL('../children/http-server.ts', import.meta.url));

interface Server {
  port: number;
  gateway: string;
  auditor: string;
  stop(): Promise<void>;
}

async function startServer(url: string | undefined): Promise<Server> {
  const proc = spawn(
    process.execPath,
    [
      ...(process.env.VOUCH_BENCH_PROFILE_DIR
        ? ['--cpu-prof', `--cpu-prof-dir=${process.env.VOUCH_BENCH_PROFILE_DIR}`]
        : []),
      '--import',
      'tsx',
      '--conditions=@vouch/source',
      child,
      ...(url ? ['--url', url] : []),
    ],
    { stdio: ['pipe', 'pipe', 'inherit'] },
  );
  let buffered = '';
  proc.stdout!.setEncoding('utf8');
  for await (const chunk of proc.stdout!) {
    buffered += chunk;
    if (buffered.includes('\n')) break;
  }
  const info = JSON.parse(buffered.split('\n')[0]!) as Omit<Server, 'stop'>;
  return {
    ...info,
    stop: async () => {
      proc.stdin!.end();
      await once(proc, 'close');
    },
  };
}

/** One HTTP/1.1 request over a keep-alive agent; resolves with the status and body. */
function call(
  agent: Agent,
  port: number,
  options: { method: string; path: string; key: string; body?: string },
): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(
      {
        agent,
        host: '127.0.0.1',
        port,
        method: options.method,
        path: options.path,
        headers: {
          authorization: `Bearer ${options.key}`,
          ...(options.body ? { 'content-type': 'application/json' } : {}),
        },
      },
      (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => {
          body += chunk;
        });
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      },
    );
    req.on('error', reject);
    req.end(options.body);
  });
}

async function headSeq(agent: Agent, server: Server, log: string): Promise<number> {
  const res = await call(agent, server.port, {
    method: 'GET',
    path: `/v1/logs/${log}/head`,
    key: server.auditor,
  });
  if (res.status !== 200) throw new Error(`head: ${res.status} ${res.body}`);
  return (JSON.parse(res.body) as { head: { seq: number } | null }).head?.seq ?? 0;
}

/**
 * Proposals over HTTP (each one a proposal event and a decision event, with Merkle storage,
 * through hono on a real socket to a server process) from N keep-alive connections, beside
 * the same plain batched-INSERT baseline as the in-process figures; and beside it the HTTP
 * ceiling: the same connections asking GET /healthz.
 */
export async function httpAppend(
  bench: BenchDatabase,
  backend: string,
  options: BenchOptions,
): Promise<Figure[]> {
  const server = await startServer(bench.url);
  const figures: Figure[] = [];
  try {
    const writers = options.writers.filter((w) => w === 64 || options.writers.length === 1);
    for (const connections of writers.length > 0 ? writers : [64]) {
      const agent = new Agent({ keepAlive: true, maxSockets: connections });
      const log = `http-${connections}`;
      const before = await headSeq(agent, server, log);
      const proposals = await closedLoop({
        workers: connections,
        warmupMs: options.warmupMs,
        durationMs: options.durationMs,
        op: async (w, i) => {
          const res = await call(agent, server.port, {
            method: 'POST',
            path: `/v1/proposals?log=${log}`,
            key: server.gateway,
            body: JSON.stringify({
              idempotency_key: `k-${w}-${i}`,
              action: 'http.request',
              server_id: 'bench',
              tool_name: 'fetch',
              target: { kind: 'service', id: `svc-${i % 97}`, env: 'prod' },
              arguments: { method: 'POST', path: `/v1/items/${i}` },
              side_effect: 'read_only',
            }),
          });
          if (res.status >= 300) throw new Error(`propose: ${res.status} ${res.body.slice(0, 300)}`);
          return 1;
        },
      });
      const events = (await headSeq(agent, server, log)) - before;
      const eventsPerProposal = events / Math.max(1, proposals.totalUnits);
      const ceiling = await closedLoop({
        workers: connections,
        warmupMs: options.warmupMs,
        durationMs: options.durationMs,
        op: async () => {
          const res = await call(agent, server.port, {
            method: 'GET',
            path: '/healthz',
            key: server.gateway,
          });
          if (res.status !== 200) throw new Error(`healthz: ${res.status}`);
          return 1;
        },
      });
      agent.destroy();
      const raw = await appendThroughputBaseline(bench, options.payloads[0] ?? 300, connections, options);
      const point = `${connections} connections, POST /v1/proposals`;
      const extra = {
        connections,
        proposalsPerSecond: proposals.perSecond,
        eventsPerProposal,
        healthzPerSecond: ceiling.perSecond,
      };
      figures.push(
        figure({
          scenario: 'http-append',
          backend,
          point,
          metric: 'events appended over HTTP',
          unit: 'events/s',
          // Every proposal appended `eventsPerProposal` events (a proposal and its decision).
          value: proposals.perSecond * eventsPerProposal,
          baseline: { name: raw.name, value: raw.perSecond },
          better: 'higher',
          ...(backend === 'postgres' && connections === 64 ? { target: { value: 10_000 } } : {}),
          extra,
        }),
        figure({
          scenario: 'http-append',
          backend,
          point,
          metric: 'proposals over HTTP',
          unit: 'requests/s',
          value: proposals.perSecond,
          baseline: { name: 'GET /healthz, same connections', value: ceiling.perSecond },
          better: 'higher',
          extra,
        }),
      );
    }
  } finally {
    await server.stop();
  }
  return figures;
}
