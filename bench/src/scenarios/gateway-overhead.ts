import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { Agent } from 'node:http';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import type { BenchDatabase } from '../backends';
import type { BenchOptions } from '../options';
import { type Figure, figure } from '../report';
import { now, quantile, sortedCopy } from '../stats';
import { headSeq, type Server, startServer } from '../vouch-server';

const repoRoot = fileURLToPath(new URL('../../../', import.meta.url));
const upstreamScript = fileURLToPath(new URL('../children/mcp-upstream.ts', import.meta.url));
const gatewayBin = fileURLToPath(
  new URL('../../../apps/mcp-gateway/bin/vouch-mcp-gateway.js', import.meta.url),
);

/** The upstream as a stdio command: the same one the agent calls directly and the gateway calls. */
const upstreamCommand = { command: process.execPath, args: ['--import', 'tsx', upstreamScript] };

/** What the agent side reads back from every call, so a refused or failed call is not timed as a success. */
function expectServed(result: Awaited<ReturnType<Client['callTool']>>, id: string, governed: boolean): void {
  const text = (result.content as Array<{ type: string; text?: string }>)[0]?.text;
  if (result.isError || text !== `item ${id}: in stock`) {
    throw new Error(`the call was not served: ${JSON.stringify(result).slice(0, 400)}`);
  }
  const meta = (result._meta as Record<string, { status?: string }> | undefined)?.['vouch.dev/execution'];
  if (governed && meta?.status !== 'executed') {
    throw new Error(`the gateway did not execute the call through Vouch: ${JSON.stringify(result._meta)}`);
  }
}

/** One MCP agent (the SDK's client over stdio) and the process it talks to. */
async function connectAgent(transport: StdioClientTransport): Promise<Client> {
  const client = new Client({ name: 'bench-agent', version: '1.0.0' });
  await client.connect(transport);
  return client;
}

function directAgent(): Promise<Client> {
  return connectAgent(new StdioClientTransport({ ...upstreamCommand, cwd: repoRoot, stderr: 'inherit' }));
}

/** An agent of its own gateway process; the gateway's log lines are kept out of the report unless it fails to start. */
async function gatewayAgent(configPath: string, apiKey: string): Promise<Client> {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [gatewayBin, '--config', configPath],
    cwd: repoRoot,
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', VOUCH_API_KEY: apiKey },
    stderr: 'pipe',
  });
  let log = '';
  transport.stderr?.on('data', (chunk: Buffer) => {
    log = (log + chunk.toString('utf8')).slice(-4_000);
  });
  try {
    return await connectAgent(transport);
  } catch (error) {
    throw new Error(`the gateway did not start: ${String(error)}\n${log}`);
  }
}

/** `calls` sequential calls from each agent, all agents at once; the latency of every call in ms. */
async function round(agents: Client[], calls: number, governed: boolean, tag: string): Promise<number[]> {
  const latencies: number[] = [];
  await Promise.all(
    agents.map(async (agent, a) => {
      for (let i = 0; i < calls; i++) {
        // A new id per call: identical arguments would be the same action, replayed by the gateway.
        const id = `${tag}-${a}-${i}`;
        const started = now();
        const result = await agent.callTool({ name: 'fetch', arguments: { id } });
        latencies.push(now() - started);
        expectServed(result, id, governed);
      }
    }),
  );
  return latencies;
}

/**
 * The MCP gateway's cost per tool call: N agents (the MCP SDK's client, each with its own
 * stdio process as MCP hosts run them) call a read-only tool directly, then through
 * `vouch-mcp-gateway` in front of the same upstream, with Vouch on a real socket in its own
 * process. Rounds alternate (direct, gateway, direct, gateway) after a warm-up of each, so
 * both see the same machine; the median and p99 of each are reported beside the direct ones.
 */
