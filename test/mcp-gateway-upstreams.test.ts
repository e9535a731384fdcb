import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { completable } from '@modelcontextprotocol/sdk/server/completable.js';
import { McpServer, ResourceTemplate } from '@modelcontextprotocol/sdk/server/mcp.js';
import {
  type CallToolResult,
  ErrorCode,
  McpError,
  PromptListChangedNotificationSchema,
  ToolListChangedNotificationSchema,
} from '@modelcontextprotocol/sdk/types.js';
import { createVouchClient, type VouchClient } from '@vouch/client';
import type { Database } from '@vouch/ledger';
import { type AgentHttpServer, type ExecutionMeta, META_KEY } from '@vouch/mcp-gateway';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { type BankBooks, readBooks, writeBooks } from './helpers/mcp-bank-upstream';
import { bankUpstream } from './helpers/mcp-gateway-process';
import { type HttpUpstream, serveMcpOverHttp } from './helpers/mcp-http-upstream';
import { connectHttpAgent, inProcessVouch, startAgentGateway } from './helpers/mcp-vouch-app';

const TOKEN = 'agent-token-for-the-upstreams-test';
let dir: string;
let booksPath: string;
let database: Database;
let gateway: AgentHttpServer;
let notes: HttpUpstream;
let agent: Client;
let auditor: VouchClient;
const notesServed: string[] = [];
const listChanged: string[] = [];

const metaOf = (result: CallToolResult) => result._meta?.[META_KEY] as ExecutionMeta;

/** An MCP notes server: a tool, a prompt, a resource and a resource template, noting what it served. */
function notesServer(): McpServer {
  const server = new McpServer({ name: 'notes', version: '1.0.0' });
  server.registerTool('list_notes', { inputSchema: { tag: z.string().optional() } }, async ({ tag }) => {
    notesServed.push(`tool list_notes ${tag ?? ''}`);
    return { content: [{ type: 'text', text: 'note 1' }] };
  });
  const topic = completable(z.string(), (value) => ['q3', 'q4'].filter((t) => t.startsWith(value)));
  server.registerPrompt('summary', { argsSchema: { topic } }, ({ topic }) => {
    notesServed.push(`prompt summary ${topic}`);
    return { messages: [{ role: 'user', content: { type: 'text', text: `summarise ${topic}` } }] };
  });
  server.registerResource('first', 'note://1', { mimeType: 'text/plain' }, async (uri) => {
    notesServed.push(`read ${uri.href}`);
    return { contents: [{ uri: uri.href, text: 'the first note' }] };
  });
  server.registerResource(
    'by-id',
    new ResourceTemplate('note://{id}', { list: undefined }),
    { mimeType: 'text/plain' },
    async (uri, { id }) => {
      notesServed.push(`read ${uri.href}`);
      return { contents: [{ uri: uri.href, text: `note ${String(id)}` }] };
    },
  );
  return server;
}

async function refusal(promise: Promise<unknown>): Promise<McpError> {
  const error = await promise.then(
    () => null,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(McpError);
  return error as McpError;
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'vouch-mcp-upstreams-'));
  booksPath = join(dir, 'books.json');
  writeBooks(booksPath, { accounts: { 'acct-1': 100 }, calls: [] } satisfies BankBooks);
  notes = await serveMcpOverHttp({ build: notesServer, transport: 'streamable-http' });

  const vouch = await inProcessVouch();
  ({ database } = vouch);
  const { appFetch, secretOf } = vouch;
  const admin = createVouchClient({
    baseUrl: 'http://vouch.test',
    apiKey: await secretOf('user:admin', ['admin']),
    fetch: appFetch,
  });
  auditor = createVouchClient({
    baseUrl: 'http://vouch.test',
    apiKey: await secretOf('user:auditor', ['auditor']),
    fetch: appFetch,
  });
  // Both read tools harmless, each under its own server id.
  for (const [server_id, tool_name] of [
    ['bank', 'get_balance'],
    ['notes-server', 'list_notes'],
  ] as const) {
    await admin.tools.register({
      server_id,
      tool_name,
      side_effect: 'read_only',
      allowed_environments: ['production'],
    });
  }

  gateway = await startAgentGateway(
    vouch,
    {
      upstreams: {
        bank: bankUpstream(booksPath),
        notes: { url: notes.url, serverId: 'notes-server' },
      },
      environment: 'production',
    },
    [{ name: 'multi', token: TOKEN, apiKey: await secretOf('agent:multi', ['gateway']) }],
  );
  agent = new Client({ name: 'agent', version: '0.0.0' });
  agent.setNotificationHandler(ToolListChangedNotificationSchema, async (n) => {
    listChanged.push(n.method);
  });
  agent.setNotificationHandler(PromptListChangedNotificationSchema, async (n) => {
    listChanged.push(n.method);
  });
  await connectHttpAgent(gateway, TOKEN, agent);
}, 180_000);

