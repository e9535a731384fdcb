import { Agent } from 'node:http';
import { loadavg } from 'node:os';
import { payloadHashOf, proposalPayloadOf } from '@vouch/client';
import type { BenchDatabase } from '../backends';
import type { BenchOptions } from '../options';
import { type Figure, figure } from '../report';
import { closedLoop } from '../stats';
import { call, headSeq, post, type Server, startServer } from '../vouch-server';
import { appendThroughputBaseline } from './append-throughput';

const fmtCores = (cores: number | undefined) => (cores === undefined ? '?' : cores.toFixed(2));

/** One gateway tool call: the proposal it makes, and `call` making it over HTTP. */
type FlowStep = (agent: Agent, server: Server, q: string, w: number, i: number) => Promise<unknown>;

const flowProposal = (w: number, i: number) => ({
  idempotency_key: `f-${w}-${i}`,
  action: 'http.request',
  server_id: 'bench',
  tool_name: 'fetch',
  target: { kind: 'service', id: `svc-${i % 97}`, env: 'prod' },
  arguments: { method: 'GET', path: `/v1/items/${i}` },
  side_effect: 'read_only' as const,
});
const flowResult = { outcome: 'succeeded', result: { status: 200, items: 1 }, transport_status: 200 };

/** Four requests: propose, authorize, observe, and an external verifier posting its checks. */
const fourRequests: FlowStep = async (agent, server, q, w, i) => {
  const { proposal } = await post<{ proposal: { id: string } }>(
    agent,
    server,
    `/v1/proposals${q}`,
    server.gateway,
    flowProposal(w, i),
  );
  await post(agent, server, `/v1/proposals/${proposal.id}/authorize${q}`, server.gateway, {});
  const { observation } = await post<{ observation: { id: string } }>(
    agent,
    server,
    `/v1/observations${q}`,
    server.gateway,
    { proposal_id: proposal.id, ...flowResult },
  );
  await post(agent, server, `/v1/verifications${q}`, server.verifier, {
    observation_id: observation.id,
    checks: [{ name: 'item.readable', status: 'pass', source: 'inventory-replica' }],
  });
};

/**
 * Two requests, as `@vouch/client`'s `execute` makes them: propose and authorize in one
 * (`?authorize=<payload hash>`), observe and run the server's verifiers in the other
 * (`?verify=true`; the bench server has none, so its checks are inconclusive).
 */
const twoRequests: FlowStep = async (agent, server, q, w, i) => {
  const action = flowProposal(w, i);
  const hash = payloadHashOf(proposalPayloadOf(action));
  const { proposal, authorization } = await post<{ proposal: { id: string }; authorization: unknown }>(
    agent,
    server,
    `/v1/proposals${q}&authorize=${hash}`,
    server.gateway,
    action,
  );
  if (authorization === null) throw new Error(`proposal ${proposal.id} was not authorized`);
  const { verification } = await post<{ verification: unknown }>(
    agent,
    server,
    `/v1/observations${q}&verify=true`,
    server.gateway,
    { proposal_id: proposal.id, ...flowResult },
  );
  if (verification === null) throw new Error(`observation of ${proposal.id} was not verified`);
};

/**
 * What a gateway does for one tool call, end to end: propose (decided by the built-in
 * policy), authorize, record what the tool returned, and record a check of it, in the
 * requests `step` makes. Closed loop over the same connections; per call: its rate, events
 * and server CPU.
 */
async function gatewayFlows(
  agent: Agent,
  server: Server,
  log: string,
  connections: number,
  options: BenchOptions,
  step: FlowStep,
): Promise<{ perSecond: number; eventsPerFlow: number; cpuMicros: number | null }> {
  const q = `?log=${log}`;
  const before = await headSeq(agent, server, log);
  const flows = await closedLoop({
    workers: connections,
    warmupMs: options.serverWarmupMs,
    durationMs: options.durationMs,
    cpuMs: server.cpuMs,
    op: async (w, i) => {
      await step(agent, server, q, w, i);
      return 1;
    },
  });
  const events = (await headSeq(agent, server, log)) - before;
  return {
    perSecond: flows.perSecond,
    eventsPerFlow: events / Math.max(1, flows.totalUnits),
    cpuMicros: cpuPerUnit(flows),
  };
}

