import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import {
  type AnyVerifier,
  createVerifierRegistry,
  type FetchGrant,
  type Grants,
  isVerifierError,
  type MeasurementPolicy,
  type RedisGrant,
  type SqlGrant,
  VerifierError,
  type VerifierRegistration,
  type VerifierRegistry,
} from '@vouch/verifier-sdk';
import { resolve as resolveModule } from 'import-meta-resolve';
import { fileVerifier } from '../file/file-verifier';
import { httpJsonVerifier } from '../http-json/http-json-verifier';
import { createGuardedFetch, type ResolveHost } from '../net/guarded-fetch';
import { type IsolatedVerifier, loadIsolatedVerifier, PluginLoadError } from '../plugin/isolated-verifier';
import { prometheusVerifier } from '../prometheus/prometheus-verifier';
import { createRedisGrant } from '../redis/redis-grant';
import { redisVerifier } from '../redis/redis-verifier';
import { createMysqlSqlGrant } from '../sql/mysql-sql-grant';
import { createPostgresSqlGrant } from '../sql/postgres-sql-grant';
import { sqlVerifier } from '../sql/sql-verifier';
import {
  type VerifierConfigEntry,
  type VerifierConfigInput,
  verifierConfigSchema,
} from './verifier-config-schema';

/** The verifiers `use` can name without a path. */
export const BUILTIN_VERIFIERS: Readonly<Record<string, AnyVerifier>> = Object.freeze({
  'http-json': httpJsonVerifier,
  sql: sqlVerifier,
  file: fileVerifier,
  redis: redisVerifier,
  prometheus: prometheusVerifier,
});

/** Options for {@link loadVerifierConfig}. */
export interface LoadVerifierConfigOptions {
  /** Where `urlEnv` is looked up (default `process.env`). */
  env?: Readonly<Record<string, string | undefined>>;
  /** Hostname resolution for every guarded fetch (tests inject one; default: the system resolver). */
  resolveHost?: ResolveHost;
}

/** A loaded configuration: the registry to run, and the connections it opened. */
export interface LoadedVerifierConfig {
  file: string;
  registry: VerifierRegistry;
  /** Grants by connection name. */
  connections: Readonly<Record<string, FetchGrant | SqlGrant | RedisGrant>>;
  /** Close every database pool the configuration opened, and stop its plugins' processes. */
  close(): Promise<void>;
}

/** Type a `vouch.config.ts` default export. */
export function defineVerifierConfig(config: VerifierConfigInput): VerifierConfigInput {
  return config;
}

/**
 * Load `vouch.config.json` (or a `.ts`/`.js` module whose default export is the same object),
 * build its connections into grants, load every verifier and validate it with its options.
 * Every mistake throws a `VerifierError` with `file`, `verifier` and `field` (a JSON Pointer
 * into the file, e.g. `/verifiers/1/options/url`): `CONFIG_NOT_FOUND`, `CONFIG_INVALID`, or
 * the registry's own `OPTIONS_INVALID` / `VERIFIER_INVALID` / `VERIFIER_API_UNSUPPORTED` /
 * `VERIFIER_DUPLICATE`. Nothing connects until a verifier runs. A plugin named by path or
 * package is imported in a process of its own, with no network but its grants (see
 * `loadIsolatedVerifier`); `close()` stops those processes too.
 *
 * @example
 * const { registry, close } = await loadVerifierConfig('vouch.config.json');
 */
