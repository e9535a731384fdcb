import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { redactUrl } from '@vouch/ledger';
import { MIN_SUPPLIED_KEY_LENGTH } from './auth/api-key';
import { ConfigError } from './config-error';
import { DEFAULT_CONSOLE_DIR } from './http/console-assets';
import type { ServerSettings } from './settings/server-settings';
import { type TransparencyConfig, transparencyConfig } from './transparency/config';
import { type WebhookConfig, webhookConfig } from './webhooks/webhook-config';

export { ConfigError };

/**
 * Where the ledger lives: a Postgres URL (with the bounds of its waits, when set), or a
 * PGlite data directory.
 */
export type DatabaseTarget =
  | { kind: 'postgres'; url: string; connectTimeoutMs?: number; statementTimeoutMs?: number }
  | { kind: 'pglite'; dataDir: string };

/** The default PGlite data directory, relative to the working directory. */
export const DEFAULT_DATA_DIR = './.vouch/data';

/**
 * `DATABASE_URL` selects Postgres (`VOUCH_DB_CONNECT_TIMEOUT_MS` and
 * `VOUCH_DB_STATEMENT_TIMEOUT_MS` bound its waits; see `openDatabase`); otherwise PGlite in
 * `VOUCH_DATA_DIR` (default `./.vouch/data`, resolved against `cwd`).
 */
export function databaseTarget(env: NodeJS.ProcessEnv, cwd: string): DatabaseTarget {
  const url = env.DATABASE_URL?.trim();
  if (url) {
    const bound = (name: string) => (env[name]?.trim() ? integer(env, name, 0, 1, 3_600_000) : undefined);
    const connectTimeoutMs = bound('VOUCH_DB_CONNECT_TIMEOUT_MS');
    const statementTimeoutMs = bound('VOUCH_DB_STATEMENT_TIMEOUT_MS');
    return {
      kind: 'postgres',
      url,
      ...(connectTimeoutMs === undefined ? {} : { connectTimeoutMs }),
      ...(statementTimeoutMs === undefined ? {} : { statementTimeoutMs }),
    };
  }
  return { kind: 'pglite', dataDir: resolve(cwd, env.VOUCH_DATA_DIR?.trim() || DEFAULT_DATA_DIR) };
}

/** Where the data is, for messages (never a password). */
export function describeTarget(target: DatabaseTarget): string {
  return target.kind === 'postgres' ? `Postgres at ${redactUrl(target.url)}` : `PGlite in ${target.dataDir}`;
}

