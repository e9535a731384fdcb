// End-to-end support: run the real `vouch-mcp-gateway` bin as a child process and talk to it
// as an agent does, with the MCP SDK's own client over stdio, or serving agents over HTTP.
import { spawn } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';

/** The gateway launcher, exactly as `npx --no-install vouch-mcp-gateway` runs it. */
export const GATEWAY_BIN = fileURLToPath(
  new URL('../../apps/mcp-gateway/bin/vouch-mcp-gateway.js', import.meta.url),
);

/** The bank upstream script (run with tsx). */
export const BANK_UPSTREAM = fileURLToPath(new URL('./mcp-bank-upstream.ts', import.meta.url));

/** The gateway config's `upstream`: the bank over stdio, keeping its books at `booksPath`, with `env` added. */
export function bankUpstream(booksPath: string, env: Record<string, string> = {}) {
  return {
    command: process.execPath,
    args: ['--import', 'tsx', BANK_UPSTREAM],
    env: { BANK_BOOKS: booksPath, PATH: process.env.PATH ?? '', ...env },
  };
}

/**
 * The gateway's state directory (its default call journal) beside its configuration, in the
 * test's own folder: a test run leaves nothing in the user's ~/.local/state.
 */
function testStateOf(configPath: string): { XDG_STATE_HOME: string } {
  return { XDG_STATE_HOME: join(dirname(configPath), 'state') };
}

/** An agent connected to a running gateway process. */
export interface GatewayAgent {
  agent: Client;
  /** What the gateway wrote to stderr (its JSON log lines), for failure messages. */
  stderr(): string;
  /** The gateway process's id (to signal it). */
  pid: number;
  close(): Promise<void>;
}

/**
 * Start `vouch-mcp-gateway --config <configPath>` with `VOUCH_API_KEY` (and `env`) and connect
 * an MCP client to it. Only PATH and HOME are passed through (and XDG_STATE_HOME, into the
 * test's folder): nothing else of the test runner's environment (no DATABASE_URL, no keys)
 * reaches the gateway.
 */
export async function startGatewayAgent(options: {
  configPath: string;
  apiKey: string;
  env?: Record<string, string>;
}): Promise<GatewayAgent> {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [GATEWAY_BIN, '--config', options.configPath],
    env: {
      PATH: process.env.PATH ?? '',
      HOME: process.env.HOME ?? '',
      ...testStateOf(options.configPath),
      VOUCH_API_KEY: options.apiKey,
      ...options.env,
    },
    stderr: 'pipe',
  });
  let stderr = '';
  transport.stderr?.on('data', (chunk: Buffer) => {
    stderr += chunk.toString('utf8');
  });
  const agent = new Client({ name: 'e2e-agent', version: '0.0.0' });
  try {
    await agent.connect(transport);
  } catch (error) {
    throw new Error(`the gateway did not start: ${String(error)}\n${stderr}`);
  }
  return { agent, stderr: () => stderr, pid: transport.pid!, close: () => agent.close() };
}

/** A `vouch-mcp-gateway` process serving agents over Streamable HTTP. */
export interface HttpGatewayProcess {
  url: string;
  /** The gateway process's id (to signal it). */
  pid: number;
  stderr(): string;
  /** SIGTERM, then wait for the exit code. */
  stop(): Promise<number | null>;
}

/**
 * Start `vouch-mcp-gateway --config <configPath>` whose configuration has `agentServer`, with
 * `env` holding the agents' Vouch keys, and resolve with its URL once it logs `gateway listening`.
 */
export async function startHttpGatewayProcess(options: {
  configPath: string;
  env: Record<string, string>;
}): Promise<HttpGatewayProcess> {
  const child = spawn(process.execPath, [GATEWAY_BIN, '--config', options.configPath], {
    env: {
      PATH: process.env.PATH ?? '',
      HOME: process.env.HOME ?? '',
      ...testStateOf(options.configPath),
      ...options.env,
    },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  let stderr = '';
  const url = await new Promise<string>((resolve, reject) => {
    child.stderr!.setEncoding('utf8').on('data', (chunk: string) => {
      stderr += chunk;
      for (const line of stderr.split('\n')) {
        if (line.includes('"gateway listening"')) resolve(String((JSON.parse(line) as { url: string }).url));
      }
    });
    void exited.then((code) => reject(new Error(`the gateway exited with ${code}:\n${stderr}`)));
  });
  return {
    url,
    pid: child.pid!,
    stderr: () => stderr,
    stop: async () => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      return exited;
    },
  };
}
