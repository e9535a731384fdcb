// End-to-end support: run the real `vouch-mcp-gateway` bin as a child process and talk to it
// as an agent does, with the MCP SDK's own client over stdio.
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';

/** The gateway launcher, exactly as `npx vouch-mcp-gateway` runs it. */
export const GATEWAY_BIN = fileURLToPath(
  new URL('../../apps/mcp-gateway/bin/vouch-mcp-gateway.js', import.meta.url),
);

/** The bank upstream script (run with tsx). */
export const BANK_UPSTREAM = fileURLToPath(new URL('./mcp-bank-upstream.ts', import.meta.url));

/** The gateway config's `upstream`: the bank over stdio, keeping its books at `booksPath`. */
export function bankUpstream(booksPath: string) {
  return {
    command: process.execPath,
    args: ['--import', 'tsx', BANK_UPSTREAM],
    env: { BANK_BOOKS: booksPath, PATH: process.env.PATH ?? '' },
  };
}

/** An agent connected to a running gateway process. */
export interface GatewayAgent {
  agent: Client;
  /** The gateway process's id. */
  pid: number;
  /** What the gateway wrote to stderr (its JSON log lines), for failure messages. */
  stderr(): string;
  close(): Promise<void>;
}

/**
 * Start `vouch-mcp-gateway --config <configPath>` with `VOUCH_API_KEY` and connect an MCP
 * client to it. Only PATH and HOME are passed through: nothing else of the test runner's
 * environment (no DATABASE_URL, no keys) reaches the gateway.
 */
export async function startGatewayAgent(options: {
  configPath: string;
  apiKey: string;
}): Promise<GatewayAgent> {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [GATEWAY_BIN, '--config', options.configPath],
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', VOUCH_API_KEY: options.apiKey },
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
  return { agent, pid: transport.pid!, stderr: () => stderr, close: () => agent.close() };
}
