import { existsSync } from 'node:fs';
import { encodeBundle, type StoredEvent } from '@vouch/audit';
import {
  createLedger,
  type Database,
  type Ledger,
  latestCheckpoint,
  logExists,
  logOrigin,
  migrationStatus,
  redactedAfter,
  requireLog,
  type StoredCheckpoint,
  signLogCheckpoint,
} from '@vouch/ledger';
import { databaseTarget, describeTarget } from '../config';
import { openTarget } from '../open-target';
import { LogIdSchema } from '../schemas/common';
import { transparencyConfig } from '../transparency/config';
import { loadLogKeys } from '../transparency/log-keys';
import { SYSTEM_LOG, systemPartLines } from '../transparency/system-part';
import { defineCommand } from './command';
import { CliError, type CliIo, EXIT } from './io';

/** `vouch export`: exit 0 with the bundle on stdout, 2 for usage or connection errors or an unknown log. */
export const exportCommand = defineCommand({
  name: 'vouch export',
  synopsis: 'vouch export --log L > bundle.jsonl',
  description: `Write a self-contained audit bundle of log L to stdout (format vouch-bundle/2: a header,
every event as one JSON line, then a signed checkpoint at exactly the exported size; see
docs/transparency.md). An auditor verifies it offline with
\`vouch verify --bundle FILE --public-key KEY\`.

The checkpoint is signed at the current head with the log signing key (VOUCH_LOG_SIGNING_KEY,
or the PGlite data directory's key). Without a key, the bundle ends at the latest stored
checkpoint. Reads straight from the database (DATABASE_URL or VOUCH_DATA_DIR) with constant
memory; progress goes to stderr.`,
  options: {
    log: {
      type: 'string',
      value: 'L',
      required: true,
      help: 'the log to export (required; a log id with no events is an error, exit 2)',
    },
  },
  async action({ values }, io) {
    const log = values.log;
    if (log === undefined) throw new CliError('--log L is required: a bundle holds one log');
    if (!LogIdSchema.safeParse(log).success) throw new CliError(`--log ${log} is not a log id`);
    const target = databaseTarget(io.env, io.cwd);
    const keys = loadLogKeys(transparencyConfig(io.env), target);
    if (target.kind === 'pglite' && !existsSync(target.dataDir)) {
      throw new CliError(`no data directory at ${target.dataDir}: set VOUCH_DATA_DIR (or DATABASE_URL)`);
    }
    let database: Database | undefined;
    let ledger: Ledger | undefined;
    try {
      database = await openTarget(target);
      const { applied } = await migrationStatus(database);
      if (applied === 0) throw new CliError(`${describeTarget(target)} has no Vouch schema`);
      // Before anything is signed: a typo must not come back as a signed empty log.
      await requireLog(database, log);
      ledger = createLedger(database);
      const checkpoint = await checkpointCoveringRedactions(
        io,
        database,
        log,
        keys,
        await checkpointToExport(io, database, log, keys),
      );
      // Signed after the log's: the authors' keys as of every record the bundle holds.
      const system = log === SYSTEM_LOG ? null : await systemCheckpoint(io, database, keys);
      const systemPart = system === null ? undefined : await systemPartLines(ledger, system);
      await writeBundle(io, log, checkpoint, ledger.streamEvents(log), systemPart);
      return EXIT.OK;
    } finally {
      await ledger?.close().catch(() => {});
      await database?.close().catch(() => {});
    }
  },
});

/** Write the bundle of `log` up to `checkpoint` to stdout in chunks, with progress on stderr. */
async function writeBundle(
  io: CliIo,
  log: string,
  checkpoint: StoredCheckpoint,
  stream: AsyncIterable<StoredEvent>,
  system: string[] | undefined,
): Promise<void> {
  const origin = checkpoint.note.slice(0, checkpoint.note.indexOf('\n'));
  let exported = 0;
  const progress = (done: boolean) => {
    if (io.interactive)
      io.err(`\rexporting log ${log}: ${exported.toLocaleString('en-US')} events${done ? '\n' : ''}`);
    else if (done || exported % PROGRESS_EVERY === 0) io.err(`exporting log ${log}: ${exported} events\n`);
  };
  const events = upTo(stream, checkpoint.treeSize, () => {
    exported++;
    if (exported % PROGRESS_EVERY === 0) progress(false);
  });
  let chunk = '';
  for await (const line of encodeBundle({
    log,
    origin,
    treeSize: checkpoint.treeSize,
    checkpoint: checkpoint.note,
    events,
    extra: { exportedAt: new Date().toISOString() },
    ...(system === undefined ? {} : { system }),
  })) {
    chunk += `${line}\n`;
    if (chunk.length >= CHUNK_CHARS) {
      io.out(chunk);
      chunk = '';
    }
  }
  io.out(chunk);
  if (exported !== checkpoint.treeSize) {
    // The chain has a gap or ends early: the bundle is written, and verify will say where.
    io.err(
      `vouch export: the log holds ${exported} of the ${checkpoint.treeSize} events its checkpoint covers\n`,
    );
  }
  progress(true);
}

