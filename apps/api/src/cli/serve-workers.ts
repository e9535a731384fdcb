import cluster, { type Worker } from 'node:cluster';
import { migrate, openDatabase } from '@vouch/ledger';
import { ConfigError, type ServeConfig } from '../config';
import type { LogFields, Logger } from '../logger';
import { EXIT } from './io';

/** The most worker processes `--workers` takes: one per core is the point, a few more is a mistake. */
export const MAX_WORKERS = 64;

/** `--workers` (else `VOUCH_WORKERS`, else 1), checked. */
export function workerCount(raw: string | undefined): number {
  const text = raw?.trim();
  if (!text) return 1;
  const count = Number(text);
  if (!/^\d+$/.test(text) || count < 1 || count > MAX_WORKERS) {
    throw new ConfigError(`--workers ${text}: give a whole number from 1 to ${MAX_WORKERS}`);
  }
  return count;
}

/** Every line of `logger` with `fields` added: with several processes, each line says which one wrote it. */
export function withFields(logger: Logger, fields: LogFields): Logger {
  return {
    info: (message, more) => logger.info(message, { ...fields, ...more }),
    warn: (message, more) => logger.warn(message, { ...fields, ...more }),
    error: (message, more) => logger.error(message, { ...fields, ...more }),
  };
}

/**
 * The primary of `vouch serve --workers N`: fork N workers that each run the whole server
 * (node:cluster shares the listening socket; connections are dealt out round-robin), and stop
 * them all on SIGTERM/SIGINT. Nothing of the ledger lives here: the chain of each log stays
 * linear across processes because appends are serialized in Postgres (an advisory lock per
 * log), never in process memory. Postgres only: PGlite is embedded in one process.
 *
 * A worker that dies before every worker listens stops the start (the same failure would
 * repeat); one that dies later is replaced. Migrations (`--migrate`) run here, once, before
 * any worker starts.
 */
export async function superviseWorkers(options: {
  count: number;
  config: ServeConfig;
  logger: Logger;
  stopping: Promise<string>;
}): Promise<number> {
  const { count, config, logger } = options;
  if (config.database.kind !== 'postgres') {
    throw new ConfigError(
      '--workers needs Postgres (DATABASE_URL): the embedded PGlite lives inside one process, so it cannot be shared by workers',
    );
  }
  if (config.migrate) {
    const database = await openDatabase({ url: config.database.url });
    try {
      await migrate(database);
    } finally {
      await database.close();
    }
  }
  let stopping = false;
  let ready = false;
  let failed: ((error: Error) => void) | undefined;
  const listening = new Set<number>();
  /** Each live worker's exit: whether it stopped cleanly. */
  const exits = new Map<Worker, Promise<boolean>>();

  const fork = () => {
    const worker = cluster.fork();
    worker.once('listening', () => {
      listening.add(worker.process.pid!);
      if (!ready && listening.size === count) {
        ready = true;
        logger.info('workers listening', { workers: [...listening] });
      }
    });
    const exited = new Promise<boolean>((resolve) => {
      worker.once('exit', (code, signal) => {
        exits.delete(worker);
        listening.delete(worker.process.pid!);
        resolve(code === 0);
        if (stopping) return;
        logger.error('worker exited', { worker: worker.process.pid, code, signal });
        if (ready) fork();
        else
          failed?.(
            new Error(`a worker exited (code ${code}) before every worker was listening; its log says why`),
          );
      });
    });
    exits.set(worker, exited);
  };
  const stopAll = async () => {
    stopping = true;
    const pending = [...exits.entries()];
    for (const [worker] of pending) worker.process.kill('SIGTERM');
    return (await Promise.all(pending.map(([, exited]) => exited))).every(Boolean);
  };

  for (let i = 0; i < count; i++) fork();
  const startFailed = new Promise<never>((_, reject) => {
    failed = reject;
  });
  try {
    const signal = await Promise.race([options.stopping, startFailed]);
    logger.info('signal received', { signal, workers: exits.size });
  } catch (error) {
    await stopAll();
    throw error;
  }
  const clean = await stopAll();
  logger.info('stopped', {});
  return clean ? EXIT.OK : EXIT.BROKEN;
}
