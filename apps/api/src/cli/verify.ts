import { existsSync } from 'node:fs';
import { parseArgs } from 'node:util';
import type { ChainHead, ChainReport } from '@vouch/audit';
import { createLedger, type Database, migrationStatus } from '@vouch/ledger';
import { sql } from 'drizzle-orm';
import { databaseTarget, describeTarget } from '../config';
import { openTarget } from '../open-target';
import { explainFailure } from './errors';
import { CliError, type CliIo, EXIT } from './io';
import { VERIFY_BUNDLE_USAGE } from './verify-bundle';
import { VERIFY_SINCE_USAGE } from './verify-since';
import { isTransparencyVerify, runTransparencyVerify } from './verify-transparency';

export const VERIFY_USAGE = `vouch verify [--log L] [--expect-head SEQ:HASH] [--json]

Verify the hash chain of one log (--log) or of every log, straight from the database
(DATABASE_URL, or the PGlite data directory VOUCH_DATA_DIR, default ./.vouch/data).

  --log L                 verify only log L
  --expect-head SEQ:HASH  a head you trusted earlier; a log cut back before it is TRUNCATED
  --json                  print the report as JSON on stdout

Exit 0: intact. Exit 1: broken (every break is listed with its seq). Exit 2: usage or
connection error.

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

/** Every log id in the database, without scanning every event (a loose index scan). */
async function listLogs(database: Database): Promise<string[]> {
  const rows = await database.rows<{ log_id: string }>(sql`
    with recursive logs(log_id) as (
      (select log_id from audit_events order by log_id limit 1)
      union all
      select (select e.log_id from audit_events e where e.log_id > logs.log_id order by e.log_id limit 1)
      from logs where logs.log_id is not null
    )
    select log_id from logs where log_id is not null`);
  return rows.map((r) => r.log_id);
}

const count = (n: number) => n.toLocaleString('en-US');

function printHuman(io: CliIo, report: ChainReport): void {
  const head = report.head ? `${report.head.seq}:${report.head.hash}` : '(empty)';
  if (report.ok) {
    io.out(`log ${report.log}: INTACT — ${count(report.checked)} events verified, head ${head}\n`);
    return;
  }
  const problems = report.failures.length + (report.failuresOmitted ?? 0);
  io.out(`log ${report.log}: BROKEN — ${count(problems)} problem(s) in ${count(report.checked)} events\n`);
  for (const failure of report.failures) {
    io.out(`  seq ${failure.seq}  ${failure.code}  ${failure.message}\n`);
  }
  if (report.failuresOmitted) io.out(`  … and ${count(report.failuresOmitted)} more not listed\n`);
}

/** `vouch verify`: exit 0 intact, 1 broken, 2 usage or connection error. */
export async function runVerify(args: string[], io: CliIo): Promise<number> {
  if (isTransparencyVerify(args)) return runTransparencyVerify(args, io);
  let values: { log?: string; 'expect-head'?: string; json?: boolean; help?: boolean };
  try {
    ({ values } = parseArgs({
      args,
      options: {
        log: { type: 'string' },
        'expect-head': { type: 'string' },
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
    const reports: ChainReport[] = [];
    for (const log of logs) {
      let shown = false;
      const report = await ledger.verifyChain({
        log,
        ...(expectHead ? { expectHead } : {}),
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
