/** Load `vouch.config.json` / `.ts` into a verifier registry with its connections. */
export type { LoadedVerifierConfig, LoadVerifierConfigOptions } from './config/load-verifier-config';
export { BUILTIN_VERIFIERS, defineVerifierConfig, loadVerifierConfig } from './config/load-verifier-config';
export type { VerifierConfigInput } from './config/verifier-config-schema';
export { verifierConfigSchema } from './config/verifier-config-schema';
/** `file`: what a coding agent wrote, under configured roots. */
export type { FileOptions } from './file/file-options';
export { fileVerifier } from './file/file-verifier';
/** `http-json`: a JSON document over HTTP, asserted on by JSON Pointer. */
export type { HttpJsonOptions } from './http-json/http-json-options';
export { httpJsonVerifier } from './http-json/http-json-verifier';
/** The SSRF policy and the guarded fetch every HTTP verifier should be granted. */
export type { AddressPolicy, AddressVerdict } from './net/address-policy';
export { checkAddress, isAllowListEntry } from './net/address-policy';
export type { GuardedFetchOptions, ResolveHost } from './net/guarded-fetch';
export { createGuardedFetch, resolvePinnedAddress } from './net/guarded-fetch';
/** A third-party plugin in a process of its own, as the server runs it (and `VerifierTester`'s `isolate`). */
export type { IsolatedVerifier, IsolatedVerifierOptions } from './plugin/isolated-verifier';
export { DEFAULT_PLUGIN_MEMORY_MB, loadIsolatedVerifier, PluginLoadError } from './plugin/isolated-verifier';
export type { PluginUser } from './plugin/plugin-process';
/** `prometheus`: an instant PromQL query judged with CEL conditions. */
export type { PrometheusOptions } from './prometheus/prometheus-options';
export { prometheusVerifier } from './prometheus/prometheus-verifier';
/** `redis`: one read-only command on a named Redis connection. */
export type { OwnedRedisGrant, RedisGrantOptions } from './redis/redis-grant';
export { createRedisGrant, REDIS_READ_COMMANDS } from './redis/redis-grant';
export type { RedisOptions } from './redis/redis-options';
export { redisVerifier } from './redis/redis-verifier';
/** A read-only MySQL / MariaDB grant for `sql`. */
export type { MysqlSqlGrant, MysqlSqlGrantOptions } from './sql/mysql-sql-grant';
export { createMysqlSqlGrant } from './sql/mysql-sql-grant';
/** A read-only Postgres grant for `sql` (and any verifier that reads a database). */
export type { PostgresSqlGrant, PostgresSqlGrantOptions } from './sql/postgres-sql-grant';
export { createPostgresSqlGrant } from './sql/postgres-sql-grant';
/** `sql`: a parametrized read-only query on a named connection. */
export type { SqlOptions } from './sql/sql-options';
export { sqlVerifier } from './sql/sql-verifier';
