import { createHash } from 'node:crypto';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { createApp, createKeyStore } from '@vouch/api';
import { createVouchClient, type Role, type VouchClient } from '@vouch/client';
import { createLedger, type Database, migrate, OPERATOR_ACTOR, openDatabase } from '@vouch/ledger';
import { type AgentHttpServer, loadConfig, silentLogger, startHttpGateway } from '@vouch/mcp-gateway';

/** Vouch in this process (a fresh migrated database), as the gateway tests talk to it. */
export interface InProcessVouch {
  database: Database;
  /** A `fetch` answered by the app, for `http://vouch.test` URLs. */
  appFetch: typeof fetch;
  /** Issue a key for `identity` with `roles` (any environment, any log) and return its secret. */
  secretOf(identity: string, roles: Role[]): Promise<string>;
  /** A Vouch client acting with `apiKey`. */
  clientOf(apiKey: string): VouchClient;
}

export async function inProcessVouch(
  options: {
    allowRoleCombinations?: boolean;
    /** A migrated database (e.g. from `testBackends()`); default: a fresh in-memory PGlite. */
    database?: Database;
  } = {},
): Promise<InProcessVouch> {
  const database = options.database ?? (await openDatabase());
  await migrate(database);
  const ledger = createLedger(database);
  const keys = createKeyStore(ledger, { allowRoleCombinations: options.allowRoleCombinations ?? false });
  const app = createApp({ ledger, keys });
  const appFetch: typeof fetch = async (input, init) =>
    app.request(input instanceof URL ? input.href : (input as string), init);
  return {
    database,
    appFetch,
    secretOf: async (identity, roles) =>
      (
        await keys.create({
          identity,
          roles,
          scopes: [],
          environments: null,
          logs: null,
          createdBy: OPERATOR_ACTOR,
        })
      ).secret,
    clientOf: (apiKey) => createVouchClient({ baseUrl: 'http://vouch.test', apiKey, fetch: appFetch }),
  };
}

/** One agent of a gateway's HTTP agent server: its bearer token and the Vouch key it acts with. */
export interface HttpAgent {
  name: string;
  token: string;
  apiKey: string;
  /** What the agent may see (`upstreams`, `tools` of its `agentServer` entry); default: everything. */
  visibility?: { upstreams?: string[]; tools?: string[] };
}

/**
 * Start the gateway's Streamable HTTP agent server in this process, as `vouch-mcp-gateway`
 * would from a configuration file: `settings` is that file without `vouch` and `agentServer`
 * (every upstream, `serverId`, `governed`, …), and each of `agents` gets its own token and key.
 * The gateway reaches `vouch` through its in-process fetch.
 */
export async function startAgentGateway(
  vouch: InProcessVouch,
  settings: Record<string, unknown>,
  agents: readonly HttpAgent[],
  /** More `agentServer` settings (session limits, …). */
  agentServer: Record<string, unknown> = {},
): Promise<AgentHttpServer> {
  const keyEnv = (index: number) => `AGENT_KEY_${index}`;
  const { config, agentApiKeys, upstreamSecrets } = await loadConfig({
    argv: [],
    env: {
      VOUCH_MCP_CONFIG: 'gateway.json',
      ...Object.fromEntries(agents.map((agent, index) => [keyEnv(index), agent.apiKey])),
    },
    readFile: async () =>
      JSON.stringify({
        ...settings,
        vouch: { url: 'http://vouch.test' },
        agentServer: {
          ...agentServer,
          port: 0,
          agents: agents.map((agent, index) => ({
            name: agent.name,
            tokenSha256: createHash('sha256').update(agent.token).digest('hex'),
            apiKeyEnv: keyEnv(index),
            ...agent.visibility,
          })),
        },
      }),
  });
  return startHttpGateway({
    config,
    agentApiKeys,
    upstreamSecrets,
    logger: silentLogger,
    fetch: vouch.appFetch,
  });
}

/** Connect `agent` (default: a client declaring no capabilities) to `gateway` with its bearer `token`. */
export async function connectHttpAgent(
  gateway: AgentHttpServer,
  token: string,
  agent: Client = new Client({ name: 'agent', version: '0.0.0' }),
): Promise<Client> {
  await agent.connect(
    new StreamableHTTPClientTransport(new URL(gateway.url), {
      requestInit: { headers: { authorization: `Bearer ${token}` } },
    }),
  );
  return agent;
}