afterAll(async () => {
  await agent?.close();
  await gateway?.close();
  await notes?.close();
  await database?.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('a gateway with two upstreams', () => {
  it('lists every upstream tool under its namespace, <upstream>__<tool>', async () => {
    const { tools } = await agent.listTools();
    expect(tools.map((tool) => tool.name).sort()).toEqual([
      'bank__close_account',
      'bank__get_balance',
      'bank__wire_transfer',
      'notes__list_notes',
    ]);
  });

  it('offers the union of the upstreams capabilities', () => {
    const capabilities = agent.getServerCapabilities();
    expect(capabilities?.tools).toBeDefined();
    expect(capabilities?.prompts).toBeDefined();
    expect(capabilities?.resources).toBeDefined();
  });

  it('runs each namespaced tool on its own upstream, proposed under that upstream’s server id', async () => {
    const bank = (await agent.callTool({
      name: 'bank__get_balance',
      arguments: { account: 'acct-1' },
    })) as CallToolResult;
    const note = (await agent.callTool({
      name: 'notes__list_notes',
      arguments: { tag: 'x' },
    })) as CallToolResult;
    expect(bank.structuredContent).toEqual({ account: 'acct-1', balance: 100 });
    expect(note.content).toEqual([{ type: 'text', text: 'note 1' }]);
    expect(readBooks(booksPath).calls.map((c) => c.tool)).toEqual(['get_balance']);
    expect(notesServed).toContain('tool list_notes x');

    const story = async (result: CallToolResult) =>
      (await auditor.proposals.get(metaOf(result).proposal_id!)).proposal;
    expect(await story(bank)).toMatchObject({
      server_id: 'bank',
      tool_name: 'get_balance',
      requester: 'agent:multi',
    });
    expect(await story(note)).toMatchObject({
      server_id: 'notes-server',
      tool_name: 'list_notes',
      arguments: { tag: 'x' },
    });
  });

  it('answers a call outside every namespace with an MCP error, proposing and running nothing', async () => {
    const before = (await auditor.proposals.list()).proposals.length;
    const callsBefore = readBooks(booksPath).calls.length;
    for (const name of ['nope__get_balance', 'get_balance', '__get_balance']) {
      const error = await refusal(agent.callTool({ name, arguments: { account: 'acct-1' } }));
      expect(error.code).toBe(ErrorCode.InvalidParams);
    }
    expect((await auditor.proposals.list()).proposals.length).toBe(before);
    expect(readBooks(booksPath).calls.length).toBe(callsBefore);
  });

  it('namespaces prompts and sends prompts/get to the upstream under its own name', async () => {
    const { prompts } = await agent.listPrompts();
    expect(prompts.map((prompt) => prompt.name)).toEqual(['notes__summary']);
    const prompt = await agent.getPrompt({ name: 'notes__summary', arguments: { topic: 'q3' } });
    expect(prompt.messages[0]?.content).toEqual({ type: 'text', text: 'summarise q3' });
    expect(notesServed).toContain('prompt summary q3');
    const error = await refusal(agent.getPrompt({ name: 'bank__summary', arguments: { topic: 'q3' } }));
    expect(error.code).toBeLessThan(0);
  });

  it('routes a resource to the upstream that listed it, or whose template matches its URI', async () => {
    const { resources } = await agent.listResources();
    expect(resources.map((resource) => resource.uri)).toEqual(['note://1']);
    const { resourceTemplates } = await agent.listResourceTemplates();
    expect(resourceTemplates.map((template) => template.uriTemplate)).toEqual(['note://{id}']);
    expect((await agent.readResource({ uri: 'note://1' })).contents).toEqual([
      { uri: 'note://1', text: 'the first note' },
    ]);
    expect((await agent.readResource({ uri: 'note://7' })).contents[0]).toMatchObject({ text: 'note 7' });
    expect(notesServed).toEqual(expect.arrayContaining(['read note://1', 'read note://7']));
  });

  it('routes a URI it has not seen listed, in a new session, by asking the upstreams first', async () => {
    const fresh = await connectHttpAgent(gateway, TOKEN, new Client({ name: 'agent-2', version: '0.0.0' }));
    try {
      expect((await fresh.readResource({ uri: 'note://42' })).contents[0]).toMatchObject({ text: 'note 42' });
      const { completion } = await fresh.complete({
        ref: { type: 'ref/prompt', name: 'notes__summary' },
        argument: { name: 'topic', value: 'q' },
      });
      expect(completion.values).toEqual(['q3', 'q4']);
      const error = await refusal(
        fresh.complete({
          ref: { type: 'ref/prompt', name: 'crm__summary' },
          argument: { name: 'topic', value: 'q' },
        }),
      );
      expect(error.code).toBe(ErrorCode.InvalidParams);
    } finally {
      await fresh.close();
    }
    expect(notesServed).toContain('read note://42');
  });

  it('answers a resource no upstream lists with "not found", reaching no upstream', async () => {
    const served = notesServed.length;
    const error = await refusal(agent.readResource({ uri: 'secret://nowhere' }));
    // MCP 2026-07-28 answers a missing resource with -32602 on every revision (clients also
    // accept the older -32002); the SDK 2.x maps the gateway's -32002 to it.
    expect(error.code).toBe(-32602);
    expect(error.message).toContain('Resource not found');
    expect(notesServed.length).toBe(served);
  });

  it('forwards list_changed from any upstream, and lists the new tool and prompt under its namespace', async () => {
    // The first agent's session (each agent session has its own upstream connections).
    const upstream = notes.servers[0]!;
    upstream.registerTool('archive_note', {}, async () => ({
      content: [{ type: 'text', text: 'archived' }],
    }));
    for (let i = 0; i < 100 && listChanged.length === 0; i++) await new Promise((r) => setTimeout(r, 20));
    expect(listChanged).toContain('notifications/tools/list_changed');
    const { tools } = await agent.listTools();
    expect(tools.map((tool) => tool.name)).toContain('notes__archive_note');

    upstream.registerPrompt('digest', {}, () => ({
      messages: [{ role: 'user', content: { type: 'text', text: 'digest' } }],
    }));
    for (let i = 0; i < 100 && !listChanged.includes('notifications/prompts/list_changed'); i++) {
      await new Promise((r) => setTimeout(r, 20));
    }
    expect(listChanged).toContain('notifications/prompts/list_changed');
    expect((await agent.listPrompts()).prompts.map((p) => p.name)).toContain('notes__digest');
  });
});
