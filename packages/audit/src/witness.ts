import { bytesToHex } from '@noble/hashes/utils.js';
import { BUNDLE_FORMAT, type BundleHeader } from './bundle-format';
import { type BundleFailure, type BundleReport, verifyBundle } from './bundle-verify';
import { type Checkpoint, type CheckpointFailureCode, openCheckpoint } from './checkpoint';
import { type CosignatureVerifier, verifyCosignatures } from './cosignature';
import { AuditError } from './errors';
import { bytesEqual } from './merkle-hash';
import { verifyConsistency } from './merkle-verify';
import type { NoteVerifier } from './note-keys';
import {
  connect,
  fetchConsistencyProof,
  fetchEventLines,
  fetchLatestCheckpoint,
  isWithheld,
  type Withheld,
  type WitnessServer,
} from './witness-http';
import { nextTrustedNote } from './witness-trusted-note';

// The witness (c2sp.org/tlog-witness in spirit): keep one checkpoint of a log, and later
// prove that the log only grew from it. A consistency proof alone is not that proof: it
// is computed from the server's stored Merkle tree, which someone who rewrote the events
// (and every later hash) can leave untouched. So the witness takes the events the server
// serves and recomputes everything from them, in one streaming pass with constant memory:
// every payload hash, event hash and chain link, the Merkle root at the trusted size (which
// must be the trusted root) and at the newly signed size (which must be the new root).

/** What a witness concluded about a log. */
export type WitnessStatus =
  /** The log only grew (or did not change) since the trusted checkpoint. */
  | 'CONSISTENT'
  /** Fewer events than the trusted checkpoint, or than the server's own checkpoint, cover. */
  | 'TRUNCATED'
  /** The first N events are not the N the trusted checkpoint covers: history was rewritten. */
  | 'FORKED'
  /** The events do not verify: a broken chain, or a Merkle root that is not the signed one. */
  | 'BROKEN'
  /** The server does not serve what it must (a checkpoint, the events, a proof): HTTP 404. */
  | 'WITHHELD'
  /** The newer checkpoint is not vouched for: malformed, bad or unknown signature, other log. */
  | 'CHECKPOINT_INVALID'
  | 'SIGNATURE_INVALID'
  | 'NO_TRUSTED_SIGNATURE'
  | 'ORIGIN_MISMATCH'
  /** The server's consistency proof does not verify although its events do: its stored tree was altered. */
  | 'PROOF_INVALID'
  /**
   * Everything verified, but the newer checkpoint lacks the cosignatures asked for
   * (`witnesses`): fewer than `threshold` of the trusted witnesses vouch that they saw the
   * same tree. Refused, not saved: it may be a split view shown only to you.
   */
  | 'NOT_WITNESSED';

/** A checkpoint as a report shows it: hex root. */
export interface WitnessCheckpointView {
  origin: string;
  tree_size: number;
  root_hash: string;
}

/** The verdict of `witnessLog` or `witnessBundle`. */
export interface WitnessReport {
  ok: boolean;
  status: WitnessStatus;
  message: string;
  log: string;
  /** The checkpoint the witness trusted; null at first use. */
  trusted: WitnessCheckpointView | null;
  /** The newer checkpoint, once its signature verified. */
  latest: WitnessCheckpointView | null;
  /** Events whose hashes were recomputed. */
  checked: number;
  /** Every problem found in the events, located by seq (0: the checkpoint or the bundle as a whole). */
  failures: BundleFailure[];
  failuresOmitted?: number;
  /** Why the trusted note is kept although the log grew (see `nextTrustedNote`). */
  kept?: string;
  /** With `witnesses`: the trusted witnesses whose cosignature on the newer checkpoint verified. */
  cosignedBy?: { name: string; time: number }[];
}

/** A report, and the note to save as the new trusted state (null: keep what you have). */
export interface WitnessOutcome {
  report: WitnessReport;
  note: string | null;
  /** When the check came out consistent: the newer checkpoint's note as served (what a witness cosigns). */
  checkpoint?: string;
  /**
   * When `note` is null because the trusted note was kept for its cosignatures although the
   * log grew: the newer note, to keep beside it and pass as `ahead` next time, so the witness
   * still advances (see `nextTrustedNote`).
   */
  ahead?: string;
}

