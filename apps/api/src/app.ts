import { OpenAPIHono } from '@hono/zod-openapi';
import {
  type CheckpointKeys,
  createRecords,
  createVerificationJobStore,
  type Ledger,
  type Records,
} from '@vouch/ledger';
import { requestId } from 'hono/request-id';
import { authenticate } from './auth/authenticate';
import { createKeyStore, type KeyStore } from './auth/key-store';
import { errorResponse, handleError } from './error-response';
import { ApiError } from './errors';
import { accessLog } from './http/access-log';
import { setAnswerHeader } from './http/answer-header';
import type { AppEnv } from './http/app-env';
import { registerConsoleAssets } from './http/console-assets';
import { createRateLimiter, type RateLimit, rateLimit } from './http/rate-limit';
import { requestMetrics } from './http/request-metrics';
import { traceRequests } from './http/trace-requests';
import { validationHook } from './http/validation-hook';
import { type Limits, resolveLimits } from './limits';
import { type Logger, silentLogger } from './logger';
import { createMetrics, type Metrics } from './metrics/metrics';
import { registerOpenApiRoutes } from './openapi/routes';
import type { ExternalDecider } from './policy/external-decider';
import { primaryReads, type ReadRouter, type ReadSide } from './read-routing';
import { type ApprovalEventsOptions, registerApprovalEventRoutes } from './routes/approval-events';
import { registerApprovalRoutes } from './routes/approvals';
import { registerAuditRoutes } from './routes/audit';
import { registerEnrolmentCodeRoutes } from './routes/enrolment-codes';
import { databaseReadiness, type Readiness, registerHealthRoutes, withIntegrity } from './routes/health';
import { registerKeyRoutes } from './routes/keys';
import { registerLogRoutes } from './routes/logs';
import { registerMeRoutes } from './routes/me';
import { registerObservationRoutes } from './routes/observations';
import { registerProposalRoutes } from './routes/proposals';
import { registerRedactionRoutes } from './routes/redactions';
import { registerSigningKeyRoutes } from './routes/signing-keys';
import { registerTileRoutes } from './routes/tiles';
import { registerToolRoutes } from './routes/tools';
import { registerTransparencyRoutes } from './routes/transparency';
import { registerWebhookRoutes } from './routes/webhooks';
import { emptyVerificationHost, type VerificationHost } from './verification';
import { createVerificationQueue, type VerificationQueue } from './verification-queue';

/** Everything the HTTP app needs, injected so tests can run it with `app.request()` and no socket. */
export interface AppOptions {
  ledger: Ledger;
  /** Defaults to the key store over the ledger's database. */
  keys?: KeyStore;
  /** Defaults to `createRecords(ledger)` with the built-in policy. */
  records?: Records;
  /**
   * The external policy engine the server asks about each new proposal
   * (`server.policy.decisionUrl`); default none: the built-in policy decides, or (with
   * `records` in external mode) the engine posts its decisions.
   */
  policyEngine?: ExternalDecider;
  /** The verifiers `POST /v1/observations/{id}/verify` runs; default none (every check inconclusive). */
  verification?: VerificationHost;
  /**
   * Where `Prefer: respond-async` verifications are queued; default a queue over the ledger's
   * database that runs in this process. The server resumes its pending jobs at startup.
   */
  verificationQueue?: VerificationQueue;
  logger?: Logger;
  limits?: Partial<Limits>;
  /** Requests per key (in this process); default none. `now` (ms, monotonic) is for tests. */
  rateLimit?: RateLimit & { now?: () => number };
  /** Keys older than this many days are refused with `KEY_EXPIRED`; default 0, no expiry. */
  keyMaxAgeDays?: number;
  /** Clock for key expiry, for tests. */
  now?: () => Date;
  /**
   * Defaults to: the database answers and every migration is applied. Either way the
   * ledger's integrity alarm (`ledger.integrityAlarm`) makes the instance not ready.
   */
  readiness?: () => Promise<Readiness>;
  /** Where requests and verifications are counted; default a fresh registry over the ledger's database. */
  metrics?: Metrics;
  /** Shown in the OpenAPI document. */
  version?: string;
  /** True once shutdown began: new requests get 503 `NOT_READY` and `Connection: close`. */
  draining?: () => boolean;
  /** This server's log key(s) per log: chain verification then checks checkpoint signatures too. */
  checkpointKeys?: (log: string) => CheckpointKeys;
  /** Witness verifier keys (`cosignature/v1`) whose cosignatures this server collects and serves (`VOUCH_WITNESS_KEYS`). */
  witnessKeys?: readonly string[];
  /** Cosignatures were kept for a checkpoint (the server copies them into its checkpoint state). */
  onCosigned?: (log: string, treeSize: number) => Promise<void>;
  /**
   * The c2sp.org/tlog-tiles endpoints at `/tlog/<log>/` (`VOUCH_TILES_PUBLIC`): `public`
   * serves them to anyone, as monitors and witnesses expect; `auditor` (the default) needs an
   * auditor key for the log.
   */
  tiles?: 'public' | 'auditor';
  /** Serve the built web console from this directory at `/ui/` (none: no console). */
  consoleDir?: string;
  /** How `GET /v1/approvals/events` polls the log. */
  approvalEvents?: ApprovalEventsOptions;
  /**
   * Where reads that authorize no write run (verification, proofs, checkpoints, exports,
   * stories, lists): a hot standby with `standbyReads`. Default: the primary.
   */
  reads?: ReadRouter;
}

