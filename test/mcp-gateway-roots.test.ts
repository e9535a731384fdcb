// The agent's roots reach an upstream that asks for them while it starts: the real
// `@modelcontextprotocol/server-filesystem` asks `roots/list` once initialized and narrows its
// command-line folders to the client's roots. Direct and through the gateway it must end up
// allowing the same folder.
import { mkdirSync, mkdtempSync, realpathSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { type CallToolResult, ListRootsRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import type { Database } from '@vouch/ledger';
import type { AgentHttpServer } from '@vouch/mcp-gateway';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectHttpAgent, inProcessVouch, startAgentGateway } from './helpers/mcp-vouch-app';

const FILESYSTEM_SERVER = createRequire(import.meta.url).resolve(
  '@modelcontextprotocol/server-filesystem/dist/index.js',
);
const TOKEN = 'agent-token-with-roots';

let dir: string;
let data: string;
let database: Database;
let gateway: AgentHttpServer;
const closers: (() => Promise<void>)[] = [];

/** An agent whose only root is `data/sub`. */
function agentWithRoots(): Client {
  const agent = new Client({ name: 'agent', version: '0.0.0' }, { capabilities: { roots: {} } });
  agent.setRequestHandler(ListRootsRequestSchema, async () => ({
    roots: [{ uri: pathToFileURL(join(data, 'sub')).href, name: 'sub' }],
  }));
  closers.push(() => agent.close());
  return agent;
}

/**
 * The folders the server allows, once it has settled on them: it applies the roots after its
 * `roots/list` is answered, so this reads until the answer stops changing (bounded).
 */
async function allowedDirectories(agent: Client): Promise<string> {
  const read = async () => {
    const result = (await agent.callTool({
      name: 'list_allowed_directories',
      arguments: {},
    })) as CallToolResult;
    const first = result.content[0];
    return first?.type === 'text' ? first.text : '';
  };
  let text = await read();
  for (let i = 0; i < 50 && !text.includes('sub'); i++) {
    await new Promise((resolve) => setTimeout(resolve, 100));
    text = await read();
  }
  return text;
}

beforeAll(async () => {
  dir = realpathSync(mkdtempSync(join(tmpdir(), 'vouch-mcp-roots-')));
  data = join(dir, 'data');
  mkdirSync(join(data, 'sub'), { recursive: true });
  const vouch = await inProcessVouch();
  ({ database } = vouch);
  const admin = vouch.clientOf(await vouch.secretOf('user:admin', ['admin']));
  // The operator declares the listing harmless, so it runs without a human (still proposed and recorded).
  await admin.tools.register({
    server_id: 'files',
    tool_name: 'list_allowed_directories',
    side_effect: 'read_only',
    allowed_environments: ['production'],
  });
  gateway = await startAgentGateway(
    vouch,
    {
      upstream: { command: process.execPath, args: [FILESYSTEM_SERVER, data] },
      serverId: 'files',
      environment: 'production',
    },
    [{ name: 'rooted', token: TOKEN, apiKey: await vouch.secretOf('agent:rooted', ['gateway']) }],
  );
}, 60_000);

afterAll(async () => {
  for (const close of closers.splice(0)) await close();
  await gateway?.close();
  await database?.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('server-filesystem started by the gateway, for an agent with roots', () => {
  it('allows exactly the folder it allows when the agent connects to it directly', async () => {
    const direct = agentWithRoots();
    await direct.connect(
      new StdioClientTransport({
        command: process.execPath,
        args: [FILESYSTEM_SERVER, data],
        stderr: 'ignore',
      }),
    );
    const directly = await allowedDirectories(direct);
    expect(directly).toContain(join(data, 'sub'));

    const through = await connectHttpAgent(gateway, TOKEN, agentWithRoots());
    expect(await allowedDirectories(through)).toBe(directly);
  }, 60_000);
});