interface WitnessCommonOptions {
  /** Log verifier keys the auditor trusts (`vouch keys log-public`); unknown keys on a note are ignored. */
  verifiers: readonly (NoteVerifier | string)[];
  /** Called every `progressEvery` events recomputed (default 10,000) and at the end. */
  onProgress?: (checked: number) => void;
  progressEvery?: number;
  signal?: AbortSignal;
  /** Cap on failures kept (default 10,000); the count goes on. */
  maxFailures?: number;
  /**
   * Require witness cosignatures (c2sp.org/tlog-cosignature) on the newer checkpoint: at
   * least `threshold` distinct `keys` (witness verifier keys, type 0x04) must have cosigned
   * it, or the verdict is `NOT_WITNESSED` and nothing is saved.
   */
  witnesses?: { keys: readonly (CosignatureVerifier | string)[]; threshold: number };
  /**
   * A newer checkpoint an earlier run kept beside a trusted note it would not replace
   * (`WitnessOutcome.ahead`): the log is checked from it, the newest the witness has seen,
   * while the trusted note still decides what is saved. Used when it opens under `verifiers`
   * for the trusted origin and is larger; a note that does not open is
   * `TRUSTED_CHECKPOINT_INVALID`.
   */
  ahead?: string | null;
}

/** Options of `witnessLog`: the trusted note, or none at first use (then `log` is required). */
export type WitnessLogOptions = WitnessCommonOptions &
  Omit<WitnessServer, 'log' | 'signal'> &
  (
    | {
        /** The signed checkpoint note the auditor trusts. */
        trusted: string;
        /** The log id; default: the last path segment of the trusted checkpoint's origin. */
        log?: string;
      }
    | { trusted: null; log: string }
  );

/** Options of `witnessBundle`. */
export interface WitnessBundleOptions extends WitnessCommonOptions {
  /** The signed checkpoint note the auditor trusts; null at first use. */
  trusted: string | null;
}

/**
 * Check a live log against the checkpoint the auditor trusts, trusting nothing the server
 * says that it cannot prove: fetch its latest checkpoint (signature and origin checked),
 * then stream its events (`/export`) up to that checkpoint's size and recompute every
 * payload hash, event hash, chain link and the Merkle root at the trusted size and at the
 * new size, and finally check the server's own consistency proof between the two. Memory
 * stays flat for any log length; the body is cancelled past the new checkpoint.
 *
 * At first use (`trusted: null`) the current checkpoint is trusted once its signature
 * verifies and the events the server serves hash to its root.
 *
 * Throws `AuditError` only when nothing can be concluded: `TRUSTED_CHECKPOINT_INVALID`
 * (the trusted note does not open under `verifiers`), `SERVER_UNREACHABLE` (no answer, a
 * 5xx, a body that breaks off), `SERVER_REFUSED` (bad key, a 404 that is not Vouch's),
 * and at first use only, `LOG_NOT_FOUND` (no such log) and `NO_CHECKPOINT_YET` (nothing
 * signed yet to trust). Everything else the server serves, or withholds (404), is a
 * verdict in the report: with a checkpoint on file, even a log the server now calls
 * unknown is `WITHHELD`.
 *
 * @example
 * const { report, note } = await witnessLog({
 *   url: 'https://vouch.example', apiKey, fetch, verifiers: [logKey], trusted: savedNote,
 * });
 * if (!report.ok) alarm(report.status, report.message);
 * else if (note !== null) save(note);
 */
