import {
  type AppendHook,
  checkpointStateDir,
  createCheckpointer,
  type Database,
  type IntegrityAlarm,
  logOrigin,
  merkleAppendHook,
  type StoredCheckpoint,
} from '@vouch/ledger';
import type { DatabaseTarget } from '../config';
import { type Logger, summarizeError } from '../logger';
import type { TransparencyConfig } from './config';
import { type LogKeys, loadLogKeys } from './log-keys';

/** Checkpoint signing for a running server. */
export interface ServerCheckpoints {
  /** How checkpoints are signed, or null when no key is configured (Postgres without one). */
  keys: LogKeys | null;
  /** Pass as `createLedger(database, { afterAppend })`: Merkle storage, then the scheduler's note. */
  afterAppend: AppendHook[];
  /** Witnesses cosigned a checkpoint: copy their lines into the checkpoint state. */
  cosigned(log: string, treeSize: number): Promise<void>;
  /** Sign what is pending and stop; call after the ledger has drained its appends. */
  close(): Promise<void>;
}

/**
 * Load the log signing keys and start the checkpoint scheduler: after appends, each log's
 * head is signed at most once per `intervalMs` and kept in `checkpoints`, and in the state
 * directory `stateDir` outside the database. Before it resolves, every log of that state is
 * compared with the database: one the database is behind (a restored backup) or disagrees
 * with raises `ROLLBACK_DETECTED`, and then nothing is signed and `/readyz` answers 503 (the
 * server still starts, so an operator can read and export what it holds). Without a key
 * (Postgres and no `VOUCH_LOG_SIGNING_KEY`) the Merkle tree is still kept, so proofs work,
 * but nothing is signed: a warning says so once. Throws `ConfigError` for bad settings.
 */
export async function startCheckpoints(options: {
  database: Database;
  config: TransparencyConfig;
  target: DatabaseTarget;
  logger: Logger;
  /** The server's one alarm: raised when the tree about to be signed does not match its events. */
  integrityAlarm?: IntegrityAlarm;
  /** Told of every checkpoint stored (metrics). */
  onCheckpoint?: (checkpoint: StoredCheckpoint) => void;
  /** Where the last checkpoint signed per log is kept outside the database (`checkpointStatePath`). */
  stateDir?: string | undefined;
}): Promise<ServerCheckpoints> {
  const { logger } = options;
  const keys = loadLogKeys(options.config, options.target);
  if (keys === null) {
    logger.warn('checkpoints disabled', {
      reason: 'no log signing key: set VOUCH_LOG_SIGNING_KEY (see docs/transparency.md)',
    });
    return { keys, afterAppend: [merkleAppendHook], cosigned: async () => {}, close: async () => {} };
  }
  logger.info('checkpoints enabled', {
    origin: logOrigin(keys.originPrefix, '<log>'),
    // Each log's own key is named after its origin; `vouch keys log-public --log L` prints it.
    verifier_keys: keys.sharedVerifierKeys,
    shared_signature: keys.sharedSignature,
    key_source: keys.source.kind === 'env' ? 'VOUCH_LOG_SIGNING_KEY' : keys.source.path,
    ...(keys.source.kind === 'file' && keys.source.created ? { key_created: true } : {}),
    interval_ms: options.config.intervalMs,
    state_dir: options.stateDir ?? null,
  });
  if (options.stateDir === undefined) {
    logger.warn('checkpoint state not kept outside the database', {
      reason:
        'a restored older backup would go unnoticed: set server.checkpoints.stateDir or VOUCH_CHECKPOINT_STATE_DIR (docs/operations.md#restoring-a-backup)',
    });
  }
  const checkpointer = createCheckpointer({
    database: options.database,
    origin: (log) => logOrigin(keys.originPrefix, log),
    signers: keys.signersFor,
    earlierKeys: () => keys.sharedVerifierKeys,
    intervalMs: options.config.intervalMs,
    ...(options.integrityAlarm ? { integrityAlarm: options.integrityAlarm } : {}),
    ...(options.onCheckpoint ? { onCheckpoint: options.onCheckpoint } : {}),
    ...(options.stateDir === undefined ? {} : { state: checkpointStateDir(options.stateDir) }),
    onError: (error, log) =>
      logger.error('checkpoint signing failed', {
        log,
        error: summarizeError(error),
      }),
  });
  // Before serving: a database behind (or beside) what was signed raises the alarm now, and
  // its log line says what to do; the server starts not ready and signs nothing.
  await checkpointer.checkSavedState();
  // Logs appended while signing was off (no key, or a process that stopped before its timer
  // fired) would otherwise wait for their next append, and a witness's first `--init` would
  // find nothing to trust: sign their heads now, beside start-up rather than before it (the
  // first check of an unsigned log reads it whole once).
  const caughtUp = checkpointer
    .catchUp()
    .then((logs) => {
      if (logs.length > 0) logger.info('signing unsigned log heads', { logs: logs.length });
    })
    .catch((error: unknown) => logger.error('checkpoint catch-up failed', { error: summarizeError(error) }));
  return {
    keys,
    // The ledger runs hooks in order: the tree is stored before the scheduler hears of it.
    afterAppend: [merkleAppendHook, checkpointer.afterAppend],
    cosigned: checkpointer.cosigned,
    close: async () => {
      await caughtUp;
      await checkpointer.close();
    },
  };
}
