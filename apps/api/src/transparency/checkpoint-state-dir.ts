import { resolve } from 'node:path';
import { defaultCheckpointStateDir } from '@vouch/ledger';
import type { DatabaseTarget } from '../config';

/**
 * Where the last checkpoint signed per log is kept outside the database: the setting
 * `server.checkpoints.stateDir` (`VOUCH_CHECKPOINT_STATE_DIR`), resolved against `cwd`; else,
 * on PGlite, `<data dir>.checkpoints` beside the data directory (not inside it: a copy of the
 * data directory is a backup, and would bring the old state back with it); else (Postgres)
 * none, and a restored backup goes unnoticed by the server.
 */
export function checkpointStatePath(
  stateDir: string | undefined,
  target: DatabaseTarget,
  cwd: string,
): string | undefined {
  if (stateDir !== undefined) return resolve(cwd, stateDir);
  return target.kind === 'pglite' ? defaultCheckpointStateDir(target.dataDir) : undefined;
}
