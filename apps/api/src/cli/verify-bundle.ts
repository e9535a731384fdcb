import { createReadStream, existsSync } from 'node:fs';
import { parseArgs } from 'node:util';
import {
  type BundleReport,
  type NoteVerifier,
  parseVerifierKey,
  splitLines,
  verifyBundle,
} from '@vouch/audit';
import { explainFailure } from './errors';
import { CliError, type CliIo, EXIT } from './io';

export const VERIFY_BUNDLE_USAGE = `vouch verify --bundle FILE --public-key KEY [--public-key KEY…] [--origin O] [--log L] [--json]

Verify an exported bundle offline, with no database and without trusting the server:
every payload hash, event hash and chain link is recomputed, the Merkle root is rebuilt
from the events and must equal the root of the bundle's checkpoint, whose signature must
verify under one of the public keys you trust (from \`vouch keys log-public\`; keys you
do not pass are ignored, which is how a key rotation works).

  --public-key KEY  a log verifier key <name>+<id>+<base64> (repeatable)
  --origin O        the checkpoint origin you expect (default: the bundle header's)
  --log L           the log id you expect (default: the bundle header's)
  --json            print the report as JSON on stdout

Exit 0: intact. Exit 1: broken (every problem is listed). Exit 2: usage error or unreadable file.`;

const PROGRESS_EVERY = 10_000;

/** The public keys from `--public-key` options; `CliError` for one that does not parse. */
export function parseVerifierKeys(keys: readonly string[] | undefined): NoteVerifier[] {
  if (keys === undefined || keys.length === 0) {
    throw new CliError(
      '--public-key KEY is required: the log verifier key you trust (vouch keys log-public)',
    );
  }
  return keys.map((key) => {
    try {
      return parseVerifierKey(key.trim());
    } catch (error) {
      throw new CliError(`--public-key ${key} is not a verifier key: ${(error as Error).message}`);
    }
  });
}

/** The lines of a bundle file, read as a stream (constant memory). `CliError` when it is missing. */
export function bundleLines(path: string): AsyncGenerator<string> {
  if (!existsSync(path)) throw new CliError(`no bundle file at ${path}`);
  return splitLines(createReadStream(path, { encoding: 'utf8', highWaterMark: 1 << 20 }));
}

/** Progress lines on stderr for long bundles: redrawn in place on a terminal. */
export function bundleProgress(io: CliIo, label: string): { onProgress: (n: number) => void; done(): void } {
  let shown = false;
  return {
    onProgress(checked) {
      if (checked < PROGRESS_EVERY) return;
      shown = true;
      if (io.interactive) io.err(`\r${label}: ${checked.toLocaleString('en-US')} events…`);
      else io.err(`${label}: ${checked} events\n`);
    },
    done() {
      if (shown && io.interactive) io.err('\n');
    },
  };
}

/** Human lines for a bundle report. */
export function describeBundleReport(report: BundleReport): string {
  const count = (n: number) => n.toLocaleString('en-US');
  if (report.ok) {
    const cp = report.checkpoint!;
    return `bundle of log ${report.log}: INTACT — ${count(report.checked)} events verified; checkpoint ${cp.origin} at ${count(cp.treeSize)} events, root ${cp.rootHash}, signed by ${cp.verifiedBy.join(', ')}\n`;
  }
  const problems = report.failures.length + (report.failuresOmitted ?? 0);
  let text = `bundle of log ${report.log || '(unknown)'}: BROKEN — ${count(problems)} problem(s) in ${count(report.checked)} events\n`;
  for (const failure of report.failures)
    text += `  seq ${failure.seq}  ${failure.code}  ${failure.message}\n`;
  if (report.failuresOmitted) text += `  … and ${count(report.failuresOmitted)} more not listed\n`;
  return text;
}

/** `vouch verify --bundle`: exit 0 intact, 1 broken, 2 usage or unreadable file. */
export async function runVerifyBundle(args: string[], io: CliIo): Promise<number> {
  let values: {
    bundle?: string;
    'public-key'?: string[];
    origin?: string;
    log?: string;
    json?: boolean;
    help?: boolean;
  };
  try {
    ({ values } = parseArgs({
      args,
      options: {
        bundle: { type: 'string' },
        'public-key': { type: 'string', multiple: true },
        origin: { type: 'string' },
        log: { type: 'string' },
        json: { type: 'boolean' },
        help: { type: 'boolean', short: 'h' },
      },
      strict: true,
    }));
  } catch (error) {
    io.err(`vouch verify: ${(error as Error).message}\n\n${VERIFY_BUNDLE_USAGE}\n`);
    return EXIT.USAGE;
  }
  if (values.help) {
    io.out(`${VERIFY_BUNDLE_USAGE}\n`);
    return EXIT.OK;
  }
  try {
    if (!values.bundle) throw new CliError('--bundle FILE is required');
    const verifiers = parseVerifierKeys(values['public-key']);
    const progress = bundleProgress(io, `verifying ${values.bundle}`);
    const report = await verifyBundle(bundleLines(values.bundle), {
      verifiers,
      ...(values.origin ? { origin: values.origin } : {}),
      ...(values.log ? { log: values.log } : {}),
      onProgress: progress.onProgress,
      progressEvery: PROGRESS_EVERY,
    });
    progress.done();
    io.out(values.json ? `${JSON.stringify(report, null, 2)}\n` : describeBundleReport(report));
    return report.ok ? EXIT.OK : EXIT.BROKEN;
  } catch (error) {
    io.err(`vouch verify: ${explainFailure(error)}\n`);
    return EXIT.USAGE;
  }
}
