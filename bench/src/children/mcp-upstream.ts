// The upstream MCP server of the gateway-overhead scenario, over stdio: one read-only tool,
// `fetch`, that answers at once with a small text. Whatever the gateway adds to a call is
// then all of the difference between calling it directly and through the gateway.
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { CallToolRequestSchema, ListToolsRequestSchema } from '@modelcontextprotocol/sdk/types.js';

const server = new Server({ name: 'bench-upstream', version: '1.0.0' }, { capabilities: { tools: {} } });
server.setRequestHandler(ListToolsRequestSchema, async () => ({
  tools: [
    {
      name: 'fetch',
      description: 'Read one item.',
      inputSchema: { type: 'object', properties: { id: { type: 'string' } }, required: ['id'] },
      annotations: { readOnlyHint: true },
    },
  ],
}));
server.setRequestHandler(CallToolRequestSchema, async (request) => ({
  content: [{ type: 'text', text: `item ${String(request.params.arguments?.id)}: in stock` }],
}));
await server.connect(new StdioServerTransport());