export async function loadVerifierConfig(
  file: string,
  options: LoadVerifierConfigOptions = {},
): Promise<LoadedVerifierConfig> {
  const absolute = path.resolve(file);
  const raw = await readConfig(absolute);
  const parsed = verifierConfigSchema.safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    // For an unknown key, point at the key itself (a typo like `optoins`), not at its object.
    const keys = issue.code === 'unrecognized_keys' ? issue.keys.slice(0, 1) : [];
    const field = pointer([...issue.path, ...keys]);
    throw new VerifierError('CONFIG_INVALID', `${absolute}: ${field || '/'}: ${issue.message}`, {
      file: absolute,
      field,
      verifier: verifierAt(raw, issue.path),
    });
  }
  const config = parsed.data;
  const env = options.env ?? process.env;
  const opened: { close(): Promise<void> }[] = [];
  const close = async () => {
    await Promise.all(opened.map((grant) => grant.close()));
  };
  try {
    const connections: Record<string, FetchGrant | SqlGrant | RedisGrant> = {};
    const kinds: Record<string, 'sql' | 'fetch' | 'redis'> = {};
    for (const [name, connection] of Object.entries(config.connections)) {
      if (connection.type !== 'http') {
        const url = connection.url ?? env[connection.urlEnv!];
        if (!url) {
          throw new VerifierError(
            'CONFIG_INVALID',
            `${absolute}: connection "${name}": $${connection.urlEnv} is not set`,
            {
              file: absolute,
              field: `/connections/${name}/urlEnv`,
            },
          );
        }
        if (connection.type === 'redis') {
          const grant = createRedisGrant({
            name,
            url,
            ...(connection.keyPrefix ? { keyPrefix: connection.keyPrefix } : {}),
            ...(connection.connectTimeoutMs ? { connectTimeoutMs: connection.connectTimeoutMs } : {}),
          });
          opened.push(grant);
          connections[name] = grant;
          kinds[name] = 'redis';
          continue;
        }
        const sqlOptions = {
          name,
          url,
          ...(connection.max ? { max: connection.max } : {}),
          ...(connection.connectTimeoutSeconds
            ? { connectTimeoutSeconds: connection.connectTimeoutSeconds }
            : {}),
        };
        const grant =
          connection.type === 'postgres'
            ? createPostgresSqlGrant(sqlOptions)
            : createMysqlSqlGrant(sqlOptions);
        opened.push(grant);
        connections[name] = grant;
        kinds[name] = 'sql';
      } else {
        connections[name] = createGuardedFetch({
          allowHosts: connection.allowHosts,
          ...(connection.maxRedirects !== undefined ? { maxRedirects: connection.maxRedirects } : {}),
          ...(options.resolveHost ? { resolveHost: options.resolveHost } : {}),
        });
        kinds[name] = 'fetch';
      }
    }
    // A verifier that needs the network but names no http connection gets the default guard:
    // public addresses only. SSRF-safe unless configuration says otherwise.
    const defaultFetch = createGuardedFetch(options.resolveHost ? { resolveHost: options.resolveHost } : {});

    const registrations: VerifierRegistration[] = [];
    for (const [index, entry] of config.verifiers.entries()) {
      const at = `/verifiers/${index}`;
      const fail = (field: string, message: string, verifier?: string): never => {
        throw new VerifierError('CONFIG_INVALID', `${absolute}: ${at}${field}: ${message}`, {
          file: absolute,
          field: `${at}${field}`,
          verifier: verifier ?? entry.name ?? (typeof entry.use === 'string' ? entry.use : undefined),
        });
      };
      const verifier = await loadVerifier(entry, absolute, fail, opened);
      const grants: Grants = {};
      const connectionNames = [entry.connection ?? []].flat();
      for (const name of connectionNames) {
        const kind = kinds[name];
        if (kind === undefined) fail('/connection', `no connection named "${name}"`, verifier.id);
        if (grants[kind!] !== undefined)
          fail('/connection', `two ${kind} connections; give one`, verifier.id);
        (grants as Record<string, unknown>)[kind!] = connections[name];
      }
      const requires = verifier.requires ?? [];
      if (requires.includes('sql') && grants.sql === undefined) {
        fail(
          '/connection',
          'this verifier reads a database: name a postgres or mysql connection',
          verifier.id,
        );
      }
      if (requires.includes('redis') && grants.redis === undefined) {
        fail('/connection', 'this verifier reads Redis: name a redis connection', verifier.id);
      }
      if (requires.includes('fetch') && grants.fetch === undefined) grants.fetch = defaultFetch;
      const registration: VerifierRegistration = {
        verifier,
        options: verifier === fileVerifier ? withAbsoluteRoots(entry.options, absolute) : entry.options,
        grants,
        ...(entry.name !== undefined ? { name: entry.name } : {}),
        ...(entry.handles !== undefined ? { handles: entry.handles } : {}),
        ...(entry.timeoutMs !== undefined ? { timeoutMs: entry.timeoutMs } : {}),
        ...(entry.measurement !== undefined ? { measurement: entry.measurement as MeasurementPolicy } : {}),
        // A check's source is a configured, named system: the entry's `source`, else its one connection.
        ...(entry.source !== undefined
          ? { source: entry.source }
          : connectionNames.length === 1
            ? { source: connectionNames[0]! }
            : {}),
      };
      try {
        createVerifierRegistry([registration]);
      } catch (error) {
        throw inFile(error, absolute, at);
      }
      registrations.push(registration);
    }
    let registry: VerifierRegistry;
    try {
      registry = createVerifierRegistry(registrations);
    } catch (error) {
      const name = isVerifierError(error) ? error.verifier : undefined;
      const index = registrations.findLastIndex((r) => (r.name ?? (r.verifier as AnyVerifier).id) === name);
      throw inFile(error, absolute, `/verifiers/${Math.max(index, 0)}`);
    }
    return { file: absolute, registry, connections: Object.freeze(connections), close };
  } catch (error) {
    await close();
    throw error;
  }
}

