import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { ChainHead } from '@vouch/audit';
import {
  type CheckpointKeys,
  createLedger,
  type Database,
  type LogVerificationReport,
  listLogs,
  logOrigin,
  migrationStatus,
  SIGNING_KEY_FILE,
} from '@vouch/ledger';
import { type DatabaseTarget, databaseTarget, describeTarget } from '../config';
import { openTarget } from '../open-target';
import { checkpointKeysFor } from '../transparency/checkpoint-keys';
import { transparencyConfig } from '../transparency/config';
import { loadLogKeys } from '../transparency/log-keys';
import { type Command, defineCommand, type OptionSpecs, type OptionValues } from './command';
import { CliError, type CliIo, EXIT } from './io';
import { redactionLines } from './redaction-lines';
import { JSON_OPTION, parseVerifierKeys, verifyBundleCommand } from './verify-bundle';
import { verifySinceCommand } from './verify-since';

function parseHead(text: string): ChainHead {
  const match = /^([1-9][0-9]{0,15}):([0-9a-f]{64})$/.exec(text);
  if (!match)
    throw new CliError(
      `--expect-head must be SEQ:HASH (a seq and a 64-digit lowercase hex hash), got ${text}`,
    );
  return { seq: Number(match[1]), hash: match[2]! };
}

const count = (n: number) => n.toLocaleString('en-US');

/**
 * The log key to check checkpoint signatures with: `--public-key`, else the key this
 * deployment signs with (read, never created), else none.
 */
function checkpointKeysOf(
  values: { 'public-key'?: string[]; origin?: string },
  io: CliIo,
  target: DatabaseTarget,
): ((log: string) => CheckpointKeys) | undefined {
  if (values['public-key'] !== undefined) {
    const verifiers = parseVerifierKeys(values['public-key']);
    const prefix = values.origin;
    return (log) => ({ verifiers, ...(prefix === undefined ? {} : { origin: logOrigin(prefix, log) }) });
  }
  if (values.origin !== undefined) throw new CliError('--origin needs --public-key');
  const config = transparencyConfig(io.env);
  const keyFile = target.kind === 'pglite' && existsSync(join(target.dataDir, SIGNING_KEY_FILE));
  if (config.signingKey === undefined && !keyFile) return undefined;
  const keys = loadLogKeys(config, target);
  return keys === null ? undefined : checkpointKeysFor(keys);
}

function printHuman(io: CliIo, report: LogVerificationReport): void {
  const head = report.head ? `${report.head.seq}:${report.head.hash}` : '(empty)';
  if (report.ok) {
    io.out(`log ${report.log}: INTACT — ${count(report.checked)} events verified, head ${head}\n`);
  } else {
    const problems = report.failures.length + (report.failuresOmitted ?? 0);
    io.out(`log ${report.log}: BROKEN — ${count(problems)} problem(s) in ${count(report.checked)} events\n`);
    for (const failure of report.failures) {
      const table = typeof failure.table === 'string' ? ` [${failure.table}]` : '';
      io.out(`  seq ${failure.seq}  ${failure.code}${table}  ${failure.message}\n`);
    }
    if (report.failuresOmitted) io.out(`  … and ${count(report.failuresOmitted)} more not listed\n`);
  }
  io.out(redactionLines(report.redactions));
  const { checkpoints } = report;
  const signatures =
    checkpoints.checked === 0
      ? ''
      : checkpoints.signatures === 'verified'
        ? ', signatures checked'
        : ', signatures NOT checked (no log key here: pass --public-key, or set VOUCH_LOG_SIGNING_KEY)';
  io.out(
    `  compared with the events: ${count(report.merkle.nodes)} Merkle nodes, ${count(checkpoints.checked)} checkpoint(s)${signatures}\n`,
  );
  if (report.writers === 'not_checked') {
    io.out(
      '  record writers NOT checked (the system log holds no API key: the ledger is used without the API)\n',
    );
  }
  const { signed, unsigned } = report.authors;
  if (signed + unsigned > 0) {
    io.out(
      `  author signatures: ${count(signed)} record(s) signed by their author, ${count(unsigned)} unsigned${unsigned > 0 ? ' (written before their author enrolled a key, or by an author who need not sign)' : ''}\n`,
    );
  }
  if (report.policy === 'not_pinned') {
    io.out(
      '  decision sources NOT checked against a pinned policy (no policy.configured event before every decision: an older server, or the ledger used without the API)\n',
    );
  }
}

