import cluster from 'node:cluster';
import { serveConfig } from '../config';
import { createJsonLogger } from '../logger';
import { startServer } from '../server';
import { loadServerSettings } from '../settings/server-settings';
import { startTracing } from '../tracing/start-tracing';
import { checkpointStatePath } from '../transparency/checkpoint-state-dir';
import { defineCommand } from './command';
import { EXIT } from './io';
import { superviseWorkers, withFields, workerCount } from './serve-workers';

/** `vouch serve`: resolves when the server has stopped after SIGTERM/SIGINT. */
export const serveCommand = defineCommand({
  name: 'vouch serve',
  description: `Run the HTTP API. Storage: DATABASE_URL (Postgres) or embedded PGlite in VOUCH_DATA_DIR
(default ./.vouch/data; PGlite runs with fsync off: for trying Vouch and for tests, not for
production). Logs one JSON object per line on stdout. Traces go to an OTLP/HTTP collector with
OTEL_TRACES_EXPORTER=otlp and OTEL_EXPORTER_OTLP_ENDPOINT (off by default).

On PGlite, migrations are applied first. On Postgres, serve connects as the runtime role
(\`vouch migrate --runtime-role\` creates it): it does not migrate, refuses a schema that is
not current, and refuses a role that is a superuser or owns the ledger tables (such a role
can disable the append-only triggers).`,
  options: {
    port: { type: 'string', value: 'N', help: 'listen port (default PORT, else 8787; 0 picks a free port)' },
    host: { type: 'string', value: 'H', help: 'listen address (default HOST, else 127.0.0.1)' },
    migrate: {
      type: 'boolean',
      help: 'Postgres: apply migrations first (VOUCH_MIGRATE=1); needs the owner role',
    },
    workers: {
      type: 'string',
      value: 'N',
      help: 'Postgres: run N server processes on the one port (VOUCH_WORKERS; default 1),\nto use every core',
    },
    'allow-owner-role': {
      type: 'boolean',
      help: 'Postgres: serve as a superuser or table owner anyway, and log that\n(VOUCH_ALLOW_OWNER_ROLE=1); for development, not for production',
    },
  },
  footer: `Verifiers: VOUCH_CONFIG names a vouch.config.json (or .ts); else ./vouch.config.json is
used when it exists. Every verifier and its options are validated at startup.

On a fresh install the first admin key is printed once on stderr, or taken from
VOUCH_ADMIN_KEY. SIGTERM/SIGINT stop gracefully: no new requests, in-flight ones finish,
pending appends commit, the database closes. With --workers N, the first process only
supervises: it stops every worker the same way, replaces one that dies, and exits 1 if a
worker did not stop cleanly; every log line then carries the pid of the process that wrote it.`,
  async action({ values }, io) {
    const env = {
      ...io.env,
      ...(values.port === undefined ? {} : { PORT: values.port }),
      ...(values.host === undefined ? {} : { HOST: values.host }),
      ...(values.migrate ? { VOUCH_MIGRATE: '1' } : {}),
    };
    const workers = workerCount(values.workers ?? io.env.VOUCH_WORKERS);
    const json = createJsonLogger((line) => io.out(line));
    const logger = workers > 1 ? withFields(json, { pid: process.pid }) : json;
    let config = serveConfig(env, io.cwd);
    const settings = await loadServerSettings({ file: config.verifierConfig, env });
    const stateDir = checkpointStatePath(settings.checkpoints.stateDir, config.database, io.cwd);
    config = { ...config, settings, ...(stateDir === undefined ? {} : { checkpointStateDir: stateDir }) };
    if (values['allow-owner-role'])
      config = { ...config, allowOwnerRole: true, allowOwnerRoleBy: '--allow-owner-role' };
    // Listen for SIGTERM/SIGINT before starting: a signal that arrives while the server
    // starts (or just after it says "listening") then stops it gracefully once it is up,
    // instead of killing the process with the default action.
    const stopping = io.stopRequested();
    if (workers > 1 && cluster.isPrimary) {
      return superviseWorkers({ count: workers, config, logger, stopping });
    }
    // Tracing (OTEL_TRACES_EXPORTER=otlp) in the process that serves, before its first request.
    const tracing = startTracing(env, { name: 'vouch-api' });
    if (tracing) logger.info('tracing on', { endpoint: tracing.endpoint, protocol: tracing.protocol });
    // A worker: the primary applied the migrations; a worker whose primary is gone stops too.
    if (cluster.isWorker) config = { ...config, migrate: false };
    const orphaned = cluster.isWorker
      ? new Promise<string>((resolve) => process.once('disconnect', () => resolve('disconnect')))
      : new Promise<string>(() => {});
    const server = await startServer({
      config,
      logger,
      announceAdminKey: (secret) =>
        io.err(
          `\nVouch created the first admin API key. It is shown this once and never logged; store it now:\n\n  ${secret}\n\nUse it as: Authorization: Bearer <key>. Issue more keys with POST /v1/keys.\n\n`,
        ),
    });
    const signal = await Promise.race([stopping, orphaned]);
    logger.info('signal received', { signal });
    await server.close();
    // The spans of the last requests are still buffered: export them before exiting.
    await tracing?.shutdown().catch((error) => logger.warn('tracing shutdown failed', { error }));
    return EXIT.OK;
  },
});
