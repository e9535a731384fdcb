import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { open, readFile, rename, rm } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { parseArgs } from 'node:util';
import {
  type BundleFailure,
  type Checkpoint,
  type NoteVerifier,
  openCheckpoint,
  verifyBundle,
  verifyConsistency,
} from '@vouch/audit';
import { explainFailure } from './errors';
import { CliError, type CliIo, EXIT } from './io';
import { bundleLines, bundleProgress, parseVerifierKeys } from './verify-bundle';

export const VERIFY_SINCE_USAGE = `vouch verify --since CHECKPOINT_FILE --public-key KEY (--url URL [--key APIKEY] [--log L] | --bundle FILE) [--init] [--json]

Check that a log only grew since the checkpoint you trusted last (the witness pattern).
CHECKPOINT_FILE holds that signed checkpoint. The tool gets the log's newer checkpoint,
from a running server (--url, with an auditor API key) or from an exported bundle
(--bundle), checks its signature, demands a proof that the new tree extends the old one,
and only then replaces CHECKPOINT_FILE with it (atomically: write, fsync, rename).

  --since FILE      the checkpoint you trust; kept up to date by this command
  --public-key KEY  a log verifier key you trust (repeatable; unknown keys are ignored)
  --url URL         the Vouch server, e.g. http://127.0.0.1:8787
  --key APIKEY      an API key with the auditor role (default VOUCH_API_KEY)
  --log L           the log (default: the last path segment of the checkpoint's origin)
  --bundle FILE     read the newer checkpoint and all events from a bundle instead
  --init            CHECKPOINT_FILE does not exist yet: trust the current checkpoint
                    after checking its signature (trust on first use), and save it
  --json            print the report as JSON on stdout

Verdicts: CONSISTENT (exit 0, saved); TRUNCATED (the log holds fewer events than you
trusted), FORKED (the tree you trusted is not a prefix of the log any more: history was
rewritten), or the new checkpoint or proof is not acceptable (exit 1). Exit 2: usage,
connection or file errors, nothing concluded.`;

/** What `verify --since` concluded. */
export type SinceStatus =
  | 'CONSISTENT'
  | 'TRUNCATED'
  | 'FORKED'
  /** The bundle itself is broken (chain, payload hashes, root against its own checkpoint). */
  | 'BROKEN'
  /** The newer checkpoint is not vouched for: malformed, bad or unknown signature, other log. */
  | 'CHECKPOINT_INVALID'
  | 'SIGNATURE_INVALID'
  | 'NO_TRUSTED_SIGNATURE'
  | 'ORIGIN_MISMATCH'
  /** The server answered a consistency proof that cannot be one, or none at all. */
  | 'PROOF_INVALID';

/** The report `verify --since` prints (`--json`). */
export interface SinceReport {
  ok: boolean;
  status: SinceStatus;
  message: string;
  log: string;
  trusted: CheckpointView;
  latest: CheckpointView | null;
  /** The file the new checkpoint was saved to, when it was. */
  saved: string | null;
  failures?: BundleFailure[];
}

interface CheckpointView {
  origin: string;
  tree_size: number;
  root_hash: string;
}

/** What the command may reach besides the file system: injected so tests speak to `app.request`. */
export interface SinceDeps {
  fetch: typeof fetch;
}

type Source =
  | { kind: 'url'; url: string; apiKey: string; log: string; fetch: typeof fetch }
  | { kind: 'bundle'; path: string };

const view = (checkpoint: Checkpoint): CheckpointView => ({
  origin: checkpoint.origin,
  tree_size: checkpoint.treeSize,
  root_hash: Buffer.from(checkpoint.rootHash).toString('hex'),
});