/** Settings of `vouch serve`, from the environment. */
export interface ServeConfig {
  database: DatabaseTarget;
  port: number;
  host: string;
  /** The first admin key, when the operator supplies it instead of having one printed. */
  adminKey: string | undefined;
  /** How long shutdown waits for in-flight requests before closing their connections. */
  shutdownGraceMs: number;
  /** The verifier configuration: `VOUCH_CONFIG`, else `./vouch.config.json` when it exists. */
  verifierConfig: string | undefined;
  /**
   * Postgres only: serve even when the database role is a superuser or owns the ledger
   * tables (`VOUCH_ALLOW_OWNER_ROLE=1`, `--allow-owner-role`). Such a role can switch the
   * append-only triggers off; production runs as the runtime role `vouch migrate` grants.
   */
  allowOwnerRole?: boolean;
  /**
   * How long after an `unknown` observation (a timeout: the tool may still act) every
   * verification is held at inconclusive (`VOUCH_UNKNOWN_OUTCOME_SETTLE_SECONDS`, default 900;
   * docs/verification.md).
   */
  unknownOutcomeSettleSeconds: number;
  /**
   * How long an execution claim waits for its observation, and the longest a gateway may ask
   * for (`VOUCH_EXECUTION_CLAIM_SECONDS`, default 600); after it the sweep records `unknown`.
   */
  executionClaimSeconds: number;
  /** How often `serve` sweeps lapsed claims (`VOUCH_CLAIM_SWEEP_INTERVAL_MS`, default 5000; 0: never). */
  claimSweepIntervalMs: number;
  /**
   * How often `serve` looks for `unknown` outcomes that settled unverified and queues their
   * verification (`VOUCH_SETTLE_SWEEP_INTERVAL_MS`, default 5000; 0: never).
   */
  settleSweepIntervalMs: number;
  /** Which setting accepted the owner role, for the log line that says so. */
  allowOwnerRoleBy?: 'VOUCH_ALLOW_OWNER_ROLE' | '--allow-owner-role';
  /** Postgres only: apply migrations before serving (`VOUCH_MIGRATE=1`, `--migrate`); needs the owner role. */
  migrate?: boolean;
  /**
   * Where `GET /metrics` is served (`VOUCH_METRICS_PORT`, `VOUCH_METRICS_HOST`, default
   * 127.0.0.1): a listener of its own, off unless a port is set (docs/operations.md).
   */
  metrics?: { port: number; host: string };
  /**
   * The `server` section of the configuration file and its variables (policy, approvals,
   * limits, rate limits, keys): `loadServerSettings`. Default: `DEFAULT_SERVER_SETTINGS`.
   */
  settings?: ServerSettings;
  /**
   * Where the last checkpoint signed per log is kept outside the database, resolved
   * (`checkpointStatePath` of `settings.checkpoints.stateDir`). Default: resolved at start.
   */
  checkpointStateDir?: string;
  /** Signed checkpoints: VOUCH_LOG_SIGNING_KEY, VOUCH_LOG_ORIGIN, VOUCH_CHECKPOINT_INTERVAL_MS, VOUCH_LOG_SHARED_SIGNATURE, VOUCH_WITNESS_KEYS, VOUCH_TILES_PUBLIC (docs/transparency.md). */
  transparency?: TransparencyConfig;
  /** Outbound webhooks: the `webhooks` section of the JSON configuration file (docs/webhooks.md). */
  webhooks?: WebhookConfig;
  /** The built web console served at `/ui/` (`VOUCH_CONSOLE_DIR`, default apps/console/dist); `VOUCH_CONSOLE=0` turns it off. */
  consoleDir?: string;
  /** Postgres only: a hot standby for reads (`DATABASE_READ_URL`; docs/scaling.md). */
  standby?: StandbyConfig;
}

/** A hot standby that serves reads which authorize no write. */
export interface StandbyConfig {
  url: string;
  /**
   * How long a read waits for the standby to replay everything the primary had when the
   * read began, before it reads the primary instead (`VOUCH_READ_MAX_WAIT_MS`, default 250).
   */
  maxWaitMs: number;
}

/** `DATABASE_READ_URL` (Postgres only: PGlite is one process with no standby) and its wait. */
export function standbyConfig(env: NodeJS.ProcessEnv, database: DatabaseTarget): StandbyConfig | undefined {
  const url = env.DATABASE_READ_URL?.trim();
  if (!url) return undefined;
  if (database.kind !== 'postgres') {
    throw new ConfigError('DATABASE_READ_URL needs DATABASE_URL: the embedded PGlite has no standby');
  }
  return { url, maxWaitMs: integer(env, 'VOUCH_READ_MAX_WAIT_MS', 250, 0, 60_000) };
}

function integer(env: NodeJS.ProcessEnv, name: string, fallback: number, min: number, max: number): number {
  const raw = env[name]?.trim();
  if (!raw) return fallback;
  const value = Number(raw);
  if (!/^\d+$/.test(raw) || value < min || value > max) {
    throw new ConfigError(`${name}=${raw}: not a whole number from ${min} to ${max}`, { key: name });
  }
  return value;
}

