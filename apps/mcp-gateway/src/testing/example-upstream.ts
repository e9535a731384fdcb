import {
  type CallToolResult,
  ProtocolError,
  ProtocolErrorCode,
  Server,
  type Tool,
} from '@modelcontextprotocol/server';
import { TOOLS_CALL } from '../methods';

/** One call the example upstream received, in order. */
export interface UpstreamCall {
  tool: string;
  arguments: Record<string, unknown>;
}

/** A small MCP server standing in for any upstream, with one tool per outcome layer. */
export interface ExampleUpstream {
  server: Server;
  /** Every `tools/call` that reached the upstream: the ground truth of what ran. */
  readonly calls: UpstreamCall[];
  /** Account balances; `close_account` really removes one. */
  readonly accounts: Map<string, number>;
  /** Let every waiting `slow_tool` call answer. */
  releaseSlow(): void;
}

const account: Tool['inputSchema'] = {
  type: 'object',
  properties: { account: { type: 'string' } },
  required: ['account'],
};

/**
 * The tools, with the annotations a real server would send. The gateway must not trust
 * `readOnlyHint`: discovery is not authorization.
 */
export const EXAMPLE_TOOLS: Tool[] = [
  {
    name: 'get_balance',
    description: 'Read the balance of an account.',
    inputSchema: account,
    annotations: { readOnlyHint: true },
  },
  {
    name: 'close_account',
    description: 'Close an account for good.',
    inputSchema: account,
    annotations: { destructiveHint: true },
  },
  {
    name: 'flaky_tool',
    description: 'Answers with a tool error (isError).',
    inputSchema: { type: 'object' },
  },
  { name: 'rpc_error_tool', description: 'Answers with a JSON-RPC error.', inputSchema: { type: 'object' } },
  { name: 'hang_tool', description: 'Never answers.', inputSchema: { type: 'object' } },
  {
    name: 'slow_tool',
    description: 'Answers once the test calls `releaseSlow()`.',
    inputSchema: { type: 'object' },
  },
];

/**
 * Build the example upstream (low-level `Server`, so each tool can answer in exactly the
 * layer it stands for). Connect it to any transport; the e2e tests also run it over stdio.
 */
export function createExampleUpstream(): ExampleUpstream {
  const calls: UpstreamCall[] = [];
  const accounts = new Map<string, number>([
    ['acct-1', 100],
    ['acct-2', 250],
  ]);
  const waiting: (() => void)[] = [];
  const server = new Server({ name: 'example-bank', version: '1.0.0' }, { capabilities: { tools: {} } });
  server.setRequestHandler('tools/list', async () => ({ tools: EXAMPLE_TOOLS }));
  server.setRequestHandler(TOOLS_CALL, async (request): Promise<CallToolResult> => {
    const args = (request.params.arguments ?? {}) as Record<string, unknown>;
    calls.push({ tool: request.params.name, arguments: args });
    const name = String(args.account ?? '');
    switch (request.params.name) {
      case 'get_balance': {
        const balance = accounts.get(name);
        if (balance === undefined)
          return { isError: true, content: [{ type: 'text', text: `no account ${name}` }] };
        return {
          content: [{ type: 'text', text: `${name}: ${balance}` }],
          structuredContent: { account: name, balance },
        };
      }
      case 'close_account': {
        if (!accounts.delete(name))
          return { isError: true, content: [{ type: 'text', text: `no account ${name}` }] };
        return { content: [{ type: 'text', text: `closed ${name}` }], structuredContent: { closed: name } };
      }
      case 'flaky_tool':
        return { isError: true, content: [{ type: 'text', text: 'the backend said no' }] };
      case 'rpc_error_tool':
        throw new ProtocolError(ProtocolErrorCode.InvalidParams, 'bad params from upstream', { field: 'x' });
      case 'hang_tool':
        return new Promise<never>(() => {});
      case 'slow_tool':
        await new Promise<void>((resolve) => waiting.push(resolve));
        return { content: [{ type: 'text', text: 'slow and done' }] };
      default:
        throw new ProtocolError(ProtocolErrorCode.InvalidParams, `unknown tool ${request.params.name}`);
    }
  });
  return {
    server,
    calls,
    accounts,
    releaseSlow: () => {
      for (const release of waiting.splice(0)) release();
    },
  };
}
