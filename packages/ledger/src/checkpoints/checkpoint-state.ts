import { randomBytes } from 'node:crypto';
import { closeSync, fsyncSync, openSync, renameSync, rmSync, writeSync } from 'node:fs';
import { mkdir, readdir, readFile, rename } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { readCheckpointUnverified } from '@vouch/audit';
import { LedgerError } from '../errors';

// The last checkpoint this server signed for each log, kept OUTSIDE the database: a database
// restored from an older backup (or cut back and written again) holds an older head and older
// checkpoint rows, and agrees with itself; only something the restore did not bring back can
// say it is older than what was already signed. Keep this directory out of database backups.

/** The format name written into every state file. */
export const CHECKPOINT_STATE_FORMAT = 'vouch-checkpoint-state/v1';

/** The last checkpoint of one log this server signed, as kept in the state directory. */
export interface SavedCheckpoint {
  log: string;
  /** From the signed note itself (never from the file's other fields). */
  treeSize: number;
  /** Lowercase hex of the root the note states. */
  rootHash: string;
  /** The signed note, exactly as signed. */
  note: string;
  /** Witness cosignature lines collected for it so far. */
  cosignatures: string[];
  savedAt: string;
  /** The file it was read from. */
  path: string;
}

/** Per-log files of the last signed checkpoint, in one directory. */
export interface CheckpointState {
  readonly dir: string;
  /** The saved checkpoint of `log`, or null when none was saved. */
  read(log: string): Promise<SavedCheckpoint | null>;
  /** Every log with a saved checkpoint. */
  logs(): Promise<string[]>;
  /** Keep `checkpoint` as the log's last, atomically: a crash leaves the old file or the new one. */
  write(checkpoint: { log: string; note: string; cosignatures?: readonly string[] }): Promise<void>;
  /**
   * Move the log's file into `superseded/` with why (an operator accepted a restore): the
   * next signature starts a new one. Returns where it went, or null when there was none.
   */
  supersede(log: string, record: Record<string, unknown>): Promise<string | null>;
}

/** The state directory kept beside a PGlite data directory (never inside it: a copy of the directory is a backup). */
export function defaultCheckpointStateDir(dataDir: string): string {
  return `${dataDir.replace(/[/\\]+$/, '')}.checkpoints`;
}

const fileName = (log: string) => `${encodeURIComponent(log)}.json`;

/** Open (creating on first write) the checkpoint state directory `dir`. */
export function checkpointStateDir(dir: string): CheckpointState {
  const pathOf = (log: string) => join(dir, fileName(log));
  return {
    dir,
    async read(log) {
      const path = pathOf(log);
      let text: string;
      try {
        text = await readFile(path, 'utf8');
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null;
        throw error;
      }
      return parseSaved(text, log, path);
    },
    async logs() {
      const names = await readdir(dir).catch((error: NodeJS.ErrnoException) => {
        if (error.code === 'ENOENT') return [] as string[];
        throw error;
      });
      return names.filter((n) => n.endsWith('.json')).map((n) => decodeURIComponent(n.slice(0, -5)));
    },
    async write({ log, note, cosignatures = [] }) {
      const stated = readCheckpointUnverified(note);
      if (stated === undefined) throw new Error(`not a checkpoint note: not saving log ${log}'s state`);
      const body = {
        format: CHECKPOINT_STATE_FORMAT,
        log,
        tree_size: stated.treeSize,
        root_hash: Buffer.from(stated.rootHash).toString('hex'),
        note,
        cosignatures,
        saved_at: new Date().toISOString(),
      };
      await mkdir(dir, { recursive: true });
      writeAtomically(pathOf(log), `${JSON.stringify(body, null, 2)}\n`);
    },
    async supersede(log, record) {
      const from = pathOf(log);
      const saved = await this.read(log);
      if (saved === null) return null;
      const stamp = new Date().toISOString().replace(/[:.]/g, '-');
      const to = join(dir, 'superseded', `${stamp}-${fileName(log)}`);
      await mkdir(join(dir, 'superseded'), { recursive: true });
      writeAtomically(`${to}.accepted`, `${JSON.stringify({ ...record, log, superseded: to }, null, 2)}\n`);
      await rename(from, to);
      return to;
    },
  };
}

/**
 * A checkpoint of `log` someone kept (`vouch restore check --checkpoint`): a state file, or
 * a signed note as a witness keeps it. Null for text that is neither, or a note of another
 * log (its origin must end in `/<log>`).
 */
export function keptCheckpointOf(text: string, log: string, path: string): SavedCheckpoint | null {
  if (text.trimStart().startsWith('{')) {
    try {
      return parseSaved(text, log, path);
    } catch {
      return null;
    }
  }
  const stated = readCheckpointUnverified(text);
  if (stated === undefined || !stated.origin.endsWith(`/${log}`)) return null;
  const rootHash = Buffer.from(stated.rootHash).toString('hex');
  return { log, treeSize: stated.treeSize, rootHash, note: text, cosignatures: [], savedAt: '', path };
}

/** Write temp, fsync, rename over, fsync the directory. */
function writeAtomically(path: string, text: string): void {
  const temporary = `${path}.${process.pid}.${randomBytes(6).toString('hex')}.tmp`;
  const fd = openSync(temporary, 'wx', 0o600);
  try {
    writeSync(fd, text);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  try {
    renameSync(temporary, path);
  } catch (error) {
    rmSync(temporary, { force: true });
    throw error;
  }
  syncDirectory(dirname(path));
}

/** The rename is durable once its directory is synced (not possible on every platform). */
function syncDirectory(dir: string): void {
  let fd: number | undefined;
  try {
    fd = openSync(dir, 'r');
    fsyncSync(fd);
  } catch {
    // Windows cannot open a directory: the rename is as durable as the platform makes it.
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}

/**
 * A state file as written by `write`. Its size and root are taken from the note it holds; a
 * file that does not parse, or names another log, is refused (`INTEGRITY_ALARM`): a state
 * nobody can read must stop signing as surely as a state that disagrees.
 */
function parseSaved(text: string, log: string, path: string): SavedCheckpoint {
  const invalid = (why: string) =>
    new LedgerError('INTEGRITY_ALARM', `the checkpoint state file ${path} ${why}`, {
      details: { code: 'ROLLBACK_DETECTED', log, table: 'checkpoint_state' },
    });
  let body: Record<string, unknown>;
  try {
    body = JSON.parse(text) as Record<string, unknown>;
  } catch {
    throw invalid('is not JSON');
  }
  if (body.format !== CHECKPOINT_STATE_FORMAT || body.log !== log || typeof body.note !== 'string') {
    throw invalid(`is not a ${CHECKPOINT_STATE_FORMAT} file of log ${log}`);
  }
  const stated = readCheckpointUnverified(body.note);
  if (stated === undefined) throw invalid('holds no checkpoint note');
  const cosignatures = Array.isArray(body.cosignatures)
    ? body.cosignatures.filter((line): line is string => typeof line === 'string')
    : [];
  return {
    log,
    treeSize: stated.treeSize,
    rootHash: Buffer.from(stated.rootHash).toString('hex'),
    note: body.note,
    cosignatures,
    savedAt: typeof body.saved_at === 'string' ? body.saved_at : '',
    path,
  };
}
