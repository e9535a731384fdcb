import { decodeBase64 } from './base64';
import { openCheckpoint } from './checkpoint';
import type { Cosigner } from './cosignature';
import { bytesEqual } from './merkle-hash';
import { verifyConsistency } from './merkle-verify';
import type { NoteVerifier } from './note-keys';

// The witness side of c2sp.org/tlog-witness `add-checkpoint`, as a pure function over a
// request body and a state store, so any HTTP server (or a test) can run it:
//
//   POST <prefix>/add-checkpoint
//   old <size>\n  <base64 consistency proof line>\n …  \n  <signed checkpoint note>
//
// Answers, in the order the spec checks them: 400 malformed or old size past the new one;
// 404 unknown origin; 403 no trusted log signature; 409 (text/x.tlog.size body) the old size
// is not the size last cosigned, or the same size with another root; 422 the consistency
// proof does not verify; 200 with the cosignature line(s) once the new state is persisted.

/** The most proof lines a request may carry (the spec's limit). */
const MAX_PROOF_LINES = 63;

/** What a witness remembers per log: the last checkpoint it cosigned. */
export interface WitnessedCheckpoint {
  treeSize: number;
  rootHash: Uint8Array;
  /** The note as cosigned (log signature and this witness's cosignature). */
  note: string;
}

/** Where a witness keeps its state. `replace` must be atomic: compare, then write. */
export interface WitnessStateStore {
  get(origin: string): Promise<WitnessedCheckpoint | null>;
  /**
   * Store `next` for `origin` if the stored size is still `expectedSize` (0: nothing stored);
   * false when another request changed it first (then nothing is written).
   */
  replace(origin: string, expectedSize: number, next: WitnessedCheckpoint): Promise<boolean>;
}

/** An HTTP answer: status, content type and body. */
export interface WitnessAnswer {
  status: 200 | 400 | 403 | 404 | 409 | 422;
  contentType: string;
  body: string;
}

/**
 * Handle one `add-checkpoint` request body. `logs` maps each log origin the witness follows
 * to the log verifier keys it trusts for it.
 *
 * @example
 * const answer = await addCheckpoint(await request.text(), { logs, cosigner, state, now: () => Date.now() / 1000 });
 * response.writeHead(answer.status, { 'content-type': answer.contentType }).end(answer.body);
 */
export async function addCheckpoint(
  body: string,
  options: {
    logs: ReadonlyMap<string, readonly (NoteVerifier | string)[]>;
    cosigner: Cosigner;
    state: WitnessStateStore;
    /** POSIX seconds, the cosignature's time. */
    now: () => number;
  },
): Promise<WitnessAnswer> {
  const request = parseRequest(body);
  if (typeof request === 'string') return text(400, request);
  const { oldSize, proof, note } = request;
  const origin = note.slice(0, note.indexOf('\n'));
  const verifiers = options.logs.get(origin);
  if (verifiers === undefined) return text(404, `unknown log origin ${origin}`);
  const opened = openCheckpoint(note, { verifiers, origin });
  if (!opened.ok) {
    return opened.code === 'MALFORMED_CHECKPOINT'
      ? text(400, opened.message)
      : text(403, `the checkpoint is not signed by a key trusted for ${origin}`);
  }
  const checkpoint = opened.checkpoint;
  if (oldSize > checkpoint.treeSize) return text(400, 'the old size is past the checkpoint size');
  const stored = await options.state.get(origin);
  const storedSize = stored?.treeSize ?? 0;
  if (oldSize !== storedSize) return conflict(storedSize);
  if (stored !== null && oldSize === checkpoint.treeSize) {
    if (!bytesEqual(stored.rootHash, checkpoint.rootHash)) return conflict(storedSize);
  } else if (oldSize === 0) {
    if (proof.length > 0) return text(422, 'a consistency proof from size 0 must be empty');
  } else if (!consistent(oldSize, checkpoint.treeSize, proof, stored!.rootHash, checkpoint.rootHash)) {
    return text(422, `the consistency proof from ${oldSize} to ${checkpoint.treeSize} does not verify`);
  }
  const line = options.cosigner.cosign(note, Math.floor(options.now()));
  const next = { treeSize: checkpoint.treeSize, rootHash: checkpoint.rootHash, note: note + line };
  if (!(await options.state.replace(origin, storedSize, next))) {
    // Another request moved the state between the check and the write: report where it is now.
    return conflict((await options.state.get(origin))?.treeSize ?? 0);
  }
  return { status: 200, contentType: 'text/plain; charset=utf-8', body: line };
}

function parseRequest(body: string): { oldSize: number; proof: Uint8Array[]; note: string } | string {
  const blank = body.indexOf('\n\n');
  if (blank < 0) return 'the body is an old size line, proof lines, an empty line, then the checkpoint';
  const head = body.slice(0, blank).split('\n');
  const note = body.slice(blank + 2);
  const match = /^old (0|[1-9][0-9]*)$/.exec(head[0]!);
  if (!match || !Number.isSafeInteger(Number(match[1]))) return 'the first line must be "old <size>"';
  const lines = head.slice(1);
  if (lines.length > MAX_PROOF_LINES) return `at most ${MAX_PROOF_LINES} consistency proof lines`;
  const proof: Uint8Array[] = [];
  for (const line of lines) {
    const hash = decodeBase64(line);
    if (hash === undefined || hash.length !== 32)
      return 'a consistency proof line is one base64 SHA-256 hash';
    proof.push(hash);
  }
  return { oldSize: Number(match[1]), proof, note };
}

function consistent(
  size1: number,
  size2: number,
  proof: Uint8Array[],
  root1: Uint8Array,
  root2: Uint8Array,
): boolean {
  try {
    return verifyConsistency(size1, size2, proof, root1, root2);
  } catch {
    return false;
  }
}

function conflict(size: number): WitnessAnswer {
  return { status: 409, contentType: 'text/x.tlog.size', body: `${size}\n` };
}

function text(status: WitnessAnswer['status'], message: string): WitnessAnswer {
  return { status, contentType: 'text/plain; charset=utf-8', body: `${message}\n` };
}

/** A state store in memory (tests, or a witness that starts fresh on purpose). */
export function memoryWitnessState(): WitnessStateStore {
  const states = new Map<string, WitnessedCheckpoint>();
  return {
    get: async (origin) => states.get(origin) ?? null,
    replace: async (origin, expectedSize, next) => {
      if ((states.get(origin)?.treeSize ?? 0) !== expectedSize) return false;
      states.set(origin, next);
      return true;
    },
  };
}
