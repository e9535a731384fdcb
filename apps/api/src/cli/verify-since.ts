import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { open, readFile, rename, rm } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { isAuditError, openCheckpoint } from '@vouch/audit';
import { type WitnessOutcome, type WitnessReport, witnessBundle, witnessLog } from '@vouch/audit/witness';
import { defineCommand, type OptionSpecs, type OptionValues } from './command';
import { explainFailure } from './errors';
import { CliError, type CliIo, EXIT } from './io';
import {
  bundleLines,
  bundleProgress,
  JSON_OPTION,
  PUBLIC_KEY_OPTION,
  parseVerifierKeys,
} from './verify-bundle';
import { parseWitnessRequirement, THRESHOLD_OPTION, WITNESS_OPTION } from './witness-threshold';

/**
 * The report `verify --since` prints (`--json`): the witness's, plus where it was saved, and
 * the file it checked from when that was CHECKPOINT_FILE.ahead (`trusted` is then that one).
 */
export type SinceReport = WitnessReport & { saved: string | null; checked_from?: string };

const SINCE_OPTIONS = {
  since: {
    type: 'string',
    value: 'FILE',
    required: true,
    help: 'the checkpoint you trust; kept up to date by this command',
  },
  'public-key': PUBLIC_KEY_OPTION,
  url: { type: 'string', value: 'URL', help: 'the Vouch server, e.g. http://127.0.0.1:8787' },
  key: { type: 'string', value: 'APIKEY', help: 'an API key with the auditor role (default VOUCH_API_KEY)' },
  log: {
    type: 'string',
    value: 'L',
    help: "the log (default: the last path segment of the checkpoint's origin)",
  },
  bundle: {
    type: 'string',
    value: 'FILE',
    help: 'read the newer checkpoint and all events from a bundle instead',
  },
  init: {
    type: 'boolean',
    help: 'CHECKPOINT_FILE does not exist yet: trust the current checkpoint\nonce its signature and the events behind it verify, and save it',
  },
  witness: WITNESS_OPTION,
  threshold: THRESHOLD_OPTION,
  json: JSON_OPTION,
} satisfies OptionSpecs;

/** `vouch verify --since`: exit 0 consistent (saved), 1 evidence of a rewrite, 2 usage or connection error. */
export const verifySinceCommand = defineCommand({
  name: 'vouch verify',
  synopsis:
    'vouch verify --since CHECKPOINT_FILE --public-key KEY (--url URL [--key APIKEY] [--log L] | --bundle FILE) [--witness KEY… [--threshold N]] [--init] [--json]',
  description: `Check that a log only grew since the checkpoint you trusted last (the witness pattern).
CHECKPOINT_FILE holds that signed checkpoint. The tool gets the log's newer checkpoint,
from a running server (--url, with an auditor API key) or from an exported bundle
(--bundle), checks its signature, then takes the log's events as served and recomputes
every event hash, chain link and the Merkle root at your size and at the new one: the
server's claims prove nothing by themselves. Only then is CHECKPOINT_FILE replaced
(atomically: write, fsync, rename); a file that carries other witnesses' cosignatures is
never replaced by one that lacks them: the newer checkpoint is then saved beside it, as
CHECKPOINT_FILE.ahead, and the next run checks the log from that one, so the witness keeps
advancing whatever signature lines the server adds or leaves out. With --witness, the
newer checkpoint must also carry valid cosignatures (c2sp.org/tlog-cosignature) by
--threshold of those witnesses, or it is refused and not saved: a checkpoint no witness
saw may be a view shown only to you.`,
  options: SINCE_OPTIONS,
  footer: `Exit 0: CONSISTENT (the log only grew). Exit 1: evidence of a rewrite or a server that
withholds what it must serve: TRUNCATED, FORKED, BROKEN, WITHHELD, PROOF_INVALID, or a
newer checkpoint that is not acceptable. Exit 2: usage, connection or file error, or at
--init a log that does not exist (LOG_NOT_FOUND) or has no signed checkpoint yet
(NO_CHECKPOINT_YET): nothing concluded. With a checkpoint on file, a server that calls the
log unknown or unsigned withholds what it signed before: WITHHELD, exit 1. Exit 3:
NOT_WITNESSED, everything verified but fewer than --threshold witnesses cosigned the
newer checkpoint; nothing saved.`,
  async action({ values }, io) {
    try {
      const report = await witness(values, io);
      io.out(values.json ? `${JSON.stringify(report, null, 2)}\n` : describe(report));
      if (report.status === 'NOT_WITNESSED') return EXIT.NOT_WITNESSED;
      return report.ok ? EXIT.OK : EXIT.BROKEN;
    } catch (error) {
      // A script reading --json still gets one parseable answer that says nothing was concluded.
      const code = isAuditError(error) ? error.code : 'USAGE';
      if (values.json)
        io.out(
          `${JSON.stringify({ ok: false, error: { code, message: explainFailure(error) } }, null, 2)}\n`,
        );
      throw error;
    }
  },
});

