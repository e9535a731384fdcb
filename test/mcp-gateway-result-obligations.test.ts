// Result obligations: per tool, the gateway masks fields and patterns and caps the size of a
// result before the agent sees it, while the ledger keeps the whole result as an erasable
// member of the observation, so the audit still verifies (before and after an erasure).
// Agent -> gateway over the SDK's Streamable HTTP transports -> a real MCP server over HTTP,
// and Vouch in this process on each backend.
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import type { VouchClient } from '@vouch/client';
import type { Database } from '@vouch/ledger';
import { testBackends } from '@vouch/ledger/testing';
import { type AgentHttpServer, type ExecutionMeta, META_KEY } from '@vouch/mcp-gateway';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { type HttpUpstream, serveMcpOverHttp } from './helpers/mcp-http-upstream';
import { connectHttpAgent, inProcessVouch, startAgentGateway } from './helpers/mcp-vouch-app';

const TOKEN = 'agent-token-for-the-obligations-test';
const CUSTOMER = {
  name: 'Ana Obligation',
  email: 'ana.obligation@example.com',
  ssn: '123-45-6789',
  api_token: 'ghp_abcdefghijklmnopqrstuvwxyz0123456789',
};
const ROWS = 'row;'.repeat(2_000);

/** A CRM server: one tool returns a customer with personal data and a secret, one a large export. */
function crmServer(): McpServer {
  const server = new McpServer({ name: 'crm', version: '1.0.0' });
  server.registerTool(
    'get_customer',
    {
      inputSchema: { id: z.string() },
      outputSchema: { name: z.string(), email: z.string(), ssn: z.string(), api_token: z.string() },
    },
    async () => ({
      content: [{ type: 'text', text: JSON.stringify(CUSTOMER) }],
      structuredContent: CUSTOMER,
    }),
  );
  server.registerTool('export_rows', { inputSchema: {} }, async () => ({
    content: [{ type: 'text', text: ROWS }],
  }));
  return server;
}

const metaOf = (result: CallToolResult) => result._meta?.[META_KEY] as ExecutionMeta;
const textOf = (result: CallToolResult) =>
  result.content.map((block) => (block.type === 'text' ? block.text : '')).join('\n');

describe.each(testBackends())('result obligations through the gateway, on $name', ({ open }) => {
  let database: Database;
  let crm: HttpUpstream;
  let gateway: AgentHttpServer;
  let agent: Client;
  const as = {} as Record<'auditor' | 'redactor', VouchClient>;

  beforeAll(async () => {
    database = await open();
    crm = await serveMcpOverHttp({ build: crmServer, transport: 'streamable-http' });
    const vouch = await inProcessVouch({ database });
    const admin = vouch.clientOf(await vouch.secretOf('user:admin', ['admin']));
    as.auditor = vouch.clientOf(await vouch.secretOf('user:auditor', ['auditor']));
    as.redactor = vouch.clientOf(await vouch.secretOf('user:dpo', ['redactor']));
    for (const tool_name of ['get_customer', 'export_rows']) {
      await admin.tools.register({ server_id: 'crm', tool_name, side_effect: 'read_only' });
    }
    gateway = await startAgentGateway(
      vouch,
      {
        upstream: { url: crm.url },
        serverId: 'crm',
        environment: 'production',
        tools: {
          get_customer: { result: { mask: { pointers: ['/ssn'], patterns: ['secrets', 'personal-data'] } } },
          export_rows: { result: { maxBytes: 1_000 } },
        },
      },
      [{ name: 'crm-agent', token: TOKEN, apiKey: await vouch.secretOf('agent:crm', ['gateway']) }],
    );
    agent = await connectHttpAgent(gateway, TOKEN);
  }, 120_000);

  afterAll(async () => {
    await agent?.close();
    await gateway?.close();
    await crm?.close();
    await database?.close();
  });

  describe('when a tool result holds a masked field, personal data and a secret', () => {
    it('gives the agent the masked result and the ledger the whole one, erasable with the audit intact', async () => {
      const result = (await agent.callTool({
        name: 'get_customer',
        arguments: { id: 'c-1' },
      })) as CallToolResult;
      const masked = {
        name: 'Ana Obligation',
        email: '[masked:personal-data]',
        ssn: '[masked]',
        api_token: '[masked:secret]',
      };
      expect(result.structuredContent).toEqual(masked);
      expect(JSON.parse(textOf(result))).toEqual(masked);
      expect(textOf(result)).not.toContain('ana.obligation@example.com');
      expect(metaOf(result)).toMatchObject({ status: 'executed', result_obligations: { masked: 6 } });

      const story = await as.auditor.proposals.get(String(metaOf(result).proposal_id));
      const recorded = story.observation?.result as { tool_result: CallToolResult };
      expect(recorded.tool_result.structuredContent).toEqual(CUSTOMER);

      const observationSeq = story.events.find((event) => event.kind === 'observation')!.seq;
      await as.redactor.audit.redact('default', observationSeq, {
        fields: ['tool_result'],
        reason: 'erasure request 2026-40',
      });
      const erased = await as.auditor.proposals.get(String(metaOf(result).proposal_id));
      expect(erased.observation?.result).not.toHaveProperty('tool_result');
      const report = await as.auditor.audit.verify('default');
      expect(report).toMatchObject({ ok: true, failures: [] });
      expect(report.redactions).toEqual([
        expect.objectContaining({ seq: observationSeq, fields: ['tool_result'] }),
      ]);
    });
  });

  describe('when a tool result is larger than its cap', () => {
    it('gives the agent the first bytes and a note, and the ledger the whole result', async () => {
      const result = (await agent.callTool({ name: 'export_rows', arguments: {} })) as CallToolResult;
      expect(textOf(result)).toMatch(/^(row;)+\n\[truncated: 1000 bytes of text shown of a \d+-byte result/);
      expect(metaOf(result).result_obligations).toMatchObject({
        masked: 0,
        truncated: { shown_bytes: expect.any(Number) },
      });
      const story = await as.auditor.proposals.get(String(metaOf(result).proposal_id));
      const recorded = story.observation?.result as { tool_result: CallToolResult };
      expect(textOf(recorded.tool_result)).toBe(ROWS);
    });
  });
});