/** `vouch verify --since`: exit 0 consistent (saved), 1 not, 2 usage or connection error. */
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
    const trustedNote = await readTrusted(file, values.init === true);
    let trusted: Checkpoint | null = null;
    if (trustedNote !== null) {
      const opened = openCheckpoint(trustedNote, { verifiers });
      if (!opened.ok) {
        // The auditor's own state does not verify: nothing about the log can be concluded.
        throw new CliError(
          `${file} is not a checkpoint signed by a key you passed (${opened.code}: ${opened.message})`,
        );
      }
      trusted = opened.checkpoint;
    }
    let source: Source;
    if (values.url !== undefined) {
      const apiKey = values.key ?? io.env.VOUCH_API_KEY?.trim();
      if (!apiKey) throw new CliError('--url needs an auditor API key: --key APIKEY or VOUCH_API_KEY');
      const log =
        values.log ?? (trusted ? trusted.origin.slice(trusted.origin.lastIndexOf('/') + 1) : undefined);
      if (!log)
        throw new CliError('--log L is required with --init (there is no trusted origin to take it from)');
      source = { kind: 'url', url: values.url.replace(/\/+$/, ''), apiKey, log, fetch: deps.fetch };
    } else {
      source = { kind: 'bundle', path: values.bundle! };
    }

    const outcome =
      trusted === null
        ? await firstUse(io, source, verifiers)
        : await checkSince(io, source, verifiers, trusted);
    let saved: string | null = null;
    if (outcome.report.ok && outcome.newNote !== undefined && outcome.newNote !== trustedNote) {
      await saveAtomically(file, outcome.newNote);
      saved = file;
    }
    const report = { ...outcome.report, saved };
    if (values.json) io.out(`${JSON.stringify(report, null, 2)}\n`);
    else io.out(describe(report));
    return report.ok ? EXIT.OK : EXIT.BROKEN;
  } catch (error) {
    io.err(`vouch verify: ${explainFailure(error)}\n`);
    return EXIT.USAGE;
  }
}

type Outcome = { report: Omit<SinceReport, 'saved'>; newNote?: string };

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

/** Trust on first use: the current checkpoint, once its signature verifies. */
async function firstUse(io: CliIo, source: Source, verifiers: NoteVerifier[]): Promise<Outcome> {
  if (source.kind === 'bundle') {
    // A bundle is checked whole, so the first checkpoint comes with evidence for every event.
    const captured = captureCheckpoint(bundleLines(source.path));
    const progress = bundleProgress(io, `verifying ${source.path}`);
    const report = await verifyBundle(captured.lines, { verifiers, onProgress: progress.onProgress });
    progress.done();
    const cp = report.checkpoint;
    const latest = cp ? { origin: cp.origin, tree_size: cp.treeSize, root_hash: cp.rootHash } : null;
    const base = { log: report.log, trusted: latest ?? emptyView(), latest };
    if (!report.ok)
      return {
        report: {
          ...base,
          ok: false,
          status: 'BROKEN',
          message: 'the bundle does not verify',
          failures: report.failures,
        },
      };
    return {
      report: {
        ...base,
        ok: true,
        status: 'CONSISTENT',
        message: `trusting the checkpoint at ${cp!.treeSize} events (first use)`,
      },
      newNote: captured.note()!,
    };
  }
  const fetched = await fetchCheckpoint(source);
  const opened = openCheckpoint(fetched, { verifiers });
  if (!opened.ok) {
    return {
      report: {
        ok: false,
        status: checkpointStatus(opened.code),
        message: opened.message,
        log: source.log,
        trusted: emptyView(),
        latest: null,
      },
    };
  }
  const latest = view(opened.checkpoint);
  return {
    report: {
      ok: true,
      status: 'CONSISTENT',
      message: `trusting the checkpoint at ${latest.tree_size} events (first use)`,
      log: source.log,
      trusted: latest,
      latest,
    },
    newNote: fetched,
  };
}