export async function witnessLog(options: WitnessLogOptions): Promise<WitnessOutcome> {
  const { verifiers } = options;
  const start = checkFrom(options, options.trusted === null ? null : openTrusted(options.trusted, verifiers));
  const trusted = start.from;
  const log = options.log ?? logOfOrigin(trusted!.origin);
  const server = connect({
    url: options.url,
    apiKey: options.apiKey,
    log,
    fetch: options.fetch,
    ...(options.signal ? { signal: options.signal } : {}),
    ...(options.timeoutMs === undefined ? {} : { timeoutMs: options.timeoutMs }),
    ...(options.retry === undefined ? {} : { retry: options.retry }),
  });
  const base: Omit<WitnessReport, 'ok' | 'status' | 'message'> = {
    log,
    trusted: trusted && view(trusted),
    latest: null,
    checked: 0,
    failures: [],
  };
  const verdict = (
    status: WitnessStatus,
    message: string,
    extra: Partial<WitnessReport> = {},
  ): WitnessOutcome => ({
    report: { ...base, ...extra, ok: status === 'CONSISTENT', status, message },
    note: null,
  });
  if (start.forked) return verdict('FORKED', start.forked);
  const withheld = (answer: Withheld, extra: Partial<WitnessReport> = {}) =>
    verdict('WITHHELD', `the server withholds ${answer.what} of log ${log} (${answer.reason})`, extra);

  const served = await fetchLatestCheckpoint(server);
  if (isWithheld(served)) {
    // With nothing trusted yet, nothing was promised: a missing log or checkpoint is not a
    // rewrite. Once a checkpoint is on file, the same 404 withholds what was signed before.
    if (trusted === null) throw nothingToTrust(served, log);
    return withheld(served);
  }
  const opened = openCheckpoint(served, { verifiers, ...(trusted ? { origin: trusted.origin } : {}) });
  if (!opened.ok) return verdict(checkpointStatus(opened.code), opened.message);
  const latest = opened.checkpoint;
  const withLatest = { latest: view(latest) };
  if (trusted === null && logOfOrigin(latest.origin) !== log) {
    return verdict('ORIGIN_MISMATCH', `the checkpoint is for ${latest.origin}, not log ${log}`, withLatest);
  }
  if (trusted !== null) {
    if (latest.treeSize < trusted.treeSize) {
      return verdict(
        'TRUNCATED',
        `the log's checkpoint is at ${latest.treeSize} events, before the ${trusted.treeSize} you trusted`,
        withLatest,
      );
    }
    if (latest.treeSize === trusted.treeSize && !bytesEqual(latest.rootHash, trusted.rootHash)) {
      return verdict('FORKED', forkedMessage(trusted.treeSize), withLatest);
    }
  }

  const lines = await fetchEventLines(server, latest.treeSize);
  if (isWithheld(lines)) return withheld(lines, withLatest);
  // The server's answers, assembled as the bundle they must amount to: one verifier for both.
  const header: BundleHeader = {
    format: BUNDLE_FORMAT,
    log,
    origin: latest.origin,
    treeSize: latest.treeSize,
  };
  const bundle = await verifyBundle(
    (async function* () {
      yield JSON.stringify(header);
      yield* lines;
      yield JSON.stringify({ checkpoint: served });
    })(),
    { ...replayOptions(options, trusted), origin: latest.origin, log },
  );
  // The header is ours: "the header promises N events" only repeats the TRUNCATED failure,
  // and line numbers count it, so shift them back to lines of the served body.
  const failures = bundle.failures
    .filter((f) => !(f.seq === 0 && f.code === 'BUNDLE_MALFORMED'))
    .map((f) => (typeof f.line === 'number' ? servedLine(f, f.line - 1) : f));
  const report = { ...bundle, failures };
  const judged = judge(report, trusted, latest.treeSize, 'server');
  const checkedBase = { ...withLatest, checked: bundle.checked, failures, ...omitted(bundle) };
  if (judged.status !== 'CONSISTENT') return verdict(judged.status, judged.message, checkedBase);

  if (trusted !== null && trusted.treeSize > 0 && trusted.treeSize < latest.treeSize) {
    // Implied by the two roots just recomputed; a proof that fails anyway means the stored
    // tree every other auditor's proofs come from was altered.
    const proof = await fetchConsistencyProof(server, trusted.treeSize, latest.treeSize);
    if (isWithheld(proof)) return withheld(proof, checkedBase);
    if (!proofVerifies(proof, trusted, latest)) {
      return verdict(
        'PROOF_INVALID',
        `the server's consistency proof from ${trusted.treeSize} to ${latest.treeSize} events does not verify, though its events do: its stored Merkle tree was altered`,
        checkedBase,
      );
    }
  }
  const next = nextTrustedNote({
    trusted: options.trusted,
    served,
    verifiers,
    ...(options.witnesses ? { witnesses: options.witnesses.keys } : {}),
  });
  return requireWitnesses(
    {
      report: {
        ...base,
        ...checkedBase,
        ok: true,
        status: 'CONSISTENT',
        message: judged.message,
        ...(next.kept ? { kept: next.kept } : {}),
      },
      note: next.note,
      ...(next.ahead ? { ahead: next.ahead } : {}),
    },
    served,
    options,
  );
}

