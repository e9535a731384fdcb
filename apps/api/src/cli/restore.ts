import { existsSync, readFileSync } from 'node:fs';
import { userInfo } from 'node:os';
import { resolve } from 'node:path';
import {
  type CheckpointState,
  checkpointStateDir,
  compareWithSaved,
  type Database,
  keptCheckpointOf,
  migrationStatus,
  type SavedCheckpoint,
  type SavedComparison,
} from '@vouch/ledger';
import { describeTarget, serveConfig } from '../config';
import { openTarget } from '../open-target';
import { loadServerSettings } from '../settings/server-settings';
import { checkpointStatePath } from '../transparency/checkpoint-state-dir';
import { defineCommand, defineGroup } from './command';
import { CliError, type CliIo, EXIT } from './io';

/** The database and the checkpoint state `vouch serve` would use, from the same settings. */
async function openRestored(io: CliIo): Promise<{ database: Database; state: CheckpointState | null }> {
  const config = serveConfig(io.env, io.cwd);
  const settings = await loadServerSettings({ file: config.verifierConfig, env: io.env });
  const dir = checkpointStatePath(settings.checkpoints.stateDir, config.database, io.cwd);
  if (config.database.kind === 'pglite' && !existsSync(config.database.dataDir)) {
    throw new CliError(
      `no data directory at ${config.database.dataDir}: set VOUCH_DATA_DIR (or DATABASE_URL) to where the restored ledger is`,
    );
  }
  const database = await openTarget(config.database);
  try {
    if ((await migrationStatus(database)).applied === 0) {
      throw new CliError(`${describeTarget(config.database)} has no Vouch schema: nothing to check`);
    }
  } catch (error) {
    await database.close().catch(() => {});
    throw error;
  }
  return { database, state: dir === undefined ? null : checkpointStateDir(dir) };
}

/** The saved checkpoints to compare: the state directory's (or `--log`'s), or the one `--checkpoint` file. */
async function savedCheckpoints(
  state: CheckpointState | null,
  values: { log?: string; checkpoint?: string },
  cwd: string,
): Promise<SavedCheckpoint[]> {
  if (values.checkpoint !== undefined && values.log !== undefined) {
    const path = resolve(cwd, values.checkpoint);
    let text: string;
    try {
      text = readFileSync(path, 'utf8');
    } catch {
      throw new CliError(`cannot read ${path}`);
    }
    const kept = keptCheckpointOf(text, values.log, path);
    if (kept === null) throw new CliError(`${path} holds no checkpoint of log ${values.log}`);
    return [kept];
  }
  if (state === null) {
    throw new CliError(
      'no checkpoint state is kept here (Postgres without server.checkpoints.stateDir / VOUCH_CHECKPOINT_STATE_DIR): pass --checkpoint FILE --log L',
    );
  }
  const logs = values.log === undefined ? await state.logs() : [values.log];
  const saved: SavedCheckpoint[] = [];
  for (const log of logs) {
    const read = await state.read(log).catch((error: Error) => {
      throw new CliError(error.message);
    });
    if (read !== null) saved.push(read);
    else if (values.log !== undefined)
      throw new CliError(`no checkpoint of log ${log} is kept in ${state.dir}`);
  }
  return saved;
}

function describe(result: SavedComparison): string {
  const at = `the checkpoint at ${result.saved.treeSize} (${result.saved.path})`;
  if (result.finding === null) {
    return `log ${result.log}: OK — the database (head ${result.head}) reaches and agrees with ${at}\n`;
  }
  return `log ${result.log}: ROLLBACK_DETECTED — seq ${result.finding.seq} [${result.finding.table}] ${result.finding.message}\n`;
}

async function compareAll(io: CliIo, values: { log?: string; checkpoint?: string }) {
  if (values.checkpoint !== undefined && values.log === undefined) {
    throw new CliError('--checkpoint needs --log: a checkpoint is of one log');
  }
  const { database, state } = await openRestored(io);
  try {
    const saved = await savedCheckpoints(state, values, io.cwd);
    const results: SavedComparison[] = [];
    for (const one of saved) results.push(await compareWithSaved(database, one));
    return { state, results };
  } finally {
    await database.close().catch(() => {});
  }
}