async function readConfig(file: string): Promise<unknown> {
  if (/\.(ts|mts|js|mjs)$/.test(file)) {
    let module: { default?: unknown };
    try {
      module = await import(pathToFileURL(file).href);
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (code === 'ERR_MODULE_NOT_FOUND' || code === 'ENOENT') {
        throw new VerifierError('CONFIG_NOT_FOUND', `${file} does not exist`, { file, cause: error });
      }
      throw new VerifierError('CONFIG_INVALID', `${file} cannot be loaded: ${(error as Error).message}`, {
        file,
        cause: error,
      });
    }
    return module.default;
  }
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (error) {
    throw new VerifierError('CONFIG_NOT_FOUND', `${file} cannot be read`, { file, cause: error });
  }
  try {
    return JSON.parse(text);
  } catch (error) {
    throw new VerifierError('CONFIG_INVALID', `${file} is not valid JSON`, { file, field: '', cause: error });
  }
}

/**
 * A verifier object (from a `.ts` configuration) or a built-in is host code and runs in this
 * process; a plugin named by path or package runs in a process of its own (see
 * `loadIsolatedVerifier`), whose stopper is added to `opened`.
 */
async function loadVerifier(
  entry: VerifierConfigEntry,
  file: string,
  fail: (field: string, message: string, verifier?: string) => never,
  opened: { close(): Promise<void> }[],
): Promise<AnyVerifier> {
  if (typeof entry.use !== 'string') {
    const id = (entry.use as { id?: unknown }).id;
    if (typeof id !== 'string' || !id.includes('/'))
      return fail('/use', 'a third-party verifier id must be vendor/name');
    if (entry.memoryMb !== undefined)
      fail(
        '/memoryMb',
        'a verifier object runs in the server; memoryMb limits a plugin named by path or package',
      );
    if (entry.user !== undefined)
      fail(
        '/user',
        'a verifier object runs in the server; user applies to a plugin named by path or package',
      );
    return entry.use as AnyVerifier;
  }
  const builtin = BUILTIN_VERIFIERS[entry.use];
  if (builtin !== undefined) {
    if (entry.export !== undefined) fail('/export', 'built-in verifiers have no exports to choose from');
    if (entry.memoryMb !== undefined)
      fail('/memoryMb', 'built-in verifiers run in the server; memoryMb limits a plugin');
    if (entry.user !== undefined)
      fail('/user', 'built-in verifiers run in the server; user applies to a plugin');
    return builtin;
  }
  const specifier = entry.use;
  let url: string;
  try {
    url = resolveSpecifier(specifier, file);
  } catch (error) {
    return fail('/use', `cannot load "${specifier}": ${(error as Error).message}`);
  }
  const exportName = entry.export ?? 'default';
  let plugin: IsolatedVerifier;
  try {
    plugin = await loadIsolatedVerifier({
      url,
      exportName,
      options: entry.options,
      ...(entry.memoryMb !== undefined ? { memoryMb: entry.memoryMb } : {}),
      ...(entry.user !== undefined ? { user: entry.user } : {}),
    });
  } catch (error) {
    if (!(error instanceof PluginLoadError)) throw error;
    if (error.code === 'EXPORT_MISSING') {
      return fail(
        entry.export ? '/export' : '/use',
        `"${specifier}" has no verifier as export "${exportName}"`,
      );
    }
    if (error.code === 'ERR_UNKNOWN_FILE_EXTENSION' && /\.[cm]?ts$/.test(url)) {
      return fail(
        '/use',
        `cannot load "${specifier}": ${url} is TypeScript, which this Node.js cannot load: build the plugin to JavaScript (tsc) and point "use" at the built .js file or package`,
      );
    }
    return fail('/use', `cannot load "${specifier}": ${error.message}`);
  }
  opened.push(plugin);
  const id = (plugin.verifier as { id?: unknown }).id;
  // Unprefixed ids are Vouch's own; a plugin that takes one could be mistaken for a built-in.
  if (typeof id === 'string' && !id.includes('/')) {
    return fail('/use', `verifier "${id}" from "${specifier}" must have a vendor/name id`, id);
  }
  return plugin.verifier;
}

