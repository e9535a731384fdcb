import { lookup } from 'node:dns/promises';
import { readFile } from 'node:fs/promises';
import { isIP } from 'node:net';
import { pathToFileURL } from 'node:url';
import { checkAddress } from '@vouch/verifiers';
import type { z } from 'zod';
import { ConfigError } from '../config-error';
import { DEFAULT_LIMITS, type Limits } from '../limits';
import { type ServerSettingsInput, serverSettingsSchema } from './server-settings-schema';

/**
 * The external engine the server asks about each proposal (`server.policy.decisionUrl`), and
 * how: OPA's data API (`POST {"input": …}`, answer `{"result": …}`), see `policy/`.
 */
export interface PolicyEngineSettings {
  decisionUrl: string;
  /** Internal hosts the decision URL may name anyway (the SSRF guard's allow list). */
  allowHosts: string[];
  /** The actor of the decisions recorded from the engine (`decided_by`). */
  identity: string;
  /** The engine's name in those decisions (`source`). */
  source: string;
  timeoutMs: number;
  /** How often proposals still undecided are asked again. */
  retrySeconds: number;
  /** The token and the header it is sent in. A secret: `vouch config check` masks it. */
  token?: { header: string; value: string };
}

/** The policy engine: built in; external, posting its decisions; or external, asked by the server. */
export type PolicySettings =
  | { engine: 'built_in' }
  | { engine: 'external' }
  | ({ engine: 'external' } & PolicyEngineSettings);

/** The engine the server asks, when the settings name one (`decisionUrl`). */
export function policyEngineOf(policy: PolicySettings): PolicyEngineSettings | undefined {
  return 'decisionUrl' in policy ? policy : undefined;
}

/** The server's settings, from `vouch.config.json`'s `server` section and the environment. */
export interface ServerSettings {
  policy: PolicySettings;
  approvals: { requestTtlSeconds: number; maxWindowSeconds: number };
  limits: Limits;
  /** Per key, per instance (an in-process token bucket); `requestsPerSecond` 0 is off. */
  rateLimit: { requestsPerSecond: number; burst: number };
  keys: { maxAgeDays: number; allowRoleCombinations: boolean };
  /** `stateDir` as written (resolve it with `checkpointStatePath`); undefined: the default. */
  checkpoints: { stateDir: string | undefined };
}

/** The defaults: what a server without a `server` section and without these variables runs with. */
export const DEFAULT_SERVER_SETTINGS: ServerSettings = {
  policy: { engine: 'built_in' },
  approvals: { requestTtlSeconds: 86_400, maxWindowSeconds: 3_600 },
  limits: DEFAULT_LIMITS,
  rateLimit: { requestsPerSecond: 0, burst: 1 },
  keys: { maxAgeDays: 0, allowRoleCombinations: false },
  checkpoints: { stateDir: undefined },
};

type Path = readonly [section: keyof ServerSettingsInput, member: string];

/** Each environment variable, the setting it sets, and how its text is read. */
const ENVIRONMENT: ReadonlyArray<{ name: string; path: Path; read: 'number' | 'boolean' | 'string' }> = [
  { name: 'VOUCH_POLICY_ENGINE', path: ['policy', 'engine'], read: 'string' },
  { name: 'VOUCH_POLICY_DECISION_URL', path: ['policy', 'decisionUrl'], read: 'string' },
  { name: 'VOUCH_POLICY_IDENTITY', path: ['policy', 'identity'], read: 'string' },
  { name: 'VOUCH_POLICY_TIMEOUT_MS', path: ['policy', 'timeoutMs'], read: 'number' },
  { name: 'VOUCH_APPROVAL_REQUEST_TTL_SECONDS', path: ['approvals', 'requestTtlSeconds'], read: 'number' },
  { name: 'VOUCH_APPROVAL_MAX_WINDOW_SECONDS', path: ['approvals', 'maxWindowSeconds'], read: 'number' },
  { name: 'VOUCH_BODY_LIMIT_BYTES', path: ['limits', 'bodyBytes'], read: 'number' },
  { name: 'VOUCH_RATE_LIMIT_RPS', path: ['rateLimit', 'requestsPerSecond'], read: 'number' },
  { name: 'VOUCH_RATE_LIMIT_BURST', path: ['rateLimit', 'burst'], read: 'number' },
  { name: 'VOUCH_KEY_MAX_AGE_DAYS', path: ['keys', 'maxAgeDays'], read: 'number' },
  { name: 'VOUCH_ALLOW_ROLE_COMBINATIONS', path: ['keys', 'allowRoleCombinations'], read: 'boolean' },
  { name: 'VOUCH_CHECKPOINT_STATE_DIR', path: ['checkpoints', 'stateDir'], read: 'string' },
];