const OPTIONS = {
  log: { type: 'string', value: 'L', help: 'only log L' },
  checkpoint: {
    type: 'string',
    value: 'FILE',
    help: "with --log: compare with the checkpoint in FILE (a signed note, e.g. a\nwitness's trusted file, or a state file) instead of the saved state",
  },
  json: { type: 'boolean', help: 'print the results as JSON' },
} as const;

/** `vouch restore check`: exit 0 every saved checkpoint agrees, 1 a rollback, 2 usage or connection error. */
export const restoreCheckCommand = defineCommand({
  name: 'vouch restore check',
  summary: 'compare a (restored) database with the last checkpoints signed',
  description: `Compare the database (DATABASE_URL, or the PGlite data directory) with the last checkpoint
the server signed for each log, as kept outside the database in the checkpoint state
directory (server.checkpoints.stateDir / VOUCH_CHECKPOINT_STATE_DIR; default beside a PGlite
data directory), or with one checkpoint you kept (--checkpoint FILE --log L). A database
restored from an older backup ends before that checkpoint, or holds another history at its
size: ROLLBACK_DETECTED. Read only. Run it after every restore, before \`vouch serve\`.`,
  options: OPTIONS,
  footer: `Exit 0: the database reaches and agrees with every checkpoint compared. Exit 1:
ROLLBACK_DETECTED for at least one log (see "Restoring a backup" in docs/operations.md, then
\`vouch restore accept\`). Exit 2: usage, configuration or connection error.`,
  async action({ values }, io) {
    const { results } = await compareAll(io, values);
    if (values.json)
      io.out(`${JSON.stringify({ ok: results.every((r) => !r.finding), results }, null, 2)}\n`);
    else if (results.length === 0)
      io.out('no checkpoint is kept in the checkpoint state: nothing to compare\n');
    else for (const result of results) io.out(describe(result));
    return results.some((r) => r.finding !== null) ? EXIT.BROKEN : EXIT.OK;
  },
});

/** `vouch restore accept --reason TEXT`: supersede the saved checkpoints the database no longer agrees with. */
export const restoreAcceptCommand = defineCommand({
  name: 'vouch restore accept',
  summary: 'accept a deliberate restore: the server signs the restored history',
  description: `Accept that the database was restored on purpose: every saved checkpoint it is behind or
disagrees with (what \`vouch restore check\` reports) is moved to superseded/ in the
checkpoint state directory, beside a record of when, by whom and why (--reason). The
server then starts without the alarm and signs the restored history: checkpoints at sizes
it had signed before with other roots. Witnesses that hold a newer checkpoint will report
FORKED; tell them first (docs/operations.md, "Restoring a backup"). Stop the server first.`,
  options: {
    log: { type: 'string', value: 'L', help: 'only log L' },
    reason: {
      type: 'string',
      value: 'TEXT',
      required: true,
      help: 'why the restore is accepted (kept in the record)',
    },
  },
  footer: 'Exit 0: accepted (or nothing to accept). Exit 2: usage, configuration or connection error.',
  async action({ values }, io) {
    const { state, results } = await compareAll(io, values.log === undefined ? {} : { log: values.log });
    const rolledBack = results.filter((r) => r.finding !== null);
    if (rolledBack.length === 0) {
      io.out('the database agrees with every saved checkpoint: nothing to accept\n');
      return EXIT.OK;
    }
    for (const result of rolledBack) {
      const moved = await state!.supersede(result.log, {
        accepted_at: new Date().toISOString(),
        accepted_by: userInfo().username,
        reason: values.reason,
        saved: {
          tree_size: result.saved.treeSize,
          root_hash: result.saved.rootHash,
          note: result.saved.note,
        },
        database_head: result.head,
        finding: result.finding,
      });
      io.out(
        `log ${result.log}: restore accepted; the checkpoint at ${result.saved.treeSize} is superseded (${moved})\n`,
      );
      io.err(
        `vouch restore accept: log ${result.log} re-anchored by ${userInfo().username}: ${values.reason}\n`,
      );
    }
    return EXIT.OK;
  },
});

/** `vouch restore …`. */
export const restoreCommand = defineGroup({
  name: 'vouch restore',
  description:
    'Check a restored database against the last checkpoints signed, and accept a deliberate restore.',
  commands: [restoreCheckCommand, restoreAcceptCommand],
});