/**
 * A package is resolved from the configuration's directory with Node's own ESM algorithm
 * (package `exports`, the `import` condition), so a plugin installed next to the config file
 * is found even when it has no `require` export, and never one from Vouch's own directory.
 */
function resolveSpecifier(specifier: string, configFile: string): string {
  return specifier.startsWith('.') || path.isAbsolute(specifier)
    ? pathToFileURL(path.resolve(path.dirname(configFile), specifier)).href
    : resolveModule(specifier, pathToFileURL(configFile).href);
}

function withAbsoluteRoots(options: unknown, file: string): unknown {
  if (
    typeof options !== 'object' ||
    options === null ||
    !Array.isArray((options as { roots?: unknown }).roots)
  )
    return options;
  const roots = (options as { roots: unknown[] }).roots.map((root) =>
    typeof root === 'string' ? path.resolve(path.dirname(file), root) : root,
  );
  return { ...options, roots };
}

function inFile(error: unknown, file: string, at: string): unknown {
  if (!isVerifierError(error)) return error;
  const field =
    error.field?.startsWith('/verifier/') || error.field === '/verifier'
      ? `${at}/use`
      : `${at}${error.field ?? ''}`;
  return new VerifierError(error.code, `${file}: ${field}: ${error.message}`, {
    file,
    field,
    ...(error.verifier ? { verifier: error.verifier } : {}),
    ...(error.evidence ? { evidence: error.evidence } : {}),
    cause: error,
  });
}

function pointer(path: readonly PropertyKey[]): string {
  return path.map((key) => `/${String(key).replaceAll('~', '~0').replaceAll('/', '~1')}`).join('');
}

function verifierAt(raw: unknown, issuePath: readonly PropertyKey[]): string | undefined {
  if (issuePath[0] !== 'verifiers' || typeof issuePath[1] !== 'number') return undefined;
  const entry = (raw as { verifiers?: { name?: unknown; use?: unknown }[] }).verifiers?.[issuePath[1]];
  const label = entry?.name ?? entry?.use;
  return typeof label === 'string' ? label : undefined;
}