/** The names of the environment variables the settings read, for `vouch config check`. */
export const SETTINGS_VARIABLES = ENVIRONMENT.map((entry) => entry.name);

/**
 * Read the settings: the file's `server` section (when there is a file), each variable of
 * {@link SETTINGS_VARIABLES} over it, validated by one zod schema, then the defaults. A bad
 * value throws a {@link ConfigError} whose `key` is the variable (`VOUCH_RATE_LIMIT_RPS`) or
 * the file member (`server.rateLimit.burst`) it came from, and whose message says why.
 */
export async function loadServerSettings(options: {
  file?: string | undefined;
  env: NodeJS.ProcessEnv;
  /** Resolve a decision URL's hostname (tests pass a stub). */
  resolveHost?: (hostname: string) => Promise<string[]>;
}): Promise<ServerSettings> {
  const fromFile = options.file ? await readServerSection(options.file) : {};
  const written: Record<string, Record<string, unknown>> = structuredClone(fromFile) as never;
  const fromEnv = new Map<string, string>();
  for (const { name, path, read } of ENVIRONMENT) {
    const raw = options.env[name]?.trim();
    if (!raw) continue;
    written[path[0]] = { ...written[path[0]], [path[1]]: parseVariable(name, raw, read) };
    fromEnv.set(path.join('.'), name);
  }
  // A variable that switches the engine drops the file's members of the other engine.
  if (fromEnv.has('policy.engine') && written.policy?.engine === 'built_in') {
    written.policy = { engine: 'built_in' };
  }
  const parsed = serverSettingsSchema.safeParse(written);
  if (!parsed.success) throw settingError(parsed.error, fromEnv, options.file);
  const settings = withDefaults(parsed.data, policyToken(parsed.data, options.env));
  if ('decisionUrl' in settings.policy) {
    const key = fromEnv.get('policy.decisionUrl') ?? 'server.policy.decisionUrl';
    await assertReachableSafely(settings.policy.decisionUrl, key, {
      allowHosts: settings.policy.allowHosts,
      resolveHost: options.resolveHost ?? resolveHost,
    });
  }
  return settings;
}

/** The default variable that holds the external engine's token. */
export const POLICY_TOKEN_VARIABLE = 'VOUCH_POLICY_TOKEN';

/**
 * The engine's token from the variable `tokenEnv` names (default {@link POLICY_TOKEN_VARIABLE}).
 * A variable the file names explicitly must be set: a token the operator meant to send and
 * did not is an error at startup, not a 401 on every proposal.
 */
function policyToken(
  input: z.infer<typeof serverSettingsSchema>,
  env: NodeJS.ProcessEnv,
): { header: string; value: string } | undefined {
  const policy = input.policy;
  if (policy?.engine !== 'external' || !policy.decisionUrl) return undefined;
  const variable = policy.tokenEnv ?? POLICY_TOKEN_VARIABLE;
  const value = env[variable]?.trim();
  if (!value) {
    if (policy.tokenEnv === undefined) return undefined;
    throw new ConfigError(`server.policy.tokenEnv: ${variable} is not set`, {
      key: 'server.policy.tokenEnv',
    });
  }
  return { header: (policy.tokenHeader ?? 'authorization').toLowerCase(), value };
}

function policyWithDefaults(
  policy: NonNullable<z.infer<typeof serverSettingsSchema>['policy']>,
  token: { header: string; value: string } | undefined,
): PolicySettings {
  if (policy.engine === 'built_in') return { engine: 'built_in' };
  if (!policy.decisionUrl) return { engine: 'external' };
  return {
    engine: 'external',
    decisionUrl: policy.decisionUrl,
    allowHosts: policy.allowHosts ?? [],
    identity: policy.identity ?? 'service:policy-engine',
    source: policy.source ?? 'external',
    timeoutMs: policy.timeoutMs ?? 5_000,
    retrySeconds: policy.retrySeconds ?? 15,
    ...(token ? { token } : {}),
  };
}

