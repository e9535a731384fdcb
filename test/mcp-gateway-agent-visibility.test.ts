// Per-agent visibility: in HTTP mode each agent token sees only its configured upstreams and
// tools, in tools/list and in calls. A hidden tool called directly is refused with an MCP
// error, and neither Vouch nor the upstream hears of the call; a hidden upstream is never
// connected for that agent. Agents -> gateway over the SDK's Streamable HTTP transports ->
// two real MCP servers over HTTP; Vouch in this process on each backend.
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { type CallToolResult, ErrorCode, McpError } from '@modelcontextprotocol/sdk/types.js';
import type { VouchClient } from '@vouch/client';
import type { Database } from '@vouch/ledger';
import { testBackends } from '@vouch/ledger/testing';
import { type AgentHttpServer, type ExecutionMeta, META_KEY } from '@vouch/mcp-gateway';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { type HttpUpstream, serveMcpOverHttp } from './helpers/mcp-http-upstream';
import { connectHttpAgent, inProcessVouch, startAgentGateway } from './helpers/mcp-vouch-app';

const READER = 'token-of-the-reader-agent';
const OPERATOR = 'token-of-the-operator-agent';

function server(name: string, tools: readonly string[]): () => McpServer {
  return () => {
    const built = new McpServer({ name, version: '1.0.0' });
    for (const tool of tools) {
      built.registerTool(tool, { inputSchema: { id: z.string().optional() } }, async () => ({
        content: [{ type: 'text', text: `${name} ${tool} ran` }],
      }));
    }
    return built;
  };
}

async function refusal(promise: Promise<unknown>): Promise<McpError> {
  const error = await promise.then(
    () => null,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(McpError);
  return error as McpError;
}

describe.each(testBackends())('per-agent visibility through the HTTP gateway, on $name', ({ open }) => {
  let database: Database;
  let notes: HttpUpstream;
  let crm: HttpUpstream;
  let gateway: AgentHttpServer;
  let reader: Client;
  let auditor: VouchClient;

  beforeAll(async () => {
    database = await open();
    notes = await serveMcpOverHttp({
      build: server('notes', ['list_notes', 'delete_note']),
      transport: 'streamable-http',
    });
    crm = await serveMcpOverHttp({ build: server('crm', ['get_customer']), transport: 'streamable-http' });
    const vouch = await inProcessVouch({ database });
    const admin = vouch.clientOf(await vouch.secretOf('user:admin', ['admin']));
    auditor = vouch.clientOf(await vouch.secretOf('user:auditor', ['auditor']));
    for (const [server_id, tool_name] of [
      ['notes', 'list_notes'],
      ['notes', 'delete_note'],
      ['crm', 'get_customer'],
    ] as const) {
      await admin.tools.register({ server_id, tool_name, side_effect: 'read_only' });
    }
    const settings = {
      upstreams: { notes: { url: notes.url }, crm: { url: crm.url } },
      environment: 'production',
    };
    gateway = await startAgentGateway(vouch, settings, [
      {
        name: 'reader',
        token: READER,
        apiKey: await vouch.secretOf('agent:reader', ['gateway']),
        visibility: { upstreams: ['notes'], tools: ['notes__list_*'] },
      },
      { name: 'operator', token: OPERATOR, apiKey: await vouch.secretOf('agent:operator', ['gateway']) },
    ]);
    reader = await connectHttpAgent(gateway, READER);
  }, 120_000);

  afterAll(async () => {
    await reader?.close();
    await gateway?.close();
    await notes?.close();
    await crm?.close();
    await database?.close();
  });

  describe('when an agent limited to some tools of one upstream lists tools', () => {
    it('sees only those, and its hidden upstream is not even connected', async () => {
      const { tools } = await reader.listTools();
      expect(tools.map((tool) => tool.name)).toEqual(['notes__list_notes']);
      expect(crm.methods).toEqual([]);
    });
  });

  describe('when that agent calls a hidden tool directly', () => {
    it('is refused with an MCP error, and neither Vouch nor the upstream hears of it', async () => {
      const hidden = await refusal(reader.callTool({ name: 'notes__delete_note', arguments: { id: 'n-1' } }));
      expect(hidden.code).toBe(ErrorCode.InvalidParams);
      expect(hidden.message).toContain('"notes__delete_note" is not available to this agent');
      const otherUpstream = await refusal(reader.callTool({ name: 'crm__get_customer', arguments: {} }));
      expect(otherUpstream.code).toBe(ErrorCode.InvalidParams);
      expect(notes.methods).not.toContain('tools/call');
      expect(crm.methods).toEqual([]);
      expect((await auditor.proposals.list()).proposals).toEqual([]);
    });

    it('still runs the tools it may see', async () => {
      const result = (await reader.callTool({ name: 'notes__list_notes', arguments: {} })) as CallToolResult;
      expect(result.content).toEqual([{ type: 'text', text: 'notes list_notes ran' }]);
      expect(result._meta?.[META_KEY]).toMatchObject({ status: 'executed' } satisfies Partial<ExecutionMeta>);
    });
  });

  describe('when an agent without limits lists tools', () => {
    it('sees every tool of every upstream', async () => {
      const operator = await connectHttpAgent(gateway, OPERATOR);
      try {
        const { tools } = await operator.listTools();
        expect(tools.map((tool) => tool.name).sort()).toEqual([
          'crm__get_customer',
          'notes__delete_note',
          'notes__list_notes',
        ]);
      } finally {
        await operator.close();
      }
    });
  });
});
