import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { open, readFile, rename, rm } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { parseArgs } from 'node:util';
import {
  isAuditError,
  type WitnessFetch,
  type WitnessOutcome,
  type WitnessReport,
  witnessBundle,
  witnessLog,
} from '@vouch/audit';
import { explainFailure } from './errors';
import { CliError, type CliIo, EXIT } from './io';
import { bundleLines, bundleProgress, parseVerifierKeys } from './verify-bundle';

export const VERIFY_SINCE_USAGE = `vouch verify --since CHECKPOINT_FILE --public-key KEY (--url URL [--key APIKEY] [--log L] | --bundle FILE) [--init] [--json]

Check that a log only grew since the checkpoint you trusted last (the witness pattern).
CHECKPOINT_FILE holds that signed checkpoint. The tool gets the log's newer checkpoint,
from a running server (--url, with an auditor API key) or from an exported bundle
(--bundle), checks its signature, then takes the log's events as served and recomputes
every event hash, chain link and the Merkle root at your size and at the new one: the
server's claims prove nothing by themselves. Only then is CHECKPOINT_FILE replaced
(atomically: write, fsync, rename); a file that carries other witnesses' cosignatures is
never replaced by one that lacks them.

  --since FILE      the checkpoint you trust; kept up to date by this command
  --public-key KEY  a log verifier key you trust (repeatable; unknown keys are ignored)
  --url URL         the Vouch server, e.g. http://127.0.0.1:8787
  --key APIKEY      an API key with the auditor role (default VOUCH_API_KEY)
  --log L           the log (default: the last path segment of the checkpoint's origin)
  --bundle FILE     read the newer checkpoint and all events from a bundle instead
  --init            CHECKPOINT_FILE does not exist yet: trust the current checkpoint
                    once its signature and the events behind it verify, and save it
  --json            print the report as JSON on stdout

Exit 0: CONSISTENT (the log only grew). Exit 1: evidence of a rewrite or a server that
withholds what it must serve: TRUNCATED, FORKED, BROKEN, WITHHELD, PROOF_INVALID, or a
newer checkpoint that is not acceptable. Exit 2: usage, connection or file error, or at
--init a log that does not exist (LOG_NOT_FOUND) or has no signed checkpoint yet
(NO_CHECKPOINT_YET): nothing concluded. With a checkpoint on file, a server that calls the
log unknown or unsigned withholds what it signed before: WITHHELD, exit 1.`;

/** What the command may reach besides the file system: injected so tests speak to `app.request`. */
export interface SinceDeps {
  fetch: WitnessFetch;
}

/** The report `verify --since` prints (`--json`): the witness's, plus where it was saved. */
export type SinceReport = WitnessReport & { saved: string | null };

