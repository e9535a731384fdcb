import { z } from 'zod';
import { GatewayError } from './errors';
import { GOVERNABLE_METHODS } from './governed-request';
import { isJsonPointer, isValidRegex } from './result-obligations';

const name = z
  .string()
  .min(1)
  .max(256)
  .refine((text) => !hasControlCharacter(text), 'must not contain control characters');

function hasControlCharacter(text: string): boolean {
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if (code < 0x20 || code === 0x7f) return true;
  }
  return false;
}

const condition = z.strictObject({ name, params: z.record(z.string(), z.json()).optional() });

/**
 * What a tool's result must satisfy before the agent sees it: JSON pointers and patterns to
 * mask (`secrets`, `personal-data`, or `{ "regex": "..." }`), and a size cap in bytes.
 */
const resultObligations = z.strictObject({
  mask: z
    .strictObject({
      pointers: z
        .array(z.string().max(1024).refine(isJsonPointer, 'must be a JSON pointer'))
        .max(256)
        .optional(),
      patterns: z
        .array(
          z.union([
            z.enum(['secrets', 'personal-data']),
            z
              .strictObject({
                regex: z.string().min(1).max(1024),
                flags: z
                  .string()
                  .regex(/^[gimsuy]*$/)
                  .optional(),
              })
              .refine((p) => isValidRegex(p.regex, p.flags), 'must be a valid regular expression'),
          ]),
        )
        .max(64)
        .optional(),
    })
    .optional(),
  maxBytes: z
    .number()
    .int()
    .min(64)
    .max(64 * 1024 * 1024)
    .optional(),
});

const toolSettings = z.strictObject({
  action: name.optional(),
  target: z
    .strictObject({ kind: name.optional(), id: name.optional(), idArgument: name.optional() })
    .optional(),
  sideEffect: z.enum(['read_only', 'idempotent', 'compensatable', 'irreversible']).optional(),
  preconditions: z.array(condition).optional(),
  postconditions: z.array(condition).optional(),
  result: resultObligations.optional(),
});

/**
 * A request other than `tools/call` that goes through Vouch like a tool call: `resources/read`
 * (and `resources/subscribe`) by URI, `prompts/get` by prompt name. `match` is a glob over that
 * URI or name (`*` within a path segment, `**` across them; default: every one). The rest of
 * the settings describe the proposal as for a tool.
 */
const governedMethod = toolSettings.omit({ result: true }).extend({
  method: z.enum(GOVERNABLE_METHODS),
  match: z.string().min(1).max(2048).optional(),
});

const envName = z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'must be an environment variable name');

/** Whether `url` names this machine (where plain HTTP never crosses a network). */
function isLoopbackUrl(url: URL): boolean {
  const host = url.hostname.replace(/^\[|\]$/g, '');
  return host === 'localhost' || host === '::1' || /^127\.\d+\.\d+\.\d+$/.test(host);
}

/** An address a secret is sent to: HTTPS, or plain HTTP on loopback only. */
const secretReceivingUrl = z.url().refine((text) => {
  const url = new URL(text);
  return url.protocol === 'https:' || (url.protocol === 'http:' && isLoopbackUrl(url));
}, 'must be an https URL (plain http only on loopback), since the client secret is sent to it');

/** A value read from the environment when the gateway starts, never written in the file. */
const fromEnv = z.strictObject({ env: envName });

/**
 * How the gateway reaches an HTTP upstream. `transport`: `streamable-http` (the default),
 * `sse` (the legacy HTTP+SSE transport) or `auto` (Streamable HTTP, and SSE when the server
 * refuses it, as the MCP SDK recommends for backwards compatibility). `headers` go on every
 * request; a value is a literal or `{ "env": "NAME" }`. `auth` adds a bearer token read from
 * the environment, or one fetched with the OAuth 2 client-credentials grant.
 */