export async function gatewayOverhead(
  bench: BenchDatabase,
  backend: string,
  options: BenchOptions,
): Promise<Figure[]> {
  const server = await startServer(bench.url, null, ['default']);
  const dir = mkdtempSync(join(tmpdir(), 'vouch-bench-gateway-'));
  const configPath = join(dir, 'gateway.json');
  writeFileSync(
    configPath,
    JSON.stringify({
      upstream: upstreamCommand,
      vouch: { url: `http://127.0.0.1:${server.port}` },
      // The bench server registers `fetch` of server `bench` as read-only in `prod`: allowed
      // without approval, and with no postconditions, the gateway's two-round-trip path.
      serverId: 'bench',
      environment: 'prod',
    }),
  );
  const figures: Figure[] = [];
  try {
    for (const agentsCount of [1, 16]) {
      figures.push(...(await measure(server, backend, options, configPath, agentsCount)));
    }
  } finally {
    await server.stop();
    rmSync(dir, { recursive: true, force: true });
  }
  return figures;
}

async function measure(
  server: Server,
  backend: string,
  options: BenchOptions,
  configPath: string,
  agentsCount: number,
): Promise<Figure[]> {
  const calls = agentsCount === 1 ? (options.quick ? 50 : 200) : options.quick ? 10 : 40;
  const warmup = options.quick ? 10 : 30;
  const direct = await Promise.all(Array.from({ length: agentsCount }, () => directAgent()));
  const gateway = await Promise.all(
    Array.from({ length: agentsCount }, () => gatewayAgent(configPath, server.gateway)),
  );
  const http = new Agent({ keepAlive: true });
  try {
    await round(direct, warmup, false, `warm-d${agentsCount}`);
    await round(gateway, warmup, true, `warm-g${agentsCount}`);
    const directLatencies: number[] = [];
    const gatewayLatencies: number[] = [];
    const before = await headSeq(http, server, 'default');
    const cpuBefore = server.cpuMs();
    for (let r = 0; r < 2; r++) {
      directLatencies.push(...(await round(direct, calls, false, `d${agentsCount}-${r}`)));
      gatewayLatencies.push(...(await round(gateway, calls, true, `g${agentsCount}-${r}`)));
    }
    const cpuAfter = server.cpuMs();
    const events = (await headSeq(http, server, 'default')) - before;
    const governedCalls = gatewayLatencies.length;
    const d = sortedCopy(directLatencies);
    const g = sortedCopy(gatewayLatencies);
    const extra = {
      agents: agentsCount,
      callsPerSide: governedCalls,
      load: loadavg(),
      directMedianMs: quantile(d, 0.5),
      directP99Ms: quantile(d, 0.99),
      gatewayMedianMs: quantile(g, 0.5),
      gatewayP99Ms: quantile(g, 0.99),
      overheadMedianMs: quantile(g, 0.5) - quantile(d, 0.5),
      eventsPerCall: events / governedCalls,
      // The Vouch server's CPU over the gateway rounds and the direct ones between them (which
      // do not reach it): per governed call.
      ...(cpuBefore === null || cpuAfter === null
        ? {}
        : { vouchServerCpuMicrosPerCall: ((cpuAfter - cpuBefore) * 1000) / governedCalls }),
    };
    const point = `${agentsCount} agent${agentsCount === 1 ? '' : 's'}, read-only tools/call over stdio`;
    return (['median', 'p99'] as const).map((stat) =>
      figure({
        scenario: 'gateway-overhead',
        backend,
        point,
        metric: `tool call latency through the gateway, ${stat}`,
        unit: 'ms',
        value: quantile(g, stat === 'median' ? 0.5 : 0.99),
        baseline: { name: `direct call, ${stat}`, value: quantile(d, stat === 'median' ? 0.5 : 0.99) },
        better: 'lower',
        extra,
      }),
    );
  } finally {
    http.destroy();
    await Promise.all([...direct, ...gateway].map((client) => client.close()));
  }
}
