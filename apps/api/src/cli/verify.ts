import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
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
import { explainFailure } from './errors';
import { CliError, type CliIo, EXIT } from './io';
import { parseVerifierKeys, VERIFY_BUNDLE_USAGE } from './verify-bundle';
import { VERIFY_SINCE_USAGE } from './verify-since';
import { isTransparencyVerify, runTransparencyVerify } from './verify-transparency';

export const VERIFY_USAGE = `vouch verify [--log L] [--expect-head SEQ:HASH] [--public-key KEY…] [--origin PREFIX] [--json]

Verify one log (--log) or every log straight from the database (DATABASE_URL, or the PGlite
data directory VOUCH_DATA_DIR, default ./.vouch/data): the hash chain, the Merkle tree
recomputed from the events against every stored node, every stored checkpoint against the
root recomputed at its size, and the record tables.

  --log L                 verify only log L (a log id with no events is an error, exit 2)
  --expect-head SEQ:HASH  a head you trusted earlier; a log cut back before it is TRUNCATED
  --public-key KEY        the log verifier key <name>+<id>+<base64> to check checkpoint
                          signatures with (repeatable). Default: the configured log key
                          (VOUCH_LOG_SIGNING_KEY, or the PGlite data directory's key); with
                          neither, the report says the signatures were NOT checked
  --origin PREFIX         with --public-key: checkpoints must name the origin PREFIX/<log>
  --json                  print the report as JSON on stdout

Exit 0: intact. Exit 1: broken (every break is listed with its seq). Exit 2: usage or
connection error, or an unknown log.

Auditors, without trusting the server (docs/transparency.md):

${VERIFY_BUNDLE_USAGE.split('\n')[0]}
${VERIFY_SINCE_USAGE.split('\n')[0]}`;

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
}

/** `vouch verify`: exit 0 intact, 1 broken, 2 usage or connection error. */
export async function runVerify(args: string[], io: CliIo): Promise<number> {
  if (isTransparencyVerify(args)) return runTransparencyVerify(args, io);
  let values: {
    log?: string;
    'expect-head'?: string;
    'public-key'?: string[];
    origin?: string;
    json?: boolean;
    help?: boolean;
  };
  try {
    ({ values } = parseArgs({
      args,
      options: {
        log: { type: 'string' },
        'expect-head': { type: 'string' },
        'public-key': { type: 'string', multiple: true },
        origin: { type: 'string' },
        json: { type: 'boolean' },
        help: { type: 'boolean', short: 'h' },
      },
      strict: true,
      allowPositionals: false,
    }));
  } catch (error) {
    io.err(`vouch verify: ${(error as Error).message}\n\n${VERIFY_USAGE}\n`);
    return EXIT.USAGE;
  }
  if (values.help) {
    io.out(`${VERIFY_USAGE}\n`);
    return EXIT.OK;
  }
  const target = databaseTarget(io.env, io.cwd);
  let database: Database | undefined;
  try {
    const expectHead = values['expect-head'] === undefined ? undefined : parseHead(values['expect-head']);
    if (expectHead && values.log === undefined)
      throw new CliError('--expect-head needs --log: a head belongs to one log');
    const checkpointKeys = checkpointKeysOf(values, io, target);
    if (target.kind === 'pglite' && !existsSync(target.dataDir)) {
      throw new CliError(
        `no data directory at ${target.dataDir}: set VOUCH_DATA_DIR (or DATABASE_URL for Postgres) to where the ledger is`,
      );
    }
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
  } catch (error) {
    io.err(`vouch verify: ${explainFailure(error, target)}\n`);
    return EXIT.USAGE;
  } finally {
    await database?.close().catch(() => {});
  }
}