/** The answer header that says which database served a request's reads (when a standby is configured). */
export const READ_SOURCE_HEADER = 'Vouch-Read-Source';

/** The hono app type, for composing and for `app.request()` in tests. */
export type VouchApp = OpenAPIHono<AppEnv>;

/**
 * Build the Vouch HTTP app: one error envelope, bounded JSON bodies, bearer-key auth on
 * everything but health and docs, and an OpenAPI 3.1 document generated from the same zod
 * schemas that validate requests.
 *
 * @example
 * const database = await openDatabase();
 * await migrate(database);
 * const app = createApp({ ledger: createLedger(database) });
 * const res = await app.request('/healthz');
 */
export function createApp(options: AppOptions): VouchApp {
  const logger = options.logger ?? silentLogger;
  const limits = resolveLimits(options.limits);
  const keys = options.keys ?? createKeyStore(options.ledger);
  const records = options.records ?? createRecords(options.ledger);
  const verification = options.verification ?? emptyVerificationHost();
  const metrics = options.metrics ?? createMetrics({ database: options.ledger.database });
  const verificationQueue =
    options.verificationQueue ??
    createVerificationQueue({
      records,
      host: verification,
      store: createVerificationJobStore(options.ledger.database),
      logger,
      metrics,
    });
  const draining = options.draining ?? (() => false);
  const reads = options.reads ?? primaryReads({ ledger: options.ledger, records });
  const baseReadiness = options.readiness ?? (() => databaseReadiness(options.ledger.database));
  const readiness = async (): Promise<Readiness> => {
    const report = withIntegrity(await baseReadiness(), options.ledger.integrityAlarm);
    return draining() ? { ...report, ready: false, draining: true } : report;
  };

  const app = new OpenAPIHono<AppEnv>({ defaultHook: validationHook });

  app.use('*', requestId({ limitLength: 128 }));
  // Before the access log, which writes the trace id of the span this opens.
  app.use('*', traceRequests());
  app.use('*', async (c, next) => {
    c.set('logger', logger);
    c.set('limits', limits);
    await next();
    // Answers carry ledger content and depend on the caller's key: never cache them.
    if (!c.res.headers.has('cache-control')) setAnswerHeader(c, 'Cache-Control', 'no-store');
    setAnswerHeader(c, 'X-Content-Type-Options', 'nosniff');
  });
  app.use('*', accessLog());
  app.use('*', requestMetrics(metrics));
  app.use('*', async (c, next) => {
    // A request that reached a stopping server on a kept-alive connection: answer, and
    // tell the client to reconnect (to another instance) for the next one.
    if (draining() && c.req.path !== '/healthz' && c.req.path !== '/readyz') {
      c.header('Connection', 'close');
      throw new ApiError('NOT_READY', 'the server is shutting down; retry against another instance');
    }
    await next();
    // A request that was in flight when shutdown began: let it finish, then close its
    // connection so the server is not kept open by an idle keep-alive socket.
    if (draining()) setAnswerHeader(c, 'Connection', 'close');
  });
  const authentication = authenticate(keys, {
    maxAgeDays: options.keyMaxAgeDays ?? 0,
    ...(options.now ? { now: options.now } : {}),
  });
  app.use('/v1/*', authentication);
  // The tiles are public only when configured so; otherwise they take an auditor key.
  if (options.tiles !== 'public') app.use('/tlog/*', authentication);
  if (options.rateLimit && options.rateLimit.requestsPerSecond > 0) {
    app.use('/v1/*', rateLimit(createRateLimiter(options.rateLimit, options.rateLimit.now)));
  }
  app.use('/v1/*', async (c, next) => {
    let chosen: Promise<ReadSide> | undefined;
    c.set('readSide', () => {
      chosen ??= reads.choose();
      return chosen;
    });
    await next();
    if (chosen && reads.hasStandby) {
      const side = await chosen.catch(() => undefined);
      if (side) c.res.headers.set(READ_SOURCE_HEADER, side.source);
    }
  });

  registerHealthRoutes(app, { readiness });
  if (options.consoleDir !== undefined) registerConsoleAssets(app, { dir: options.consoleDir });
  registerOpenApiRoutes(app, { version: options.version ?? '0.1.0' });
  registerKeyRoutes(app, { keys, ledger: options.ledger });
  registerMeRoutes(app);
  registerSigningKeyRoutes(app, { ledger: options.ledger });
  registerEnrolmentCodeRoutes(app, { ledger: options.ledger });
  registerToolRoutes(app, { records });
  registerProposalRoutes(app, {
    records,
    verification,
    queue: verificationQueue,
    ...(options.policyEngine ? { policyEngine: options.policyEngine } : {}),
  });
  // Before the approval routes: `/v1/approvals/events` is not an approval id.
  registerApprovalEventRoutes(app, {
    ledger: options.ledger,
    records,
    ...(options.approvalEvents ? { options: options.approvalEvents } : {}),
  });
  registerApprovalRoutes(app, { records });
  registerObservationRoutes(app, { records, verification, metrics, queue: verificationQueue });
  registerAuditRoutes(app, options.checkpointKeys ? { checkpointKeys: options.checkpointKeys } : {});
  registerTileRoutes(app, {
    reads,
    public: options.tiles === 'public',
    ...(options.witnessKeys ? { witnessKeys: options.witnessKeys } : {}),
  });
  registerTransparencyRoutes(app, {
    database: options.ledger.database,
    alarm: options.ledger.integrityAlarm,
    ...(options.witnessKeys ? { witnessKeys: options.witnessKeys } : {}),
    ...(options.onCosigned ? { onCosigned: options.onCosigned } : {}),
  });
  registerWebhookRoutes(app, { database: options.ledger.database });
  registerLogRoutes(app, { ledger: options.ledger });
  registerRedactionRoutes(app, { ledger: options.ledger });

  app.notFound((c) =>
    errorResponse(c, {
      status: 404,
      code: 'ROUTE_NOT_FOUND',
      message: `no route ${c.req.method} ${new URL(c.req.url).pathname}; see /openapi.json`,
    }),
  );
  app.onError(handleError);
  return app;
}

/** Thrown by routes whose service was not wired into this app (e.g. no verifier host). */
export function notConfigured(what: string): ApiError {
  return new ApiError('NOT_CONFIGURED', `${what} is not configured on this server`);
}