/** Run the witness the flags ask for; save the new checkpoint when it is consistent. */
async function witness(values: OptionValues<typeof SINCE_OPTIONS>, io: CliIo): Promise<SinceReport> {
  const file = values.since;
  if (!file) throw new CliError('--since CHECKPOINT_FILE is required');
  const verifiers = parseVerifierKeys(values['public-key']);
  const witnesses = parseWitnessRequirement(values.witness, values.threshold);
  if ((values.url === undefined) === (values.bundle === undefined)) {
    throw new CliError('give exactly one of --url URL (a running server) or --bundle FILE');
  }
  const trusted = await readTrusted(file, values.init === true);
  const aheadPath = aheadFile(file);
  if (trusted === null && existsSync(aheadPath)) {
    throw new CliError(
      `${aheadPath} is left from an earlier witness of ${file}: remove it too, then run --init again`,
    );
  }
  const ahead = trusted !== null && existsSync(aheadPath) ? await readFile(aheadPath, 'utf8') : null;
  if (ahead !== null && !openCheckpoint(ahead, { verifiers }).ok) {
    throw new CliError(
      `${aheadPath} is not a checkpoint signed by a key you trust: remove it to check the log from ${file} again`,
    );
  }
  const label = values.url === undefined ? `verifying ${values.bundle}` : 'checking the served events';
  const progress = bundleProgress(io, label);
  const common = {
    verifiers,
    onProgress: progress.onProgress,
    ahead,
    ...(witnesses ? { witnesses } : {}),
  };
  let outcome: WitnessOutcome;
  if (values.url !== undefined) {
    const apiKey = values.key ?? io.env.VOUCH_API_KEY?.trim();
    if (!apiKey) throw new CliError('--url needs an auditor API key: --key APIKEY or VOUCH_API_KEY');
    const server = { ...common, url: values.url, apiKey, fetch: io.fetch ?? globalThis.fetch };
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
    if (ahead !== null) await rm(aheadPath, { force: true });
  } else if (outcome.report.ok && outcome.ahead !== undefined && outcome.ahead !== ahead) {
    // The cosigned checkpoint stays in FILE; the newer one goes beside it, and the next run
    // checks the log from there.
    await saveAtomically(aheadPath, outcome.ahead);
    saved = aheadPath;
  }
  return { ...outcome.report, saved, ...(ahead !== null ? { checked_from: aheadPath } : {}) };
}

/**
 * Where a witness keeps the newest checkpoint it verified while CHECKPOINT_FILE keeps an
 * older one for its cosignatures (`WitnessOutcome.ahead`).
 */
export function aheadFile(file: string): string {
  return `${file}.ahead`;
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
  if (report.trusted) {
    const from = report.checked_from ? ` (${report.checked_from})` : '';
    lines.push(
      `  trusted: ${count(report.trusted.tree_size)} events, root ${report.trusted.root_hash}${from}`,
    );
  }
  if (report.latest)
    lines.push(`  latest:  ${count(report.latest.tree_size)} events, root ${report.latest.root_hash}`);
  lines.push(`  checked: ${count(report.checked)} events recomputed from what was served`);
  for (const f of report.failures) lines.push(`  seq ${f.seq}  ${f.code}  ${f.message}`);
  if (report.failuresOmitted) lines.push(`  … and ${count(report.failuresOmitted)} more not listed`);
  if (report.saved) lines.push(`  saved the new checkpoint to ${report.saved}`);
  if (report.kept) lines.push(`  ${report.kept}`);
  if (report.cosignedBy) {
    const by = report.cosignedBy.map((c) => c.name).join(', ') || 'no witness you trust';
    lines.push(`  cosigned by: ${by}`);
  }
  return `${lines.join('\n')}\n`;
}