/** Proposals from `connections` keep-alive connections, closed loop, into `log`. */
function proposalLoop(agent: Agent, server: Server, log: string, connections: number, options: BenchOptions) {
  return closedLoop({
    workers: connections,
    warmupMs: options.serverWarmupMs,
    durationMs: options.durationMs,
    cpuMs: server.cpuMs,
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
}

/**
 * The same proposals against `vouch serve --workers N`'s shape (node:cluster workers on one
 * port), beside the one-process server's rate from the same run: the gain of using more cores.
 * The load average is kept with each figure: on a shared machine it says how many cores there
 * were to gain.
 */
async function workersGain(
  bench: BenchDatabase,
  options: BenchOptions,
  connections: number,
  oneWorker: { perSecond: number; load: number[] },
): Promise<Figure> {
  const log = `http-${connections}-w${options.workers}`;
  const server = await startServer(bench.url, null, [log], options.workers);
  try {
    const agent = new Agent({ keepAlive: true, maxSockets: connections });
    const proposals = await proposalLoop(agent, server, log, connections, options);
    agent.destroy();
    return figure({
      scenario: 'http-append',
      backend: 'postgres',
      point: `${connections} connections, POST /v1/proposals, ${options.workers} workers`,
      metric: 'proposals over HTTP',
      unit: 'requests/s',
      value: proposals.perSecond,
      baseline: { name: '1 worker, same run', value: oneWorker.perSecond },
      better: 'higher',
      extra: {
        connections,
        workers: options.workers,
        load: loadavg(),
        baselineLoad: oneWorker.load,
        ...(proposals.windowCpuMs === null
          ? {}
          : {
              serverCpuMicrosPerProposal: cpuPerUnit(proposals),
              serverCores: proposals.windowCpuMs / options.durationMs,
            }),
      },
    });
  } finally {
    await server.stop();
  }
}

/**
 * Proposals over HTTP (each one a proposal event and a decision event, with Merkle storage,
 * through hono on a real socket to a server process) from N keep-alive connections, beside
 * the same plain batched-INSERT baseline as the in-process figures; and beside it the HTTP
 * ceiling: the same connections asking GET /healthz. Then whole gateway tool calls (propose,
 * authorize, observe, verify) on the same connections, beside a quarter of that ceiling.
 */
export async function httpAppend(
  bench: BenchDatabase,
  backend: string,
  options: BenchOptions,
): Promise<Figure[]> {
  const writers = options.writers.filter((w) => w === 64 || options.writers.length === 1);
  const points = writers.length > 0 ? writers : [64];
  const logs = points.flatMap((n) => [`http-${n}`, `flow-${n}`, `fast-${n}`]);
  const server = await startServer(bench.url, options.profileDir, logs);
  const figures: Figure[] = [];
  try {
    for (const connections of points) {
      const agent = new Agent({ keepAlive: true, maxSockets: connections });
      const log = `http-${connections}`;
      const before = await headSeq(agent, server, log);
      const proposals = await proposalLoop(agent, server, log, connections, options);
      const events = (await headSeq(agent, server, log)) - before;
      const eventsPerProposal = events / Math.max(1, proposals.totalUnits);
      const ceiling = await closedLoop({
        workers: connections,
        warmupMs: options.serverWarmupMs,
        durationMs: options.durationMs,
        cpuMs: server.cpuMs,
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
      const flow = await gatewayFlows(
        agent,
        server,
        `flow-${connections}`,
        connections,
        options,
        fourRequests,
      );
      const fast = await gatewayFlows(
        agent,
        server,
        `fast-${connections}`,
        connections,
        options,
        twoRequests,
      );
      agent.destroy();
      const raw = await appendThroughputBaseline(bench, options.payloads[0] ?? 300, connections, options);
      const point = `${connections} connections, POST /v1/proposals`;
      // The server's own CPU in the measured window (warm-up left out): per request, and as a
      // share of one core. Near 1 core, the single Node thread is the bound that holds.
      const proposalCpu = cpuPerUnit(proposals);
      const healthzCpu = cpuPerUnit(ceiling);
      const serverCpu =
        proposalCpu === null || proposals.windowCpuMs === null
          ? {}
          : {
              serverCpuMicrosPerProposal: proposalCpu,
              serverCores: proposals.windowCpuMs / options.durationMs,
            };
      const load = loadavg();
      const extra = {
        connections,
        load,
        proposalsPerSecond: proposals.perSecond,
        eventsPerProposal,
        healthzPerSecond: ceiling.perSecond,
        ...serverCpu,
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
      if (options.workers > 1 && bench.url) {
        figures.push(
          await workersGain(bench, options, connections, { perSecond: proposals.perSecond, load }),
        );
      }
      const flowPoint = `${connections} connections, propose + authorize + observe + verify`;
      figures.push(
        figure({
          scenario: 'http-append',
          backend,
          point: flowPoint,
          metric: `gateway tool calls over HTTP (${flow.eventsPerFlow.toFixed(1)} events each)`,
          unit: 'calls/s',
          value: flow.perSecond,
          // Four requests a call: the HTTP ceiling for it is a quarter of the healthz rate.
          baseline: { name: '¼ of GET /healthz, same connections', value: ceiling.perSecond / 4 },
          better: 'higher',
          extra: { connections, eventsPerFlow: flow.eventsPerFlow, serverCpuMicrosPerFlow: flow.cpuMicros },
        }),
      );
      const fastPoint = `${connections} connections, propose?authorize + observe?verify`;
      figures.push(
        figure({
          scenario: 'http-append',
          backend,
          point: fastPoint,
          metric: `gateway tool calls over HTTP, 2 requests (${fast.eventsPerFlow.toFixed(1)} events each)`,
          unit: 'calls/s',
          value: fast.perSecond,
          // The same call as above: its four steps, here in two requests.
          baseline: { name: '¼ of GET /healthz, same connections', value: ceiling.perSecond / 4 },
          better: 'higher',
          extra: { connections, eventsPerFlow: fast.eventsPerFlow, serverCpuMicrosPerFlow: fast.cpuMicros },
        }),
      );
      if (fast.cpuMicros !== null && healthzCpu !== null) {
        figures.push(
          figure({
            scenario: 'http-append',
            backend,
            point: fastPoint,
            metric: 'server CPU per gateway tool call, 2 requests',
            unit: 'µs',
            value: fast.cpuMicros,
            baseline: { name: '4 × per GET /healthz', value: 4 * healthzCpu },
            better: 'lower',
            extra: { connections, eventsPerFlow: fast.eventsPerFlow },
          }),
        );
      }
      if (flow.cpuMicros !== null && healthzCpu !== null) {
        figures.push(
          figure({
            scenario: 'http-append',
            backend,
            point: flowPoint,
            metric: 'server CPU per gateway tool call',
            unit: 'µs',
            value: flow.cpuMicros,
            baseline: { name: '4 × per GET /healthz', value: 4 * healthzCpu },
            better: 'lower',
            extra: { connections, eventsPerFlow: flow.eventsPerFlow },
          }),
        );
      }
      if (proposalCpu !== null && healthzCpu !== null) {
        figures.push(
          figure({
            scenario: 'http-append',
            backend,
            point,
            metric: `server CPU per proposal (${fmtCores(serverCpu.serverCores)} cores busy)`,
            unit: 'µs',
            value: proposalCpu,
            baseline: { name: 'per GET /healthz', value: healthzCpu },
            better: 'lower',
            extra,
          }),
        );
      }
    }
  } finally {
    await server.stop();
  }
  return figures;
}

/** Server CPU (µs) per unit of work completed in a closed loop's measured window. */
function cpuPerUnit(run: { units: number; windowCpuMs: number | null }): number | null {
  return run.windowCpuMs === null ? null : (run.windowCpuMs * 1000) / Math.max(1, run.units);
}