const httpUpstream = z.strictObject({
  url: z.url(),
  transport: z.enum(['streamable-http', 'sse', 'auto']).optional(),
  headers: z
    .record(
      z.string().regex(/^[A-Za-z0-9!#$%&'*+.^_`|~-]+$/, 'must be an HTTP header name'),
      z.union([z.string(), fromEnv]),
    )
    .optional(),
  auth: z
    .discriminatedUnion('type', [
      z.strictObject({ type: z.literal('bearer'), token: fromEnv }),
      z.strictObject({
        type: z.literal('client_credentials'),
        tokenUrl: secretReceivingUrl,
        clientId: z.string().min(1),
        clientSecret: fromEnv,
        scope: z.string().min(1).optional(),
        /** RFC 8707 `resource` sent with the token request (some servers require it). */
        resource: z.url().optional(),
      }),
    ])
    .optional(),
});

const stdioUpstream = z.strictObject({
  command: z.string().min(1),
  args: z.array(z.string()).default([]),
  env: z.record(z.string(), z.string()).optional(),
  cwd: z.string().optional(),
});

const upstream = z.union([stdioUpstream, httpUpstream]);

/**
 * The name of one of several upstreams: the namespace of its tools and prompts
 * (`<name>__<tool>`). No `_`, so the first `__` of an exposed name always ends the namespace.
 */
export const upstreamName = z
  .string()
  .regex(
    /^[A-Za-z0-9][A-Za-z0-9-]{0,31}$/,
    'must be 1-32 letters, digits or "-", starting with a letter or digit',
  );

/** What one named upstream adds to its connection: its Vouch server id, tools and governed methods. */
const upstreamGovernance = {
  /** How Vouch names this upstream (`server_id`); default: its name. */
  serverId: name.optional(),
  tools: z.record(z.string(), toolSettings).optional(),
  governed: z.array(governedMethod).optional(),
};

const namedUpstream = z.union([
  stdioUpstream.extend(upstreamGovernance),
  httpUpstream.extend(upstreamGovernance),
]);

/**
 * Serve agents over Streamable HTTP instead of stdio. Each agent presents its own bearer
 * token; the gateway keeps only the token's SHA-256 and acts for that agent with the agent's
 * own Vouch key (read from the named environment variable), so the ledger's requester is the
 * agent and Vouch's rules (roles, environments, no self-approval) apply to it unchanged.
 */
const agentServer = z.strictObject({
  host: z.string().min(1).default('127.0.0.1'),
  port: z.number().int().min(0).max(65_535),
  path: z.string().startsWith('/').default('/mcp'),
  /** Host names accepted in `Host` and `Origin` (default: loopback names when bound to loopback). */
  allowedHosts: z.array(z.string().min(1)).optional(),
  /** Close a session when nothing of it has been open or running for this long. */
  sessionIdleTimeoutMs: z.number().int().min(1_000).max(86_400_000).default(900_000),
  /** Open sessions per agent; at the cap the agent's least recently used idle one is closed. */
  maxSessionsPerAgent: z.number().int().min(1).max(10_000).default(16),
  /** Open sessions of all agents; past it a new one is refused (503 `SESSION_LIMIT_REACHED`). */
  maxSessions: z.number().int().min(1).max(100_000).default(256),
  /** Serve `GET /metrics` (Prometheus text, no authentication) on this port; unset: not served. */
  metricsPort: z.number().int().min(0).max(65_535).optional(),
  metricsHost: z.string().min(1).default('127.0.0.1'),
  agents: z
    .array(
      z.strictObject({
        /** A label for logs; the identity Vouch records is the key's. */
        name,
        tokenSha256: z.string().regex(/^[0-9a-f]{64}$/, 'must be a lowercase hex SHA-256'),
        apiKeyEnv: envName,
        /** With `upstreams`: the ones this agent sees (default: all); the others are not even connected. */
        upstreams: z.array(upstreamName).max(256).optional(),
        /**
         * The tools this agent sees and may call, by the name the agent sees (`<upstream>__<tool>`
         * with several upstreams); `*` matches any run of characters. Default: all.
         */
        tools: z.array(name).max(1024).optional(),
      }),
    )
    .min(1),
});

/**
 * The gateway's configuration. The API key is not part of it: it comes from `VOUCH_API_KEY`
 * only, so a configuration file can be committed and shared without a secret in it.
 */
export const gatewayConfigSchema = z
  .strictObject({
    /** The MCP server to put behind Vouch: a command to start (stdio) or an HTTP URL. */
    upstream: upstream.optional(),
    /**
     * Several MCP servers behind one gateway, by name: each one's tools and prompts are shown
     * to the agent as `<name>__<tool>`, and each has its own `serverId`, `tools` and `governed`.
     * Use either `upstream` (with the top-level `serverId`, `tools`, `governed`) or this.
     */
    upstreams: z.record(upstreamName, namedUpstream).optional(),
    vouch: z.strictObject({ url: z.url() }),
    /** How Vouch names the single `upstream` (`server_id`). */
    serverId: name.optional(),
    /** The environment every call acts in. */
    environment: name,
    tools: z.record(z.string(), toolSettings).optional(),
    /** Requests besides `tools/call` that Vouch governs; the first entry that matches applies. */
    governed: z.array(governedMethod).optional(),
    /** How long a call waits for an approval before answering "pending" (default 0). */
    approvalWaitMs: z.number().int().min(0).max(3_600_000).default(0),
    invokeTimeoutMs: z.number().int().positive().max(3_600_000).default(60_000),
    /**
     * A tool whose served definition differs from the one pinned in Vouch: `refuse` (hide it
     * and refuse its calls until an operator approves the new one) or `warn` (log, serve it).
     */
    toolDefinitionChanges: z.enum(['refuse', 'warn']).default('refuse'),
    /**
     * Names whose journal this is, beside the Vouch URL and key (default: none). Gateways with
     * the same session take over each other's journal after a stop; with another, they do not.
     * It never makes a result replay: see `journal` and the agent's idempotency key.
     */
    session: name.optional(),
    /**
     * The directory of the call journal (what the gateway claimed and has not seen recorded,
     * and the calls waiting for an approval), so a restart records in-doubt calls `unknown`
     * and goes on with pending ones. `false`: in memory only. Default: the user's state
     * directory (`$XDG_STATE_HOME/vouch-mcp-gateway` or `~/.local/state/vouch-mcp-gateway`).
     */
    journal: z.union([z.string().min(1), z.literal(false)]).optional(),
    /** Time limit of a passed-through request (resources, prompts, sampling, …). */
    requestTimeoutMs: z.number().int().positive().max(3_600_000).default(60_000),
    /**
     * On SIGTERM, SIGINT or agent disconnect: how long running calls may finish before they are
     * stopped and recorded `unknown` (default: see {@link drainTimeoutOf}).
     */
    drainTimeoutMs: z.number().int().min(0).max(3_600_000).optional(),
    /** Serve agents over Streamable HTTP (default: one agent on stdio). */
    agentServer: agentServer.optional(),
    /**
     * The Vouch console's address (e.g. `https://vouch.example/ui/`): a call waiting for an
     * approval links to its proposal there when the gateway asks the user (elicitation).
     */
    consoleUrl: z.url().optional(),
    /**
     * A call waiting for an approval, from an agent whose client supports elicitation, asks
     * the user (`elicitation/create`) with the exact call and where to approve it. After the
     * user accepts, the gateway waits up to this long for the approval to show in Vouch.
     */
    elicitationWaitMs: z.number().int().min(0).max(600_000).default(30_000),
    /** How long the user has to answer that prompt. */
    approvalPromptTimeoutMs: z.number().int().positive().max(3_600_000).default(300_000),
  })
  .superRefine((config, context) => {
    const issue = (path: string, message: string) =>
      context.addIssue({ code: 'custom', path: [path], message });
    if (config.upstream === undefined && config.upstreams === undefined) {
      issue('upstream', 'set either upstream or upstreams');
    }
    if (config.upstream !== undefined && config.upstreams !== undefined) {
      issue('upstreams', 'set either upstream or upstreams, not both');
    }
    if (config.upstream !== undefined && config.serverId === undefined) {
      issue('serverId', 'is required with upstream');
    }
    config.agentServer?.agents.forEach((agent, i) => {
      for (const upstreamKey of agent.upstreams ?? []) {
        if (config.upstreams?.[upstreamKey] !== undefined) continue;
        context.addIssue({
          code: 'custom',
          path: ['agentServer', 'agents', i, 'upstreams'],
          message: `names ${JSON.stringify(upstreamKey)}, which is not one of upstreams`,
        });
      }
    });
    if (config.upstreams !== undefined) {
      if (Object.keys(config.upstreams).length === 0) issue('upstreams', 'must name at least one upstream');
      for (const key of ['serverId', 'tools', 'governed'] as const) {
        if (config[key] !== undefined) issue(key, 'with upstreams, set it on each upstream instead');
      }
      // Vouch binds approvals and policy to the server id: two upstreams sharing one could use
      // each other's approvals.
      const upstreamOfServerId = new Map<string, string>();
      for (const [upstreamKey, settings] of Object.entries(config.upstreams)) {
        const serverId = settings.serverId ?? upstreamKey;
        const other = upstreamOfServerId.get(serverId);
        if (other !== undefined) {
          context.addIssue({
            code: 'custom',
            path: ['upstreams', upstreamKey, 'serverId'],
            message: `is ${JSON.stringify(serverId)}, as for upstream ${other}: each upstream needs its own server id`,
          });
        }
        upstreamOfServerId.set(serverId, upstreamKey);
      }
    }
  });

/** The parsed configuration. */
export type GatewayConfig = z.output<typeof gatewayConfigSchema>;

/**
 * The drain bound: `drainTimeoutMs`, else one that ends before the usual SIGKILL. On stdio,
 * 1.5 s: the MCP SDK's `StdioClientTransport.close()` closes stdin, waits 2 s, sends SIGTERM,
 * waits 2 s and sends SIGKILL. Over HTTP, 8 s: `docker stop` sends SIGKILL 10 s after SIGTERM.
 */
export function drainTimeoutOf(config: Pick<GatewayConfig, 'drainTimeoutMs' | 'agentServer'>): number {
  return config.drainTimeoutMs ?? (config.agentServer ? 8000 : 1500);
}

/** Where configuration comes from: an optional JSON file, then the environment. */
export interface ConfigSources {
  argv: readonly string[];
  env: Readonly<Record<string, string | undefined>>;
  readFile: (path: string) => Promise<string>;
}

/**
 * Read the configuration: `--config <file>` (or `VOUCH_MCP_CONFIG`) names a JSON file;
 * environment variables fill in or override single fields:
 * `VOUCH_URL`, `VOUCH_SERVER_ID`, `VOUCH_ENVIRONMENT`, `VOUCH_UPSTREAM_COMMAND`,
 * `VOUCH_UPSTREAM_ARGS` (a JSON array), `VOUCH_UPSTREAM_URL`. `VOUCH_API_KEY` is required.
 */
export async function loadConfig(sources: ConfigSources): Promise<LoadedConfig> {
  const { argv, env } = sources;
  const flag = argv.indexOf('--config');
  const path = flag >= 0 ? argv[flag + 1] : env.VOUCH_MCP_CONFIG;
  if (flag >= 0 && !path) throw new GatewayError('CONFIG_INVALID', '--config needs a file path');

  let file: Record<string, unknown> = {};
  if (path) {
    let text: string;
    try {
      text = await sources.readFile(path);
    } catch (cause) {
      throw new GatewayError('CONFIG_NOT_FOUND', `cannot read the configuration file ${path}`, { cause });
    }
    try {
      file = JSON.parse(text) as Record<string, unknown>;
    } catch (cause) {
      throw new GatewayError('CONFIG_INVALID', `${path} is not JSON`, { cause });
    }
  }

  const merged: Record<string, unknown> = { ...file };
  if (env.VOUCH_URL) merged.vouch = { url: env.VOUCH_URL };
  if (env.VOUCH_SERVER_ID) merged.serverId = env.VOUCH_SERVER_ID;
  if (env.VOUCH_ENVIRONMENT) merged.environment = env.VOUCH_ENVIRONMENT;
  if (env.VOUCH_UPSTREAM_URL) merged.upstream = { url: env.VOUCH_UPSTREAM_URL };
  if (env.VOUCH_UPSTREAM_COMMAND) {
    merged.upstream = { command: env.VOUCH_UPSTREAM_COMMAND, args: parseArgs(env.VOUCH_UPSTREAM_ARGS) };
  }

  const parsed = gatewayConfigSchema.safeParse(merged);
  if (!parsed.success) {
    const issues = parsed.error.issues.map((issue) => ({
      path: `/${issue.path.join('/')}`,
      message: issue.message,
    }));
    throw new GatewayError(
      'CONFIG_INVALID',
      `invalid configuration at ${issues[0]!.path}: ${issues[0]!.message}`,
      {
        details: { issues },
      },
    );
  }
  const config = parsed.data;
  const upstreamSecrets: Record<string, string> = {};
  for (const { env: variable, usedFor } of environmentReferencesOf(config)) {
    const value = env[variable];
    if (!value) throw new GatewayError('CONFIG_INVALID', `${variable} is not set (${usedFor})`);
    upstreamSecrets[variable] = value;
  }
  const signing = await signingOf(sources);
  if (config.agentServer) {
    if (signing) {
      throw new GatewayError(
        'CONFIG_INVALID',
        'VOUCH_SIGNING_KEY signs as one identity: serving agents over HTTP, each acts as its own (not supported yet)',
      );
    }
    const agentApiKeys: Record<string, string> = {};
    for (const agent of config.agentServer.agents) {
      const key = env[agent.apiKeyEnv];
      if (!key) {
        throw new GatewayError(
          'CONFIG_INVALID',
          `${agent.apiKeyEnv} is not set (the Vouch key of agent ${agent.name})`,
        );
      }
      agentApiKeys[agent.name] = key;
    }
    return { config, apiKey: undefined, agentApiKeys, upstreamSecrets };
  }
  const apiKey = env.VOUCH_API_KEY;
  if (!apiKey)
    throw new GatewayError('CONFIG_INVALID', 'VOUCH_API_KEY is not set (a key with the gateway role)');
  return { config, apiKey, agentApiKeys: {}, upstreamSecrets, ...(signing ? { signing } : {}) };
}

/** The prefix of an author key's text (docs/chain.md, "Records signed by their authors"). */
const AUTHOR_KEY_PREFIX = 'vouch-author-key-v1:';

/**
 * The gateway's signing key (`VOUCH_SIGNING_KEY`, or the file `VOUCH_SIGNING_KEY_FILE` names)
 * and the identity of its API key (`VOUCH_SIGNING_IDENTITY`): with them it signs the
 * proposals, execution claims and observations it writes. Undefined when neither is set.
 */
async function signingOf(sources: ConfigSources): Promise<GatewaySigning | undefined> {
  const { env } = sources;
  const file = env.VOUCH_SIGNING_KEY_FILE;
  if (env.VOUCH_SIGNING_KEY && file) {
    throw new GatewayError('CONFIG_INVALID', 'set VOUCH_SIGNING_KEY or VOUCH_SIGNING_KEY_FILE, not both');
  }
  let key = env.VOUCH_SIGNING_KEY;
  if (file) {
    try {
      key = await sources.readFile(file);
    } catch (cause) {
      throw new GatewayError('CONFIG_NOT_FOUND', `cannot read the signing key file ${file}`, { cause });
    }
  }
  const identity = env.VOUCH_SIGNING_IDENTITY;
  if (key === undefined && identity === undefined) return undefined;
  if (!key?.trim().startsWith(AUTHOR_KEY_PREFIX)) {
    throw new GatewayError(
      'CONFIG_INVALID',
      `the signing key must be the text ${AUTHOR_KEY_PREFIX}<base64> (VOUCH_SIGNING_KEY or VOUCH_SIGNING_KEY_FILE)`,
    );
  }
  if (!identity) {
    throw new GatewayError(
      'CONFIG_INVALID',
      'VOUCH_SIGNING_IDENTITY is not set (the identity of the API key, e.g. agent:billing)',
    );
  }
  return { key: key.trim(), identity };
}

/** The key the gateway signs what it writes with, and the identity it signs as. */
export interface GatewaySigning {
  /** `vouch-author-key-v1:<base64 seed>`. */
  key: string;
  identity: string;
}

/** The configuration and the secrets read from the environment for it. */
export interface LoadedConfig {
  config: GatewayConfig;
  /** The gateway's Vouch key on stdio (`VOUCH_API_KEY`); unset when serving agents over HTTP. */
  apiKey: string | undefined;
  /** Over HTTP: each agent's own Vouch key, by agent name. */
  agentApiKeys: Record<string, string>;
  /** The values of the environment variables the upstreams' headers and auth name (`{ "env": … }`). */
  upstreamSecrets: Record<string, string>;
  /** On stdio: the key the gateway signs its records with, when one is configured. */
  signing?: GatewaySigning;
}

/** One agent of `agentServer`: its name, token hash, key and what it may see. */
export type AgentSettings = NonNullable<GatewayConfig['agentServer']>['agents'][number];

/** The upstream connections of a configuration, by name (`default` for the single `upstream`). */
export function upstreamConnectionsOf(config: GatewayConfig): [string, UpstreamConnection][] {
  if (config.upstreams) return Object.entries(config.upstreams);
  return config.upstream ? [['default', config.upstream]] : [];
}

/** One upstream's connection settings (stdio command or HTTP URL, headers, auth). */
export type UpstreamConnection = z.output<typeof upstream>;

/** Every environment variable the upstream connections read, and what for (never its value). */
function environmentReferencesOf(config: GatewayConfig): { env: string; usedFor: string }[] {
  const references: { env: string; usedFor: string }[] = [];
  for (const [label, connection] of upstreamConnectionsOf(config)) {
    if (!('url' in connection)) continue;
    for (const [header, value] of Object.entries(connection.headers ?? {})) {
      if (typeof value !== 'string') {
        references.push({ env: value.env, usedFor: `header ${header} of upstream ${label}` });
      }
    }
    const auth = connection.auth;
    if (auth?.type === 'bearer')
      references.push({ env: auth.token.env, usedFor: `bearer token of upstream ${label}` });
    if (auth?.type === 'client_credentials') {
      references.push({ env: auth.clientSecret.env, usedFor: `OAuth client secret of upstream ${label}` });
    }
  }
  return references;
}

function parseArgs(text: string | undefined): string[] {
  if (!text) return [];
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (cause) {
    throw new GatewayError('CONFIG_INVALID', 'VOUCH_UPSTREAM_ARGS must be a JSON array of strings', {
      cause,
    });
  }
  if (!Array.isArray(value) || !value.every((v) => typeof v === 'string')) {
    throw new GatewayError('CONFIG_INVALID', 'VOUCH_UPSTREAM_ARGS must be a JSON array of strings');
  }
  return value;
}