/** Read `PORT` (default 8787; 0 picks a free port), `HOST` (default 127.0.0.1) and the rest. */
export function serveConfig(env: NodeJS.ProcessEnv, cwd: string): ServeConfig {
  const configFile = verifierConfigPath(env, cwd);
  const webhooks = webhookConfig(env, configFile);
  const database = databaseTarget(env, cwd);
  const standby = standbyConfig(env, database);
  return {
    database,
    ...(standby ? { standby } : {}),
    port: integer(env, 'PORT', 8787, 0, 65_535),
    // Loopback unless told otherwise: a fresh install prints an admin key, and should not be
    // reachable from the network before its operator decides it should be.
    host: env.HOST?.trim() || '127.0.0.1',
    adminKey: adminKey(env),
    shutdownGraceMs: integer(env, 'VOUCH_SHUTDOWN_GRACE_MS', 10_000, 0, 600_000),
    unknownOutcomeSettleSeconds: integer(env, 'VOUCH_UNKNOWN_OUTCOME_SETTLE_SECONDS', 900, 0, 30 * 86_400),
    executionClaimSeconds: integer(env, 'VOUCH_EXECUTION_CLAIM_SECONDS', 600, 1, 86_400),
    claimSweepIntervalMs: integer(env, 'VOUCH_CLAIM_SWEEP_INTERVAL_MS', 5_000, 0, 3_600_000),
    settleSweepIntervalMs: integer(env, 'VOUCH_SETTLE_SWEEP_INTERVAL_MS', 5_000, 0, 3_600_000),
    verifierConfig: configFile,
    transparency: transparencyConfig(env),
    ...(webhooks ? { webhooks } : {}),
    ...(flag(env, 'VOUCH_ALLOW_OWNER_ROLE')
      ? { allowOwnerRole: true, allowOwnerRoleBy: 'VOUCH_ALLOW_OWNER_ROLE' as const }
      : { allowOwnerRole: false }),
    migrate: flag(env, 'VOUCH_MIGRATE'),
    ...(env.VOUCH_CONSOLE?.trim() === '0'
      ? {}
      : {
          consoleDir: env.VOUCH_CONSOLE_DIR?.trim()
            ? resolve(cwd, env.VOUCH_CONSOLE_DIR.trim())
            : DEFAULT_CONSOLE_DIR,
        }),
    ...(env.VOUCH_METRICS_PORT?.trim()
      ? {
          metrics: {
            port: integer(env, 'VOUCH_METRICS_PORT', 0, 0, 65_535),
            host: env.VOUCH_METRICS_HOST?.trim() || '127.0.0.1',
          },
        }
      : {}),
  };
}

// Checked here, before anything opens the data directory: a key that would be refused later
// must not leave a half-initialised install behind.
function adminKey(env: NodeJS.ProcessEnv): string | undefined {
  const key = env.VOUCH_ADMIN_KEY?.trim() || undefined;
  if (key !== undefined && key.length < MIN_SUPPLIED_KEY_LENGTH) {
    throw new ConfigError(
      `VOUCH_ADMIN_KEY must be at least ${MIN_SUPPLIED_KEY_LENGTH} characters (for example: openssl rand -base64 48)`,
      { key: 'VOUCH_ADMIN_KEY' },
    );
  }
  return key;
}

function flag(env: NodeJS.ProcessEnv, name: string): boolean {
  const raw = env[name]?.trim();
  if (!raw || raw === '0' || raw === 'false') return false;
  if (raw === '1' || raw === 'true') return true;
  throw new ConfigError(`${name}=${raw}: use 1 or 0`, { key: name });
}

function verifierConfigPath(env: NodeJS.ProcessEnv, cwd: string): string | undefined {
  const given = env.VOUCH_CONFIG?.trim();
  if (given) {
    const path = resolve(cwd, given);
    if (!existsSync(path)) {
      throw new ConfigError(`VOUCH_CONFIG=${given}: no such file (${path})`, { key: 'VOUCH_CONFIG' });
    }
    return path;
  }
  const conventional = resolve(cwd, 'vouch.config.json');
  return existsSync(conventional) ? conventional : undefined;
}