function withDefaults(
  input: z.infer<typeof serverSettingsSchema>,
  token: { header: string; value: string } | undefined,
): ServerSettings {
  const d = DEFAULT_SERVER_SETTINGS;
  return {
    policy: input.policy ? policyWithDefaults(input.policy, token) : d.policy,
    approvals: {
      requestTtlSeconds: input.approvals?.requestTtlSeconds ?? d.approvals.requestTtlSeconds,
      maxWindowSeconds: input.approvals?.maxWindowSeconds ?? d.approvals.maxWindowSeconds,
    },
    limits: {
      bodyBytes: input.limits?.bodyBytes ?? d.limits.bodyBytes,
      jsonDepth: input.limits?.jsonDepth ?? d.limits.jsonDepth,
      pageSize: input.limits?.pageSize ?? d.limits.pageSize,
    },
    rateLimit: {
      requestsPerSecond: input.rateLimit?.requestsPerSecond ?? d.rateLimit.requestsPerSecond,
      // Default burst: one second's worth, so a limit of N per second allows N at once.
      burst:
        input.rateLimit?.burst ??
        Math.max(1, Math.ceil(input.rateLimit?.requestsPerSecond ?? d.rateLimit.burst)),
    },
    keys: {
      maxAgeDays: input.keys?.maxAgeDays ?? d.keys.maxAgeDays,
      allowRoleCombinations: input.keys?.allowRoleCombinations ?? d.keys.allowRoleCombinations,
    },
    checkpoints: { stateDir: input.checkpoints?.stateDir },
  };
}

function parseVariable(name: string, raw: string, read: 'number' | 'boolean' | 'string'): unknown {
  if (read === 'string') return raw;
  if (read === 'boolean') {
    if (raw === '1' || raw === 'true') return true;
    if (raw === '0' || raw === 'false') return false;
    throw new ConfigError(`${name}=${raw}: use 1 or 0`, { key: name });
  }
  const value = Number(raw);
  if (!Number.isFinite(value)) throw new ConfigError(`${name}=${raw}: not a number`, { key: name });
  return value;
}

function settingError(
  error: z.ZodError,
  fromEnv: Map<string, string>,
  file: string | undefined,
): ConfigError {
  const issue = error.issues[0]!;
  const path = [
    ...issue.path.map(String),
    ...(issue.code === 'unrecognized_keys' ? issue.keys.slice(0, 1) : []),
  ];
  const variable = fromEnv.get(path.slice(0, 2).join('.'));
  const key = variable ?? ['server', ...path].join('.');
  const where = variable ? '' : ` (in ${file})`;
  const reason = issue.code === 'unrecognized_keys' ? 'not a setting' : issue.message;
  return new ConfigError(`${key}${where}: ${reason}`, { key });
}

async function readServerSection(file: string): Promise<ServerSettingsInput> {
  let config: unknown;
  if (/\.(ts|mts|js|mjs)$/.test(file)) {
    config = ((await import(pathToFileURL(file).href)) as { default?: unknown }).default;
  } else {
    let text: string;
    try {
      text = await readFile(file, 'utf8');
    } catch (cause) {
      throw new ConfigError(`VOUCH_CONFIG: cannot read ${file}`, { key: 'VOUCH_CONFIG', cause });
    }
    try {
      config = JSON.parse(text);
    } catch (cause) {
      throw new ConfigError(`${file}: not JSON (${(cause as Error).message})`, {
        key: 'VOUCH_CONFIG',
        cause,
      });
    }
  }
  if (typeof config !== 'object' || config === null || Array.isArray(config)) {
    throw new ConfigError(`${file}: the configuration must be an object`, { key: 'VOUCH_CONFIG' });
  }
  const section = (config as { server?: unknown }).server;
  if (section === undefined) return {};
  if (typeof section !== 'object' || section === null || Array.isArray(section)) {
    throw new ConfigError(`server (in ${file}): must be an object`, { key: 'server' });
  }
  return section as ServerSettingsInput;
}

async function resolveHost(hostname: string): Promise<string[]> {
  return (await lookup(hostname, { all: true })).map((entry) => entry.address);
}

/**
 * The decision URL is fetched by this server: like every URL the server reaches, it must not
 * name an internal address (loopback, private, link-local, metadata) unless `allowHosts` lets it.
 */
async function assertReachableSafely(
  url: string,
  key: string,
  options: { allowHosts: readonly string[]; resolveHost: (hostname: string) => Promise<string[]> },
): Promise<void> {
  const hostname = new URL(url).hostname.replace(/^\[|\]$/g, '');
  let addresses: string[];
  if (isIP(hostname)) addresses = [hostname];
  else {
    try {
      addresses = await options.resolveHost(hostname);
    } catch (cause) {
      throw new ConfigError(`${key}: cannot resolve ${hostname}`, { key, cause });
    }
  }
  const allowedName = options.allowHosts.some((entry) => entry.toLowerCase() === hostname.toLowerCase());
  for (const address of addresses) {
    const verdict = checkAddress(address, { allowHosts: options.allowHosts });
    if (!verdict.allowed && !(allowedName && verdict.range !== 'metadata')) {
      throw new ConfigError(
        `${key}: ${hostname} is an internal address (${verdict.range} ${verdict.address}); name it in server.policy.allowHosts to allow it`,
        { key },
      );
    }
  }
}
