// End-to-end support for the MCP conformance run: the suite's reference "everything" server,
// the suite's CLI on Node 20, and a loopback proxy standing in for an agent's MCP client
// configuration (it adds the agent's bearer token, which the suite's client cannot send).
import { spawn } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { createServer, request } from 'node:http';
import { type AddressInfo, createServer as createNetServer } from 'node:net';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const EVERYTHING_SERVER = fileURLToPath(new URL('../conformance/everything-server.ts', import.meta.url));
const SUITE_CLI = fileURLToPath(
  new URL('../../node_modules/@modelcontextprotocol/conformance/dist/index.js', import.meta.url),
);
/** The suite's 0.2 line (0.2.0-alpha.12, installed as `mcp-conformance-2026`): MCP 2026-07-28. */
const SUITE_2026_CLI = fileURLToPath(
  new URL('../../node_modules/mcp-conformance-2026/dist/index.js', import.meta.url),
);
const NODE20_PRELOAD = fileURLToPath(new URL('../conformance/node20-fs-glob.mjs', import.meta.url));

/** A free loopback port (the reference server takes its port from `PORT` and cannot report one). */
export async function freePort(): Promise<number> {
  const server = createNetServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/** Start the suite's reference server; resolves once it listens. */
export async function startEverythingServer(): Promise<{ url: string; stop(): Promise<void> }> {
  const port = await freePort();
  const child = spawn(process.execPath, ['--import', 'tsx', EVERYTHING_SERVER], {
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', PORT: String(port) },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  await new Promise<void>((resolve, reject) => {
    const onData = (chunk: Buffer) => {
      output += chunk.toString('utf8');
      if (output.includes('MCP endpoint')) resolve();
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', onData);
    void exited.then(() => reject(new Error(`the reference server exited:\n${output}`)));
  });
  return {
    url: `http://localhost:${port}/mcp`,
    stop: async () => {
      child.kill('SIGTERM');
      await exited;
    },
  };
}

/** Each scenario's checks, by scenario name. */
export type ConformanceResults = Map<string, { id: string; status: string; errorMessage?: string }[]>;

/**
 * Run every active server scenario of the suite against `url`; results are read from
 * `outputDir`. `line: '2026'` runs the 0.2 line's active scenarios of MCP 2026-07-28.
 */
export async function runConformanceSuite(
  url: string,
  outputDir: string,
  line: '0.1' | '2026' = '0.1',
): Promise<ConformanceResults> {
  const cli = line === '0.1' ? [SUITE_CLI] : [SUITE_2026_CLI, '--spec-version', '2026-07-28'];
  // One run for all scenarios: the CLI takes seconds just to load.
  const child = spawn(
    process.execPath,
    ['--import', NODE20_PRELOAD, cli[0]!, 'server', '--url', url, '--output-dir', outputDir, ...cli.slice(1)],
    {
      env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '' },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  let output = '';
  child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
  child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
  // The CLI exits 1 when a scenario fails; which ones is read from the results below.
  await new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const results: ConformanceResults = new Map();
  for (const dir of readdirSync(outputDir)) {
    const scenario = /^server-(.+)-\d{4}-\d{2}-\d{2}T/.exec(dir)?.[1];
    if (!scenario) continue;
    results.set(scenario, JSON.parse(readFileSync(join(outputDir, dir, 'checks.json'), 'utf8')));
  }
  if (results.size === 0) throw new Error(`the conformance suite produced no results:\n${output}`);
  return results;
}

/** Scenario/check pairs that succeeded. */
export function passedChecks(results: ConformanceResults): string[] {
  return [...results]
    .flatMap(([scenario, checks]) =>
      checks.filter((c) => c.status === 'SUCCESS').map((c) => `${scenario}/${c.id}`),
    )
    .sort();
}

/** What the proxy saw of one `tools/call`: the tool and the Vouch proposal in its answer. */
export interface SeenToolCall {
  name: string;
  proposalIds: string[];
}

/**
 * A loopback proxy to `target` that adds `Authorization: Bearer <token>` and forwards
 * everything else unchanged (Host and Origin included), streaming both ways. It notes every
 * `tools/call` and the `proposal_id` in its answer, so a test can match calls to the ledger.
 */
export async function startBearerProxy(
  target: string,
  token: string,
): Promise<{ url: string; toolCalls: SeenToolCall[]; close(): Promise<void> }> {
  const upstream = new URL(target);
  const toolCalls: SeenToolCall[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      let seen: SeenToolCall | undefined;
      try {
        const message = JSON.parse(body.toString('utf8')) as { method?: string; params?: { name?: string } };
        if (message.method === 'tools/call') {
          seen = { name: String(message.params?.name), proposalIds: [] };
          toolCalls.push(seen);
        }
      } catch {
        // not JSON (GET/DELETE): nothing to note
      }
      const forwarded = request(
        {
          host: upstream.hostname,
          port: upstream.port,
          path: req.url,
          method: req.method,
          headers: { ...req.headers, authorization: `Bearer ${token}` },
        },
        (answer) => {
          res.writeHead(answer.statusCode ?? 502, answer.headers);
          let text = '';
          answer.on('data', (chunk: Buffer) => {
            if (seen) text += chunk.toString('utf8');
            res.write(chunk);
          });
          answer.on('end', () => {
            if (seen) seen.proposalIds = [...text.matchAll(/"proposal_id":"([^"]+)"/g)].map((m) => m[1]!);
            res.end();
          });
        },
      );
      forwarded.on('error', () => res.destroy());
      res.on('close', () => forwarded.destroy());
      forwarded.end(body);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://localhost:${port}${upstream.pathname}`,
    toolCalls,
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