/**
 * With `options.witnesses`, turn a consistent outcome into `NOT_WITNESSED` (nothing saved)
 * unless the newer checkpoint carries enough valid cosignatures. Cosignatures are looked for
 * on the checkpoint as the server or bundle had it and on the note that would be saved
 * (which merges the trusted file's lines for the same checkpoint).
 */
function requireWitnesses(
  consistent: WitnessOutcome,
  served: string,
  options: WitnessCommonOptions,
): WitnessOutcome {
  const outcome = { ...consistent, checkpoint: served };
  if (!options.witnesses || !outcome.report.ok) return outcome;
  const candidates = outcome.note === null ? [served] : [outcome.note, served];
  let best: ReturnType<typeof verifyCosignatures> | undefined;
  for (const note of candidates) {
    const check = verifyCosignatures(note, {
      witnesses: options.witnesses.keys,
      threshold: options.witnesses.threshold,
    });
    if (best === undefined || check.cosignedBy.length > best.cosignedBy.length) best = check;
  }
  const cosignedBy = best!.cosignedBy.map(({ name, time }) => ({ name, time }));
  if (best!.ok) return { ...outcome, report: { ...outcome.report, cosignedBy } };
  return {
    report: {
      ...outcome.report,
      ok: false,
      status: 'NOT_WITNESSED',
      message: `${outcome.report.message}, but not witnessed: ${best!.message}`,
      cosignedBy,
    },
    note: null,
    checkpoint: served,
  };
}

/** Why a first use found no checkpoint to trust, as the error that says so (nothing concluded). */
function nothingToTrust(answer: Withheld, log: string): AuditError {
  if (answer.code === 'LOG_NOT_FOUND') {
    return new AuditError('LOG_NOT_FOUND', `the server has no log ${log} (${answer.reason}): check --log`);
  }
  if (answer.code === 'NOT_FOUND') {
    return new AuditError(
      'NO_CHECKPOINT_YET',
      `log ${log} has no signed checkpoint yet: try again after the server signs (${answer.reason})`,
    );
  }
  return new AuditError(
    'SERVER_REFUSED',
    `the server did not answer ${answer.what} of log ${log} (${answer.reason}): is the URL a Vouch server?`,
  );
}

/**
 * Check an exported bundle (see `BUNDLE_FORMAT`) against the checkpoint the auditor trusts:
 * the bundle verifies whole (`verifyBundle`) and its tree at the trusted size has the
 * trusted root. At first use (`trusted: null`) its checkpoint is trusted once it verifies.
 */