const DATABASE_OPTIONS = {
  log: {
    type: 'string',
    value: 'L',
    help: 'verify only log L (a log id with no events is an error, exit 2)',
  },
  'expect-head': {
    type: 'string',
    value: 'SEQ:HASH',
    help: 'a head you trusted earlier: a log that ends before it is TRUNCATED,\none with another event at its seq is REWRITTEN',
  },
  'public-key': {
    type: 'string',
    value: 'KEY',
    multiple: true,
    help: "the log verifier key <name>+<id>+<base64> to check checkpoint\nsignatures with (repeatable). Default: the configured log key\n(VOUCH_LOG_SIGNING_KEY, or the PGlite data directory's key); with\nneither, the report says the signatures were NOT checked",
  },
  origin: {
    type: 'string',
    value: 'PREFIX',
    help: 'with --public-key: checkpoints must name the origin PREFIX/<log>',
  },
  json: JSON_OPTION,
} satisfies OptionSpecs;

/** `vouch verify` against the database: exit 0 intact, 1 broken, 2 usage or connection error. */
const verifyDatabaseCommand = defineCommand({
  name: 'vouch verify',
  description: `Verify one log (--log) or every log straight from the database (DATABASE_URL, or the PGlite
data directory VOUCH_DATA_DIR, default ./.vouch/data): the hash chain, the Merkle tree
recomputed from the events against every stored node, every stored checkpoint against the
root recomputed at its size, and the record tables.`,
  options: DATABASE_OPTIONS,
  footer: `Exit 0: intact. Exit 1: broken (every break is listed with its seq). Exit 2: usage or
connection error, or an unknown log.

Auditors, without trusting the server (docs/transparency.md):

${verifyBundleCommand.usage.split('\n')[0]}
${verifySinceCommand.usage.split('\n')[0]}`,
  action: ({ values }, io) => verifyDatabase(values, io),
});

/**
 * `vouch verify`: the database, or with `--bundle` a bundle offline, or with `--since` a log
 * since the checkpoint you trusted (see their usage texts).
 */
export const verifyCommand: Command = {
  ...verifyDatabaseCommand,
  run(args, io) {
    if (args.some((arg) => /^--since(=|$)/.test(arg))) return verifySinceCommand.run(args, io);
    if (args.some((arg) => /^--bundle(=|$)/.test(arg))) return verifyBundleCommand.run(args, io);
    return verifyDatabaseCommand.run(args, io);
  },
};

async function verifyDatabase(values: OptionValues<typeof DATABASE_OPTIONS>, io: CliIo): Promise<number> {
  const target = databaseTarget(io.env, io.cwd);
  const expectHead = values['expect-head'] === undefined ? undefined : parseHead(values['expect-head']);
  if (expectHead && values.log === undefined)
    throw new CliError('--expect-head needs --log: a head belongs to one log');
  const checkpointKeys = checkpointKeysOf(values, io, target);
  if (target.kind === 'pglite' && !existsSync(target.dataDir)) {
    throw new CliError(
      `no data directory at ${target.dataDir}: set VOUCH_DATA_DIR (or DATABASE_URL for Postgres) to where the ledger is`,
    );
  }
  let database: Database | undefined;
  try {
    database = await openTarget(target);
    const { applied } = await migrationStatus(database);
    if (applied === 0) {
      throw new CliError(
        `${describeTarget(target)} has no Vouch schema: check DATABASE_URL / VOUCH_DATA_DIR, or run \`vouch migrate\``,
      );
    }
    const ledger = createLedger(database);
    const logs = values.log === undefined ? await listLogs(database) : [values.log];
    const reports: LogVerificationReport[] = [];
    for (const log of logs) {
      let shown = false;
      const keys = checkpointKeys?.(log);
      const report = await ledger.verifyChain({
        log,
        ...(expectHead ? { expectHead } : {}),
        ...(keys ? { checkpointKeys: keys } : {}),
        onProgress: (checked) => {
          // Only long chains get progress lines; the verdict follows on stdout.
          if (checked < 10_000) return;
          shown = true;
          if (io.interactive) io.err(`\rverifying log ${log}: ${count(checked)} events…`);
          else io.err(`verifying log ${log}: ${count(checked)} events\n`);
        },
        onRestart: () => {
          if (shown && io.interactive) io.err('\n');
          io.err(`log ${log} is not intact: verifying it again event by event for the exact report\n`);
        },
      });
      if (shown && io.interactive) io.err('\n');
      reports.push(report);
      if (!values.json) printHuman(io, report);
    }
    const ok = reports.every((r) => r.ok);
    if (values.json) {
      io.out(`${JSON.stringify(values.log === undefined ? { ok, reports } : reports[0], null, 2)}\n`);
    } else if (logs.length === 0) {
      io.out(`no events in ${describeTarget(target)}: nothing to verify\n`);
    } else if (logs.length > 1) {
      io.out(
        ok
          ? `all ${logs.length} logs intact\n`
          : `${reports.filter((r) => !r.ok).length} of ${logs.length} logs BROKEN\n`,
      );
    }
    return ok ? EXIT.OK : EXIT.BROKEN;
  } finally {
    await database?.close().catch(() => {});
  }
}
