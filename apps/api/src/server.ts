import type { AddressInfo } from 'node:net';
import { type ServerType, serve } from '@hono/node-server';
import {
  createIntegrityAlarm,
  createLedger,
  createRecords,
  createVerificationJobStore,
  type Database,
  type Ledger,
} from '@vouch/ledger';
import { createApp } from './app';
import { startSettleSweeper } from './application/settle-unknown-outcomes';
import { prepareDatabase } from './auth/database-role';
import { createKeyStore } from './auth/key-store';
import { startClaimSweeper } from './claim-sweeper';
import { describeTarget, type ServeConfig } from './config';
import type { Logger } from './logger';
import { createMetrics, type Metrics } from './metrics/metrics';
import { createMetricsApp } from './metrics/metrics-app';
import { type OpenStandby, openStandby } from './open-standby';
import { openTarget } from './open-target';
import { checkPolicyEngineKey } from './policy/engine-key-check';
import { createExternalDecider, startPolicyRetryLoop } from './policy/external-decider';
import { pinnedPolicyOf } from './policy/pinned-policy';
import { DEFAULT_SERVER_SETTINGS, policyEngineOf } from './settings/server-settings';
import { checkpointKeysFor } from './transparency/checkpoint-keys';
import { checkpointStatePath } from './transparency/checkpoint-state-dir';
import { transparencyConfig } from './transparency/config';
import { serverSigningKey } from './transparency/server-key';
import { startCheckpoints } from './transparency/start-checkpoints';
import { emptyVerificationHost, loadVerificationHost, type VerificationHost } from './verification';
import { createVerificationQueue } from './verification-queue';
import { createWebhookDispatcher, type WebhookDispatcher } from './webhooks/webhook-dispatcher';

/** A running `vouch serve`. */
export interface RunningServer {
  url: string;
  port: number;
  database: Database;
  /** The hot standby that serves reads (`DATABASE_READ_URL`), when one is configured. */
  standby?: Database;
  ledger: Ledger;
  /** The Node HTTP server, for embedding (and for tests that need its events). */
  httpServer: ServerType;
  /** `http://host:port/metrics` when a metrics port is configured. */
  metricsUrl?: string;
  /** The server's metrics, for the parts that count into them (webhooks). */
  metrics: Metrics;
  /**
   * Graceful stop: refuse new requests, let in-flight ones finish (up to the grace period),
   * drain pending appends, close the database. Safe to call more than once.
   */
  close(): Promise<void>;
}

export interface StartServerOptions {
  config: ServeConfig;
  logger: Logger;
  /**
   * Called once, on a fresh install, with the first admin key when Vouch generated it. The
   * CLI prints it to the terminal; it never goes to the structured log.
   */
  announceAdminKey(secret: string): void;
  version?: string;
}

/**
 * Open the database, apply migrations (PGlite) or check them and the role (Postgres), listen,
 * and bootstrap the first admin key (after the port is bound, so a busy port prints no key).
 *
 * @example
 * const server = await startServer({ config: serveConfig(process.env, process.cwd()), logger, announceAdminKey });
 * process.once('SIGTERM', () => server.close());
 */