/** The witness check: the newer checkpoint is genuine and its tree extends the trusted one. */
async function checkSince(
  io: CliIo,
  source: Source,
  verifiers: NoteVerifier[],
  trusted: Checkpoint,
): Promise<Outcome> {
  const trustedView = view(trusted);
  if (source.kind === 'bundle') {
    const captured = captureCheckpoint(bundleLines(source.path));
    const progress = bundleProgress(io, `verifying ${source.path}`);
    // The bundle holds every event: rebuild the tree at the trusted size and compare roots.
    const report = await verifyBundle(captured.lines, {
      verifiers,
      origin: trusted.origin,
      trusted: { treeSize: trusted.treeSize, rootHash: trusted.rootHash },
      onProgress: progress.onProgress,
    });
    progress.done();
    const cp = report.checkpoint;
    const latest = cp ? { origin: cp.origin, tree_size: cp.treeSize, root_hash: cp.rootHash } : null;
    const base = { log: report.log, trusted: trustedView, latest, failures: report.failures };
    if (report.failures.some((f) => f.code === 'TRUNCATED')) {
      return {
        report: {
          ...base,
          ok: false,
          status: 'TRUNCATED',
          message: `the bundle holds fewer than the ${trusted.treeSize} events you trusted`,
        },
      };
    }
    if (
      report.failures.some(
        (f) => f.code === 'ROOT_MISMATCH' && f.seq === trusted.treeSize && trusted.treeSize > 0,
      )
    ) {
      return { report: { ...base, ok: false, status: 'FORKED', message: forkedMessage(trusted.treeSize) } };
    }
    const signature = report.failures.find((f) =>
      ['CHECKPOINT_INVALID', 'SIGNATURE_INVALID', 'NO_TRUSTED_SIGNATURE', 'ORIGIN_MISMATCH'].includes(f.code),
    );
    if (signature) {
      return {
        report: { ...base, ok: false, status: signature.code as SinceStatus, message: signature.message },
      };
    }
    if (!report.ok)
      return { report: { ...base, ok: false, status: 'BROKEN', message: 'the bundle does not verify' } };
    return {
      report: {
        ...base,
        ok: true,
        status: 'CONSISTENT',
        message: grewMessage(trusted.treeSize, cp!.treeSize),
      },
      newNote: captured.note()!,
    };
  }

  const fetched = await fetchCheckpoint(source);
  const base = { log: source.log, trusted: trustedView };
  const opened = openCheckpoint(fetched, { verifiers, origin: trusted.origin });
  if (!opened.ok) {
    return {
      report: {
        ...base,
        latest: null,
        ok: false,
        status: checkpointStatus(opened.code),
        message: opened.message,
      },
    };
  }
  const latest = opened.checkpoint;
  const withLatest = { ...base, latest: view(latest) };
  if (latest.treeSize < trusted.treeSize) {
    return {
      report: {
        ...withLatest,
        ok: false,
        status: 'TRUNCATED',
        message: `the log's checkpoint is at ${latest.treeSize} events, before the ${trusted.treeSize} you trusted`,
      },
    };
  }
  // A checkpoint is only as good as the events behind it: a log cut back below its own
  // newest checkpoint has lost what that checkpoint (and maybe yours) covers.
  const head = await fetchHead(source);
  if (head < latest.treeSize) {
    return {
      report: {
        ...withLatest,
        ok: false,
        status: 'TRUNCATED',
        message: `the log holds ${head} events, fewer than the ${latest.treeSize} its own checkpoint covers`,
      },
    };
  }
  let consistent: boolean;
  if (latest.treeSize === trusted.treeSize || trusted.treeSize === 0) {
    consistent =
      latest.treeSize === 0 ||
      trusted.treeSize === 0 ||
      Buffer.from(latest.rootHash).equals(Buffer.from(trusted.rootHash));
  } else {
    const proof = await fetchConsistencyProof(source, trusted.treeSize, latest.treeSize);
    if (proof === null) {
      return {
        report: {
          ...withLatest,
          ok: false,
          status: 'PROOF_INVALID',
          message: `the server has no consistency proof from ${trusted.treeSize} to ${latest.treeSize} events`,
        },
      };
    }
    try {
      consistent = verifyConsistency(
        trusted.treeSize,
        latest.treeSize,
        proof,
        trusted.rootHash,
        latest.rootHash,
      );
    } catch (error) {
      return {
        report: {
          ...withLatest,
          ok: false,
          status: 'PROOF_INVALID',
          message: `the consistency proof is malformed: ${(error as Error).message}`,
        },
      };
    }
  }
  if (!consistent)
    return {
      report: { ...withLatest, ok: false, status: 'FORKED', message: forkedMessage(trusted.treeSize) },
    };
  return {
    report: {
      ...withLatest,
      ok: true,
      status: 'CONSISTENT',
      message: grewMessage(trusted.treeSize, latest.treeSize),
    },
    newNote: fetched,
  };
}

function forkedMessage(size: number): string {
  return `the log's first ${size} events are no longer the ones you trusted: its history was rewritten`;
}