/** `vouch verify --since`: exit 0 consistent (saved), 1 evidence of a rewrite, 2 usage or connection error. */
export async function runVerifySince(
  args: string[],
  io: CliIo,
  deps: SinceDeps = { fetch: globalThis.fetch },
): Promise<number> {
  let values: {
    since?: string;
    'public-key'?: string[];
    url?: string;
    key?: string;
    log?: string;
    bundle?: string;
    init?: boolean;
    json?: boolean;
    help?: boolean;
  };
  try {
    ({ values } = parseArgs({
      args,
      options: {
        since: { type: 'string' },
        'public-key': { type: 'string', multiple: true },
        url: { type: 'string' },
        key: { type: 'string' },
        log: { type: 'string' },
        bundle: { type: 'string' },
        init: { type: 'boolean' },
        json: { type: 'boolean' },
        help: { type: 'boolean', short: 'h' },
      },
      strict: true,
    }));
  } catch (error) {
    io.err(`vouch verify: ${(error as Error).message}\n\n${VERIFY_SINCE_USAGE}\n`);
    return EXIT.USAGE;
  }
  if (values.help) {
    io.out(`${VERIFY_SINCE_USAGE}\n`);
    return EXIT.OK;
  }
  try {
    const file = values.since;
    if (!file) throw new CliError('--since CHECKPOINT_FILE is required');
    const verifiers = parseVerifierKeys(values['public-key']);
    if ((values.url === undefined) === (values.bundle === undefined)) {
      throw new CliError('give exactly one of --url URL (a running server) or --bundle FILE');
    }
    const trusted = await readTrusted(file, values.init === true);
    const label = values.url === undefined ? `verifying ${values.bundle}` : 'checking the served events';
    const progress = bundleProgress(io, label);
    const common = { verifiers, onProgress: progress.onProgress };
    let outcome: WitnessOutcome;
    if (values.url !== undefined) {
      const apiKey = values.key ?? io.env.VOUCH_API_KEY?.trim();
      if (!apiKey) throw new CliError('--url needs an auditor API key: --key APIKEY or VOUCH_API_KEY');
      const server = { ...common, url: values.url, apiKey, fetch: deps.fetch };
      if (trusted === null) {
        if (!values.log)
          throw new CliError('--log L is required with --init (there is no trusted origin to take it from)');
        outcome = await witnessLog({ ...server, trusted: null, log: values.log });
      } else {
        outcome = await witnessLog({ ...server, trusted, ...(values.log ? { log: values.log } : {}) });
      }
    } else {
      outcome = await witnessBundle(bundleLines(values.bundle!), { ...common, trusted });
    }
    progress.done();

    let saved: string | null = null;
    if (outcome.report.ok && outcome.note !== null) {
      await saveAtomically(file, outcome.note);
      saved = file;
    }
    const report: SinceReport = { ...outcome.report, saved };
    io.out(values.json ? `${JSON.stringify(report, null, 2)}\n` : describe(report));
    return report.ok ? EXIT.OK : EXIT.BROKEN;
  } catch (error) {
    const code = isAuditError(error) ? error.code : 'USAGE';
    const message = isAuditError(error) ? `${error.code}: ${error.message}` : explainFailure(error);
    io.err(`vouch verify: ${message}\n`);
    // A script reading --json still gets one parseable answer that says nothing was concluded.
    if (values.json) io.out(`${JSON.stringify({ ok: false, error: { code, message } }, null, 2)}\n`);
    return EXIT.USAGE;
  }
}

async function readTrusted(file: string, init: boolean): Promise<string | null> {
  if (!existsSync(file)) {
    if (init) return null;
    throw new CliError(
      `no checkpoint at ${file}: pass --init to trust the log's current checkpoint the first time`,
    );
  }
  if (init) throw new CliError(`${file} exists: drop --init to check the log against it`);
  return readFile(file, 'utf8');
}

/**
 * Replace `file` so that a crash leaves either the old checkpoint or the new one, never a
 * torn file: write a temporary file beside it, fsync it, rename it over, fsync the directory.
 */
export async function saveAtomically(file: string, text: string): Promise<void> {
  const temporary = join(dirname(file), `.${basename(file)}.${randomBytes(6).toString('hex')}.tmp`);
  try {
    const handle = await open(temporary, 'wx', 0o644);
    try {
      await handle.writeFile(text, 'utf8');
      await handle.sync();
    } finally {
      await handle.close();
    }
    await rename(temporary, file);
  } catch (error) {
    await rm(temporary, { force: true });
    throw new CliError(`cannot save the new checkpoint to ${file}: ${(error as Error).message}`);
  }
  try {
    const directory = await open(dirname(file), 'r');
    try {
      await directory.sync();
    } finally {
      await directory.close();
    }
  } catch {
    // Some platforms cannot fsync a directory; the rename itself is still atomic.
  }
}

function describe(report: SinceReport): string {
  const count = (n: number) => n.toLocaleString('en-US');
  const lines = [`log ${report.log}: ${report.status} — ${report.message}`];
  if (report.trusted)
    lines.push(`  trusted: ${count(report.trusted.tree_size)} events, root ${report.trusted.root_hash}`);
  if (report.latest)
    lines.push(`  latest:  ${count(report.latest.tree_size)} events, root ${report.latest.root_hash}`);
  lines.push(`  checked: ${count(report.checked)} events recomputed from what was served`);
  for (const f of report.failures) lines.push(`  seq ${f.seq}  ${f.code}  ${f.message}`);
  if (report.failuresOmitted) lines.push(`  … and ${count(report.failuresOmitted)} more not listed`);
  if (report.saved) lines.push(`  saved the new checkpoint to ${report.saved}`);
  if (report.kept) lines.push(`  ${report.kept}`);
  return `${lines.join('\n')}\n`;
}