export async function witnessBundle(
  lines: AsyncIterable<string> | Iterable<string>,
  options: WitnessBundleOptions,
): Promise<WitnessOutcome> {
  const start = checkFrom(
    options,
    options.trusted === null ? null : openTrusted(options.trusted, options.verifiers),
  );
  const trusted = start.from;
  if (start.forked) {
    return {
      report: {
        ok: false,
        status: 'FORKED',
        message: start.forked,
        log: logOfOrigin(trusted!.origin),
        trusted: view(trusted!),
        latest: null,
        checked: 0,
        failures: [],
      },
      note: null,
    };
  }
  let served: string | undefined;
  const bundle = await verifyBundle(
    (async function* () {
      for await (const line of lines) {
        // Keep the checkpoint line's note: it is the state to save when all is well.
        // Any spelling the bundle parser reads as the checkpoint line (whitespace included).
        if (line.includes('"checkpoint"')) served = checkpointOfLine(line) ?? served;
        yield line;
      }
    })(),
    { ...replayOptions(options, trusted), ...(trusted ? { origin: trusted.origin } : {}) },
  );
  const cp = bundle.checkpoint;
  const judged = judge(bundle, trusted, cp?.treeSize ?? bundle.checked, 'bundle');
  const report: WitnessReport = {
    ok: judged.status === 'CONSISTENT',
    status: judged.status,
    message: judged.message,
    log: bundle.log,
    trusted: trusted && view(trusted),
    latest: cp ? { origin: cp.origin, tree_size: cp.treeSize, root_hash: cp.rootHash } : null,
    checked: bundle.checked,
    failures: bundle.failures,
    ...omitted(bundle),
  };
  if (!report.ok || served === undefined) return { report, note: null };
  const next = nextTrustedNote({
    trusted: options.trusted,
    served,
    verifiers: options.verifiers,
    ...(options.witnesses ? { witnesses: options.witnesses.keys } : {}),
  });
  return requireWitnesses(
    {
      report: { ...report, ...(next.kept ? { kept: next.kept } : {}) },
      note: next.note,
      ...(next.ahead ? { ahead: next.ahead } : {}),
    },
    served,
    options,
  );
}

/** The log id a Vouch checkpoint origin names: its last path segment (`<prefix>/<log>`). */
export function logOfOrigin(origin: string): string {
  return origin.slice(origin.lastIndexOf('/') + 1);
}

function openTrusted(note: string, verifiers: readonly (NoteVerifier | string)[]): Required<Checkpoint> {
  const opened = openCheckpoint(note, { verifiers });
  if (!opened.ok) {
    // The auditor's own state does not verify: nothing about the log can be concluded.
    throw new AuditError(
      'TRUSTED_CHECKPOINT_INVALID',
      `the trusted checkpoint is not signed by a key you trust (${opened.code}: ${opened.message})`,
    );
  }
  return opened.checkpoint;
}

/**
 * The checkpoint to check the log from: the trusted one, or the newer one kept beside it
 * (`ahead`); and, when the two have one size and two roots, why that alone is a fork: the
 * log signed both.
 */
function checkFrom(
  options: WitnessCommonOptions,
  trusted: Required<Checkpoint> | null,
): { from: Required<Checkpoint> | null; forked?: string } {
  if (trusted === null || !options.ahead) return { from: trusted };
  const opened = openCheckpoint(options.ahead, { verifiers: options.verifiers, origin: trusted.origin });
  if (!opened.ok) {
    throw new AuditError(
      'TRUSTED_CHECKPOINT_INVALID',
      `the newer checkpoint kept beside the trusted one does not open (${opened.code}: ${opened.message})`,
    );
  }
  const ahead = opened.checkpoint;
  if (ahead.treeSize === trusted.treeSize && !bytesEqual(ahead.rootHash, trusted.rootHash)) {
    return {
      from: trusted,
      forked: `the log signed two checkpoints of ${trusted.treeSize} events with different roots: the trusted one and the newer one kept beside it`,
    };
  }
  return { from: ahead.treeSize > trusted.treeSize ? ahead : trusted };
}

function replayOptions(options: WitnessCommonOptions, trusted: Checkpoint | null) {
  return {
    verifiers: options.verifiers,
    ...(trusted ? { trusted: { treeSize: trusted.treeSize, rootHash: trusted.rootHash } } : {}),
    ...(options.onProgress ? { onProgress: options.onProgress } : {}),
    ...(options.progressEvery ? { progressEvery: options.progressEvery } : {}),
    ...(options.signal ? { signal: options.signal } : {}),
    ...(options.maxFailures ? { maxFailures: options.maxFailures } : {}),
  };
}