export async function startServer(options: StartServerOptions): Promise<RunningServer> {
  const { config, logger } = options;
  const database = await openTarget(config.database);
  let ledger: Ledger | undefined;
  let verification: VerificationHost | undefined;
  let listening: ServerType | undefined;
  let metricsListener: ServerType | undefined;
  let checkpointer: { close(): Promise<void> } | undefined;
  let keyStore: { close(): Promise<void> } | undefined;
  let webhooks: WebhookDispatcher | undefined;
  let standby: OpenStandby | undefined;
  try {
    await prepareDatabase(database, config, logger);
    verification = config.verifierConfig
      ? await loadVerificationHost(config.verifierConfig, logger)
      : emptyVerificationHost();
    if (verification.file) {
      logger.info('verifiers loaded', {
        file: verification.file,
        verifiers: verification.registry.entries.map((e) => e.name),
      });
    }
    // One alarm per process: the ledger, the checkpointer, the webhook dispatcher and whatever
    // else checks rows against the chain raise it; /readyz reports it; this line is what an
    // operator greps for.
    const integrityAlarm = createIntegrityAlarm({
      onRaise: (alarm) => {
        webhooks?.notifyAlarm(alarm);
        logger.error('integrity alarm', {
          code: 'INTEGRITY_ALARM',
          alarm: alarm.code,
          log: alarm.log,
          ...(alarm.seq === undefined ? {} : { seq: alarm.seq }),
          ...(alarm.table === undefined ? {} : { table: alarm.table }),
          reason: alarm.message,
        });
      },
    });
    webhooks = config.webhooks
      ? createWebhookDispatcher({ database, config: config.webhooks, logger, integrityAlarm })
      : undefined;
    const dispatcher = webhooks;
    await dispatcher?.prepare();
    const metrics = createMetrics({ database });
    const checkpoints = await startCheckpoints({
      database,
      config: config.transparency ?? transparencyConfig({}),
      target: config.database,
      logger,
      integrityAlarm,
      onCheckpoint: metrics.observeCheckpoint,
      stateDir:
        config.checkpointStateDir ??
        checkpointStatePath(config.settings?.checkpoints.stateDir, config.database, process.cwd()),
    });
    checkpointer = checkpoints;
    ledger = createLedger(database, {
      afterAppend: checkpoints.afterAppend,
      integrityAlarm,
      onBatch: metrics.observeBatch,
    });
    const settings = config.settings ?? DEFAULT_SERVER_SETTINGS;
    const keys = createKeyStore(ledger, {
      cache: true,
      allowRoleCombinations: settings.keys.allowRoleCombinations,
    });
    keyStore = keys;
    standby = await openStandby({ config, primary: { ledger }, logger });
    let draining = false;
    const serverKey = await serverSigningKey(ledger, checkpoints.keys?.serverKey, logger);
    const records = createRecords(ledger, {
      ...(serverKey ? { serverKey } : {}),
      unknownOutcomeSettleSeconds: config.unknownOutcomeSettleSeconds,
      executionClaimSeconds: config.executionClaimSeconds,
      pinnedPolicy: pinnedPolicyOf(settings.policy),
      approvalRequestTtlSeconds: settings.approvals.requestTtlSeconds,
      maxApprovalWindowSeconds: settings.approvals.maxWindowSeconds,
    });
    const engine = policyEngineOf(settings.policy);
    const policyEngine = engine ? createExternalDecider({ engine, records, logger, metrics }) : undefined;
    if (engine) await checkPolicyEngineKey(database, engine.identity, logger);
    // Background verifications (`Prefer: respond-async`): written before they run, resumed below.
    const verificationJobs = createVerificationJobStore(database);
    const verificationQueue = createVerificationQueue({
      records,
      host: verification,
      store: verificationJobs,
      logger,
      metrics,
      settleSeconds: config.unknownOutcomeSettleSeconds,
    });
    const app = createApp({
      ledger,
      verificationQueue,
      ...(standby ? { reads: standby.reads } : {}),
      records,
      ...(policyEngine ? { policyEngine } : {}),
      limits: settings.limits,
      rateLimit: settings.rateLimit,
      keyMaxAgeDays: settings.keys.maxAgeDays,
      keys,
      logger,
      metrics,
      draining: () => draining,
      verification,
      ...(checkpoints.keys ? { checkpointKeys: checkpointKeysFor(checkpoints.keys) } : {}),
      witnessKeys: config.transparency?.witnessKeys ?? [],
      onCosigned: checkpoints.cosigned,
      tiles: config.transparency?.tilesPublic ? 'public' : 'auditor',
      ...(options.version ? { version: options.version } : {}),
      ...(config.consoleDir ? { consoleDir: config.consoleDir } : {}),
    });
    const server = serve({ fetch: app.fetch, port: config.port, hostname: config.host });
    listening = server;
    await listeningOn(server);
    let metricsUrl: string | undefined;
    if (config.metrics) {
      const metricsServer = serve({
        fetch: createMetricsApp(metrics).fetch,
        port: config.metrics.port,
        hostname: config.metrics.host,
      });
      metricsListener = metricsServer;
      await listeningOn(metricsServer);
      metricsUrl = `${urlOf(metricsServer)}/metrics`;
      logger.info('metrics listening', { url: metricsUrl });
    }
    // The port first, the admin key after: a port in use must not print a first admin key
    // (stored, so still valid, but an operator who saw the start fail would not trust it).
    // Until the key exists no key authenticates, so a request in between gets a 401.
    const bootstrapped = await keys.bootstrapAdmin(
      config.adminKey === undefined ? {} : { secret: config.adminKey },
    );
    if (bootstrapped) {
      logger.info('bootstrap admin key created', {
        key_id: bootstrapped.key.id,
        source: config.adminKey === undefined ? 'generated' : 'VOUCH_ADMIN_KEY',
      });
      if (config.adminKey === undefined) options.announceAdminKey(bootstrapped.secret);
    }

    const url = urlOf(server);
    const address = server.address() as AddressInfo;
    logger.info('listening', { url, database: database.kind, location: describeTarget(config.database) });
    webhooks?.start(url);
    const resumed = await verificationQueue.resume();
    if (resumed > 0) logger.info('verifications resumed', { jobs: resumed });
    // Jobs of a process that died are taken over once their lease runs out.
    verificationQueue.sweep();

    // A gateway that stopped between authorize and observe leaves a claim: recorded `unknown` once it lapses.
    const sweeper = startClaimSweeper({ records, intervalMs: config.claimSweepIntervalMs, logger });
    // An `unknown` outcome that settled with nobody verifying it since: verified by the server.
    const settleSweeper = startSettleSweeper({
      store: verificationJobs,
      queue: verificationQueue,
      settleSeconds: config.unknownOutcomeSettleSeconds,
      intervalMs: config.settleSweepIntervalMs,
      logger,
    });
    // Proposals the engine did not answer (it was down, or this server stopped first): asked again.
    const policyRetry =
      policyEngine && engine
        ? startPolicyRetryLoop({ decider: policyEngine, intervalMs: engine.retrySeconds * 1000, logger })
        : undefined;
    if (engine) {
      // Origin and path only: a query string could carry a credential.
      const { origin, pathname } = new URL(engine.decisionUrl);
      logger.info('policy engine asked about each proposal', {
        url: `${origin}${pathname}`,
        identity: engine.identity,
      });
    }
    const openLedger = ledger;
    const openVerification = verification;
    const openedStandby = standby;
    let closing: Promise<void> | undefined;
    const close = () => {
      closing ??= (async () => {
        draining = true;
        logger.info('shutting down', { grace_ms: config.shutdownGraceMs });
        await new Promise<void>((resolve) => {
          const force = setTimeout(() => {
            logger.warn('grace period over: closing open connections', {});
            if ('closeAllConnections' in server) server.closeAllConnections();
          }, config.shutdownGraceMs);
          force.unref();
          server.close(() => {
            clearTimeout(force);
            resolve();
          });
          // Keep-alive connections with no request in flight would hold close() open.
          if ('closeIdleConnections' in server) server.closeIdleConnections();
        });
        await sweeper.close();
        await settleSweeper.close();
        await policyRetry?.close();
        // Running measurements stop; their jobs stay queued for the next start.
        await verificationQueue.close();
        await dispatcher?.close();
        if (metricsListener) await closeListener(metricsListener);
        await openLedger.close();
        await openVerification.close?.();
        await checkpoints.close();
        await keys.close();
        await openedStandby?.database.close();
        await database.close();
        logger.info('stopped', {});
      })();
      return closing;
    };
    return {
      url,
      port: address.port,
      database,
      ...(standby ? { standby: standby.database } : {}),
      ledger,
      httpServer: server,
      metrics,
      ...(metricsUrl ? { metricsUrl } : {}),
      close,
    };
  } catch (error) {
    for (const open of [listening, metricsListener]) {
      if (open?.listening) await closeListener(open);
    }
    await webhooks?.close().catch(() => {});
    await ledger?.close().catch(() => {});
    await verification?.close?.().catch(() => {});
    await checkpointer?.close().catch(() => {});
    await keyStore?.close().catch(() => {});
    await standby?.database.close().catch(() => {});
    await database.close().catch(() => {});
    throw error;
  }
}

function listeningOn(server: ServerType): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    server.once('listening', resolve);
    server.once('error', reject);
  });
}

function urlOf(server: ServerType): string {
  const address = server.address() as AddressInfo;
  const host = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  return `http://${host}:${address.port}`;
}

async function closeListener(server: ServerType): Promise<void> {
  const closed = new Promise<void>((resolve) => server.close(() => resolve()));
  if ('closeAllConnections' in server) server.closeAllConnections();
  await closed;
}
