import { createReadStream, existsSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import {
  type BundleFailure,
  type BundleReport,
  type NoteVerifier,
  parseVerifierKey,
  readCheckpointUnverified,
  type SystemPart,
  splitLines,
  verifyCosignatures,
  verifySystemPart,
} from '@vouch/audit';
import { verifyBundleFile } from '@vouch/audit/node';
import {
  createBundleSignatureCheck,
  createKeyAuthorityCheck,
  createPolicyPinCheck,
  createRecordRuleCheck,
  KEY_EVENT_KINDS,
  POLICY_PIN_KINDS,
  type RecordRuleCheck,
} from '@vouch/ledger';
import { RECORD_KINDS } from '@vouch/records';
import { defineCommand, type OptionSpec } from './command';
import { CliError, type CliIo, EXIT } from './io';
import { redactionLines } from './redaction-lines';
import {
  bundleCheckpointNote,
  parseWitnessRequirement,
  THRESHOLD_OPTION,
  WITNESS_OPTION,
} from './witness-threshold';

const PROGRESS_EVERY = 10_000;

/** `--public-key`, as every auditor command takes it. */
export const PUBLIC_KEY_OPTION = {
  type: 'string',
  value: 'KEY',
  multiple: true,
  help: 'a log verifier key <name>+<id>+<base64> you trust (repeatable;\nunknown keys are ignored)',
} as const satisfies OptionSpec;

/** `--json`: the report as JSON on stdout. */
export const JSON_OPTION = {
  type: 'boolean',
  help: 'print the report as JSON on stdout',
} as const satisfies OptionSpec;

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

/** `--threads N`: a positive integer, by default 2 (1 on a single core). */
function parseThreads(text: string | undefined): number {
  if (text === undefined) return Math.min(2, availableParallelism());
  const threads = Number(text);
  if (!/^[0-9]+$/.test(text) || !Number.isSafeInteger(threads) || threads < 1 || threads > 64) {
    throw new CliError(`--threads ${text} is not a number of threads from 1 to 64`);
  }
  return threads;
}

/** Human lines for a bundle report. */
export function describeBundleReport(report: BundleReport & { signatures?: SignatureSummary }): string {
  const count = (n: number) => n.toLocaleString('en-US');
  if (report.ok) {
    const cp = report.checkpoint!;
    return `bundle of log ${report.log}: INTACT — ${count(report.checked)} events verified; checkpoint ${cp.origin} at ${count(cp.treeSize)} events, root ${cp.rootHash}, signed by ${cp.verifiedBy.join(', ')}\n${signatureLine(report.signatures)}${redactionLines(report.redactions)}`;
  }
  const problems = report.failures.length + (report.failuresOmitted ?? 0);
  let text = `bundle of log ${report.log || '(unknown)'}: BROKEN — ${count(problems)} problem(s) in ${count(report.checked)} events\n`;
  for (const failure of report.failures)
    text += `  seq ${failure.seq}  ${failure.code}  ${failure.message}\n`;
  if (report.failuresOmitted) text += `  … and ${count(report.failuresOmitted)} more not listed\n`;
  return text + signatureLine(report.signatures) + redactionLines(report.redactions);
}

/** The line that says whether the records' author signatures were checked, and how many are signed. */
function signatureLine(signatures: SignatureSummary | undefined): string {
  if (signatures === undefined) return '';
  if (!signatures.checked) return `  author signatures: NOT CHECKED — ${signatures.reason}\n`;
  const count = (n: number) => n.toLocaleString('en-US');
  const { signed, unsigned } = signatures.authors;
  return `  author signatures: ${count(signed)} record(s) signed by their author, ${count(unsigned)} unsigned (keys of the system log at ${count(signatures.system.treeSize)} events)\n`;
}

/** `vouch verify --bundle`: exit 0 intact, 1 broken, 2 usage or unreadable file. */
export const verifyBundleCommand = defineCommand({
  name: 'vouch verify',
  synopsis:
    'vouch verify --bundle FILE --public-key KEY [--public-key KEY…] [--witness KEY… [--threshold N]] [--origin O] [--log L] [--threads N] [--json]',
  description: `Verify an exported bundle offline, with no database and without trusting the server:
every payload hash, event hash and chain link is recomputed, every record is re-checked
against the rules the server enforces when it writes one and, by the keys of the system
log the bundle carries (pass that log's key too when each log has its own), every author
signature as \`vouch verify\` judges it (else: "author signatures: NOT CHECKED"); the
Merkle root is rebuilt from the events and must equal the root of the bundle's
checkpoint, whose signature must verify under one of the public keys you trust (from
\`vouch keys log-public\`; keys you do not pass are ignored, which is how a key rotation
works). With --witness, the checkpoint must also carry valid cosignatures by --threshold
of those witnesses.`,
  options: {
    bundle: { type: 'string', value: 'FILE', required: true, help: 'the bundle file (vouch export)' },
    'public-key': PUBLIC_KEY_OPTION,
    origin: {
      type: 'string',
      value: 'O',
      help: "the checkpoint origin you expect (default: the bundle header's)",
    },
    log: { type: 'string', value: 'L', help: "the log id you expect (default: the bundle header's)" },
    threads: {
      type: 'string',
      value: 'N',
      help: 'threads that verify a large bundle (default 2, 1 on a single core);\nthe verdict is the same with any number',
    },
    witness: WITNESS_OPTION,
    threshold: THRESHOLD_OPTION,
    json: JSON_OPTION,
  },
  footer:
    'Exit 0: intact. Exit 1: broken (every problem is listed). Exit 2: usage error or unreadable file.\nExit 3: intact, but fewer than --threshold of the --witness keys cosigned its checkpoint (NOT_WITNESSED).',
  async action({ values }, io) {
    if (!values.bundle) throw new CliError('--bundle FILE is required');
    const verifiers = parseVerifierKeys(values['public-key']);
    const threads = parseThreads(values.threads);
    const witnesses = parseWitnessRequirement(values.witness, values.threshold);
    if (!existsSync(values.bundle)) throw new CliError(`no bundle file at ${values.bundle}`);
    const progress = bundleProgress(io, `verifying ${values.bundle}`);
    let rules: RecordRuleCheck | undefined;
    let keys: ReturnType<typeof createKeyAuthorityCheck> | undefined;
    let pins: ReturnType<typeof createPolicyPinCheck> | undefined;
    const system = await systemKeys(values.bundle, verifiers);
    let signatures: ReturnType<typeof createBundleSignatureCheck> | undefined;
    const read = await verifyBundleFile(values.bundle, {
      verifiers,
      threads,
      // Only record and key events matter to the rules: the others stay in the worker threads.
      onEventKinds: [...new Set([...RECORD_KINDS, ...KEY_EVENT_KINDS, ...POLICY_PIN_KINDS])],
      // A bundle holds the whole log from seq 1: its records are re-checked against the rules
      // the server enforces when it writes one (RECORD_RULE_VIOLATION), as verifyChain does,
      // and in a bundle of the `system` log who wrote each key event; every decision is
      // judged by the policy the log pinned before it (DECISION_SOURCE_NOT_PINNED).
      onEvent: (event, fail) => {
        rules ??= createRecordRuleCheck(fail);
        keys ??= createKeyAuthorityCheck(event.log, fail);
        pins ??= createPolicyPinCheck(fail);
        // Every author signature, judged by the keys of the system log the bundle carries.
        if (system.status === 'verified')
          signatures ??= createBundleSignatureCheck(event.log, system.events, fail);
        rules.add(event);
        keys.add(event);
        pins.add(event);
        signatures?.add(event);
      },
      ...(values.origin ? { origin: values.origin } : {}),
      ...(values.log ? { log: values.log } : {}),
      onProgress: progress.onProgress,
      progressEvery: PROGRESS_EVERY,
    });
    progress.done();
    // Keys issued before the key commitment and never adopted: seen from the events alone,
    // as the database's verification sees them from the key rows (KEY_UNPROVEN).
    const report = withSignatures(
      withFailures(read, [...(keys?.unproven() ?? []), ...systemFailures(system)]),
      system,
      signatures,
    );
    const witnessed =
      witnesses && report.ok ? await witnessCheck(values.bundle, report, witnesses) : undefined;
    const shown = witnessed ? { ...report, witnesses: witnessed } : report;
    io.out(values.json ? `${JSON.stringify(shown, null, 2)}\n` : describeBundleReport(report));
    if (witnessed && !values.json) io.out(`${witnessed.ok ? '' : 'NOT_WITNESSED — '}${witnessed.message}\n`);
    if (witnessed && !witnessed.ok) return EXIT.NOT_WITNESSED;
    return report.ok ? EXIT.OK : EXIT.BROKEN;
  },
});

/** The bundle's part of the `system` log, verified against the same keys (`verifySystemPart`). */
async function systemKeys(path: string, verifiers: NoteVerifier[]) {
  const lines = bundleLines(path);
  const first = await lines.next();
  await lines.return(undefined);
  return verifySystemPart(first.done ? '' : first.value, { verifiers, kinds: KEY_EVENT_KINDS });
}

/** What a `system` part that does not verify adds to the report: it was altered. */
function systemFailures(system: SystemPart): BundleFailure[] {
  if (system.status !== 'broken') return [];
  const first = system.failures.slice(0, 3).map((f) => `seq ${f.seq} ${f.code}: ${f.message}`);
  return [
    {
      seq: 0,
      code: 'SYSTEM_PART_INVALID',
      message: `${system.reason}${first.length > 0 ? `: ${first.join('; ')}` : ''}`,
      failures: system.failures,
    },
  ];
}

/** Whether author signatures were checked (a bundle of any log but `system`), and what was found. */
export type SignatureSummary =
  | {
      checked: true;
      authors: { signed: number; unsigned: number };
      system: { treeSize: number; rootHash: string };
    }
  | { checked: false; reason: string };

/** The report with what was found of the author signatures; a `system` bundle judges its key events as keys. */
function withSignatures(
  report: BundleReport,
  system: SystemPart,
  check: ReturnType<typeof createBundleSignatureCheck> | undefined,
): BundleReport & { signatures?: SignatureSummary } {
  if (report.log === 'system') return report;
  if (system.status !== 'verified')
    return { ...report, signatures: { checked: false, reason: system.reason } };
  const authors = check?.authors() ?? { signed: 0, unsigned: 0 };
  const { treeSize, rootHash } = system.checkpoint;
  return { ...report, signatures: { checked: true, authors, system: { treeSize, rootHash } } };
}

/** The report with more failures, in seq order: not intact when there is any. */
function withFailures(report: BundleReport, more: readonly BundleFailure[]): BundleReport {
  if (more.length === 0) return report;
  const failures = [...report.failures, ...more].sort((a, b) => a.seq - b.seq);
  return { ...report, ok: false, failures };
}

/**
 * The cosignatures on the checkpoint of a bundle that verified: its checkpoint line is read
 * again from the file's end, and must state the checkpoint the verification accepted.
 */
async function witnessCheck(
  path: string,
  report: BundleReport,
  witnesses: NonNullable<ReturnType<typeof parseWitnessRequirement>>,
): Promise<{ ok: boolean; message: string; cosignedBy: { name: string; time: number }[] }> {
  const note = await bundleCheckpointNote(path);
  const stated = note === undefined ? undefined : readCheckpointUnverified(note);
  const cp = report.checkpoint!;
  if (
    stated === undefined ||
    stated.treeSize !== cp.treeSize ||
    stated.origin !== cp.origin ||
    Buffer.from(stated.rootHash).toString('hex') !== cp.rootHash
  ) {
    return {
      ok: false,
      message: "the bundle's last checkpoint line is not the checkpoint verified",
      cosignedBy: [],
    };
  }
  const check = verifyCosignatures(note!, { witnesses: witnesses.keys, threshold: witnesses.threshold });
  return {
    ok: check.ok,
    message: check.message,
    cosignedBy: check.cosignedBy.map(({ name, time }) => ({ name, time })),
  };
}