/** Chunks written to stdout: big enough to be cheap, small enough to keep memory flat. */
const CHUNK_CHARS = 64 * 1024;
const PROGRESS_EVERY = 10_000;

/**
 * A checkpoint at the head when this process can sign one, otherwise the latest stored one:
 * the bundle then holds exactly the events that checkpoint covers.
 */
async function checkpointToExport(
  io: CliIo,
  database: Database,
  log: string,
  keys: ReturnType<typeof loadLogKeys>,
): Promise<StoredCheckpoint> {
  if (keys !== null) {
    return signLogCheckpoint(database, {
      log,
      origin: (l) => logOrigin(keys.originPrefix, l),
      signers: keys.signersFor,
      earlierKeys: () => keys.sharedVerifierKeys,
    });
  }
  const latest = await latestCheckpoint(database, log);
  if (latest === null) {
    throw new CliError(
      `log ${log} has no signed checkpoint, and no log signing key is configured to sign one (the default on Postgres): make a key with \`vouch keys log-new\`, set it as VOUCH_LOG_SIGNING_KEY for both \`vouch serve\` and \`vouch export\`, and give auditors its verifier key (\`vouch keys log-public\`)`,
    );
  }
  io.err(
    `vouch export: no log signing key here; exporting up to the latest checkpoint (${latest.treeSize} events)\n`,
  );
  return latest;
}

/**
 * The checkpoint of the `system` log a bundle carries the authors' keys up to (see
 * {@link checkpointToExport}); null, said on stderr, when there is none to carry.
 */
async function systemCheckpoint(
  io: CliIo,
  database: Database,
  keys: ReturnType<typeof loadLogKeys>,
): Promise<StoredCheckpoint | null> {
  if (
    !(await logExists(database, SYSTEM_LOG)) ||
    (keys === null && !(await latestCheckpoint(database, SYSTEM_LOG)))
  ) {
    io.err(
      'vouch export: the system log has no signed checkpoint: the bundle carries no signing keys, and its author signatures cannot be checked offline\n',
    );
    return null;
  }
  const signed = await checkpointToExport(io, database, SYSTEM_LOG, keys);
  return checkpointCoveringRedactions(io, database, SYSTEM_LOG, keys, signed);
}

/**
 * A checkpoint whose events include every redaction of them: a field erased by a redaction
 * event past the checkpoint would be in the bundle erased, without its authority. With a
 * key, sign again at the new head (a redaction may commit meanwhile: a few tries); without
 * one, say which events the verifier will report.
 */
async function checkpointCoveringRedactions(
  io: CliIo,
  database: Database,
  log: string,
  keys: ReturnType<typeof loadLogKeys>,
  first: StoredCheckpoint,
): Promise<StoredCheckpoint> {
  let checkpoint = first;
  for (let attempt = 0; attempt < 3; attempt++) {
    const redacted = await redactedAfter(database, log, checkpoint.treeSize);
    if (redacted.length === 0) return checkpoint;
    if (keys === null) {
      io.err(
        `vouch export: events ${redacted.join(', ')} had fields erased by redactions after the latest checkpoint; the bundle will report them REDACTION_UNAUTHORIZED until a newer checkpoint is signed (\`vouch serve\` does, or configure the log signing key here)\n`,
      );
      return checkpoint;
    }
    checkpoint = await checkpointToExport(io, database, log, keys);
  }
  return checkpoint;
}

/** The events with seq <= `last`, stopping the underlying stream there (appends may go on meanwhile). */
async function* upTo(
  events: AsyncIterable<StoredEvent>,
  last: number,
  onEvent: () => void,
): AsyncGenerator<StoredEvent> {
  if (last === 0) return;
  for await (const event of events) {
    if (event.seq > last) return;
    onEvent();
    yield event;
    if (event.seq === last) return;
  }
}