/** One verdict from a bundle report, for served events and bundles alike. */
function judge(
  report: Pick<BundleReport, 'ok' | 'checked' | 'failures'>,
  trusted: Checkpoint | null,
  size: number,
  source: 'server' | 'bundle',
): { status: WitnessStatus; message: string } {
  const { failures, checked } = report;
  const holds = source === 'server' ? 'the server serves' : 'the bundle holds';
  const has = (code: string, seq?: number) =>
    failures.some((f) => f.code === code && (seq === undefined || f.seq === seq));
  if (trusted !== null && trusted.treeSize > 0 && has('ROOT_MISMATCH', trusted.treeSize)) {
    return { status: 'FORKED', message: forkedMessage(trusted.treeSize) };
  }
  const truncated = (message: string) => ({ status: 'TRUNCATED' as const, message });
  if (has('TRUNCATED') && trusted !== null && checked < trusted.treeSize) {
    return truncated(
      `${holds} ${checked} events, fewer than the ${trusted.treeSize} you trusted: events were deleted`,
    );
  }
  const signature = failures.find((f) =>
    ['CHECKPOINT_INVALID', 'SIGNATURE_INVALID', 'NO_TRUSTED_SIGNATURE', 'ORIGIN_MISMATCH'].includes(f.code),
  );
  if (signature) return { status: signature.code as WitnessStatus, message: signature.message };
  // Short of its own checkpoint and nothing else wrong; a line that is no event is BROKEN.
  if (has('TRUNCATED') && failures.every((f) => f.code === 'TRUNCATED')) {
    return truncated(
      `${holds} ${checked} events, fewer than the ${size} its own checkpoint covers: events were deleted or withheld`,
    );
  }
  if (!report.ok) {
    const codes = [...new Set(failures.map((f) => f.code))].join(', ');
    return {
      status: 'BROKEN',
      message: `the events ${source === 'server' ? 'the server serves' : 'in the bundle'} do not verify (${codes})`,
    };
  }
  if (trusted === null) {
    return { status: 'CONSISTENT', message: `trusting the checkpoint at ${size} events (first use)` };
  }
  return {
    status: 'CONSISTENT',
    message:
      trusted.treeSize === size
        ? `unchanged at ${size} events`
        : `grew from ${trusted.treeSize} to ${size} events, and only grew`,
  };
}

function proofVerifies(proof: Uint8Array[], trusted: Checkpoint, latest: Checkpoint): boolean {
  try {
    return verifyConsistency(trusted.treeSize, latest.treeSize, proof, trusted.rootHash, latest.rootHash);
  } catch {
    // A malformed proof (wrong length, empty node) proves nothing.
    return false;
  }
}

function forkedMessage(size: number): string {
  return `the log's first ${size} events are no longer the ones you trusted: its history was rewritten (an event edited, deleted or reordered)`;
}

function checkpointStatus(code: CheckpointFailureCode): WitnessStatus {
  return code === 'MALFORMED_CHECKPOINT' ? 'CHECKPOINT_INVALID' : code;
}

function view(checkpoint: Checkpoint): WitnessCheckpointView {
  return {
    origin: checkpoint.origin,
    tree_size: checkpoint.treeSize,
    root_hash: bytesToHex(checkpoint.rootHash),
  };
}

function omitted(report: BundleReport): { failuresOmitted?: number } {
  return report.failuresOmitted ? { failuresOmitted: report.failuresOmitted } : {};
}

function servedLine(failure: BundleFailure, line: number): BundleFailure {
  return { ...failure, line, message: failure.message.replace(/^line \d+/, `line ${line}`) };
}

/** The note of a checkpoint line: an object whose one member is `checkpoint`, as the bundle parser reads it. */
function checkpointOfLine(line: string): string | undefined {
  try {
    const value = JSON.parse(line) as { checkpoint?: unknown };
    const only = typeof value === 'object' && value !== null && Object.keys(value).length === 1;
    return only && typeof value.checkpoint === 'string' ? value.checkpoint : undefined;
  } catch {
    // verifyBundle reports the malformed line.
    return undefined;
  }
}
