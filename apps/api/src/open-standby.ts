import {
  createLedger,
  createRecords,
  type Database,
  isHotStandby,
  type Ledger,
  openDatabase,
} from '@vouch/ledger';
import type { ServeConfig } from './config';
import { ConfigError } from './config-error';
import type { Logger } from './logger';
import { type ReadRouter, standbyReads } from './read-routing';

/** The standby's database and the router that sends reads to it. */
export interface OpenStandby {
  database: Database;
  reads: ReadRouter;
}

/**
 * Open `DATABASE_READ_URL` read-only and route reads to it. The server must be a hot standby
 * (`pg_is_in_recovery()`), checked once at start: a URL that points at another primary by
 * mistake would serve data the primary never wrote. Past the start, a standby that stops
 * answering only sends reads to the primary.
 */
export async function openStandby(options: {
  config: ServeConfig;
  primary: { ledger: Ledger };
  logger: Logger;
}): Promise<OpenStandby | undefined> {
  const { config, primary, logger } = options;
  const standby = config.standby;
  if (!standby || config.database.kind !== 'postgres') return undefined;
  const database = await openDatabase({
    url: standby.url,
    readOnly: true,
    ...(config.database.connectTimeoutMs === undefined
      ? {}
      : { connectTimeoutMs: config.database.connectTimeoutMs }),
    ...(config.database.statementTimeoutMs === undefined
      ? {}
      : { statementTimeoutMs: config.database.statementTimeoutMs }),
  });
  try {
    if (!(await isHotStandby(database))) {
      throw new ConfigError(
        `DATABASE_READ_URL (${database.location}) is not a hot standby (pg_is_in_recovery() is false): point it at a streaming replica of DATABASE_URL`,
      );
    }
  } catch (error) {
    await database.close().catch(() => {});
    throw error;
  }
  const unknownOutcomeSettleSeconds = config.unknownOutcomeSettleSeconds;
  // Never appended to: its only use is the ledger's reads (and the records service's) on the standby.
  const ledger = createLedger(database, { integrityAlarm: primary.ledger.integrityAlarm });
  const reads = standbyReads({
    primary: {
      ledger: primary.ledger,
      records: createRecords(primary.ledger, { unknownOutcomeSettleSeconds }),
    },
    standby: { ledger, records: createRecords(ledger, { unknownOutcomeSettleSeconds }) },
    maxWaitMs: standby.maxWaitMs,
    logger,
  });
  logger.info('reads on a standby', { location: database.location, max_wait_ms: standby.maxWaitMs });
  return { database, reads };
}