function grewMessage(from: number, to: number): string {
  return from === to ? `unchanged at ${to} events` : `grew from ${from} to ${to} events, and only grew`;
}

function emptyView(): CheckpointView {
  return { origin: '', tree_size: 0, root_hash: '' };
}

function checkpointStatus(code: string): SinceStatus {
  return code === 'MALFORMED_CHECKPOINT' ? 'CHECKPOINT_INVALID' : (code as SinceStatus);
}

/** Pass a bundle's lines through, keeping the checkpoint line's note (the state to save). */
function captureCheckpoint(lines: AsyncIterable<string>): {
  lines: AsyncGenerator<string>;
  note(): string | undefined;
} {
  let note: string | undefined;
  return {
    lines: (async function* () {
      for await (const line of lines) {
        if (line.startsWith('{"checkpoint":')) {
          try {
            const value = JSON.parse(line) as { checkpoint?: unknown };
            if (typeof value.checkpoint === 'string') note = value.checkpoint;
          } catch {
            // verifyBundle reports the malformed line.
          }
        }
        yield line;
      }
    })(),
    note: () => note,
  };
}

async function request(
  source: Extract<Source, { kind: 'url' }>,
  path: string,
  accept: string,
): Promise<Response> {
  const url = `${source.url}/v1/logs/${encodeURIComponent(source.log)}${path}`;
  try {
    return await source.fetch(url, { headers: { authorization: `Bearer ${source.apiKey}`, accept } });
  } catch (error) {
    throw new CliError(`cannot reach ${source.url}: ${(error as Error).message}`);
  }
}

async function failed(response: Response, what: string): Promise<CliError> {
  const body = (await response.json().catch(() => null)) as {
    error?: { code?: string; message?: string };
  } | null;
  const reason = body?.error ? `${body.error.code}: ${body.error.message}` : `HTTP ${response.status}`;
  return new CliError(`the server did not answer ${what} (${reason})`);
}

async function fetchCheckpoint(source: Extract<Source, { kind: 'url' }>): Promise<string> {
  const response = await request(source, '/checkpoint', 'text/plain');
  if (!response.ok) throw await failed(response, `the latest checkpoint of log ${source.log}`);
  return response.text();
}

async function fetchHead(source: Extract<Source, { kind: 'url' }>): Promise<number> {
  const response = await request(source, '/head', 'application/json');
  if (!response.ok) throw await failed(response, `the head of log ${source.log}`);
  const body = (await response.json()) as { head?: { seq?: unknown } | null };
  const seq = body.head?.seq ?? 0;
  if (typeof seq !== 'number' || !Number.isSafeInteger(seq) || seq < 0) {
    throw new CliError('the server answered a head that is not a seq');
  }
  return seq;
}

/** The proof, or null when the server says it has none (404): it cannot prove its own checkpoint. */
async function fetchConsistencyProof(
  source: Extract<Source, { kind: 'url' }>,
  first: number,
  second: number,
): Promise<Uint8Array[] | null> {
  const response = await request(
    source,
    `/proofs/consistency?first=${first}&second=${second}`,
    'application/json',
  );
  if (response.status === 404) return null;
  if (!response.ok) throw await failed(response, 'a consistency proof');
  const body = (await response.json()) as { proof?: unknown };
  // Hex strings from a server we do not trust: anything else is an empty node, which
  // verifyConsistency refuses as malformed.
  const proof = Array.isArray(body.proof) ? body.proof : [];
  return proof.map((node) =>
    typeof node === 'string' && /^[0-9a-f]{64}$/.test(node)
      ? Uint8Array.from(Buffer.from(node, 'hex'))
      : new Uint8Array(0),
  );
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
  const line = `log ${report.log}: ${report.status} — ${report.message}\n`;
  const detail = [
    `  trusted: ${report.trusted.tree_size} events, root ${report.trusted.root_hash || '(none)'}\n`,
    report.latest ? `  latest:  ${report.latest.tree_size} events, root ${report.latest.root_hash}\n` : '',
    report.saved ? `  saved the new checkpoint to ${report.saved}\n` : '',
    ...(report.failures ?? []).map((f) => `  seq ${f.seq}  ${f.code}  ${f.message}\n`),
  ];
  return line + detail.join('');
}
