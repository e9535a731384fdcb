// Verification in the browser, trusting nothing the server says about itself: the auditor
// pins the log's public key; every hash, link, root and signature is recomputed here with
// @vouch/audit, the same code the ledger writes with.
import {
  bytesEqual,
  createChainChecker,
  eventLeafHash,
  openCheckpoint,
  type StoredEvent,
  verifyInclusion,
} from '@vouch/audit';
import { MemoryMerkleTree } from '@vouch/audit/merkle';
import type { Api } from './api';
import type { EventPage } from './types';
import { judgeAuthorSignatures } from './verify-signatures';

export type StepState = 'pending' | 'running' | 'proved' | 'failed' | 'skipped';

export interface Step {
  id: 'signature' | 'chain' | 'root' | 'inclusion' | 'authors';
  title: string;
  state: StepState;
  detail: string;
}

export interface LogVerification {
  steps: Step[];
  /** Events read so far, and how many the signed checkpoint covers. */
  progress: { read: number; total: number | null };
  /** Every failure found, with the seq it concerns when there is one. */
  failures: Array<{ seq: number | null; code: string; rule?: string; message: string }>;
  done: boolean;
  treeSize: number | null;
  head: { seq: number; hash: string } | null;
}

const hexToBytes = (hex: string) => Uint8Array.from(hex.match(/../g) ?? [], (b) => Number.parseInt(b, 16));

/** How many inclusion proofs to fetch and check: every event of a small log, a spread sample of a large one. */
const MAX_PROOFS = 64;

function sample(size: number): number[] {
  if (size <= MAX_PROOFS) return Array.from({ length: size }, (_, i) => i + 1);
  const step = size / MAX_PROOFS;
  const picked = new Set<number>([1, size]);
  for (let i = 0; picked.size < MAX_PROOFS; i++) picked.add(Math.min(size, Math.floor(i * step) + 1));
  return [...picked].sort((a, b) => a - b);
}

/** Verify `log` against the pinned key (or keys, separated by spaces), reporting each change to `update`. */
export async function verifyLogInBrowser(
  api: Api,
  log: string,
  publicKey: string,
  update: (state: LogVerification) => void,
): Promise<LogVerification> {
  const state: LogVerification = {
    steps: [
      { id: 'signature', title: 'Checkpoint signed by the pinned key', state: 'pending', detail: '' },
      {
        id: 'chain',
        title: 'Hash chain: every payload hash, event hash and link',
        state: 'pending',
        detail: '',
      },
      { id: 'root', title: 'Merkle root of the events equals the signed root', state: 'pending', detail: '' },
      {
        id: 'inclusion',
        title: 'Inclusion proofs from the server verify against the signed root',
        state: 'pending',
        detail: '',
      },
      {
        id: 'authors',
        title: 'Every record is signed by its author, as the system log enrolled them',
        state: 'pending',
        detail: '',
      },
    ],
    progress: { read: 0, total: null },
    failures: [],
    done: false,
    treeSize: null,
    head: null,
  };
  const emit = () => update(structuredClone(state));
  const step = (id: Step['id'], s: StepState, detail: string) => {
    const found = state.steps.find((x) => x.id === id)!;
    found.state = s;
    found.detail = detail;
    emit();
  };
  const finish = () => {
    for (const s of state.steps) if (s.state === 'pending') s.state = 'skipped';
    state.done = true;
    emit();
    return state;
  };

  // 1. The checkpoint: a signed note. Only the pinned key can make it verify.
  step('signature', 'running', 'fetching the latest checkpoint');
  const note = await api.getText(`/v1/logs/${encodeURIComponent(log)}/checkpoint`, 'text/plain');
  const verifiers = publicKey.split(/\s+/).filter((key) => key !== '');
  const opened = openCheckpoint(note, { verifiers });
  if (!opened.ok) {
    state.failures.push({ seq: null, code: opened.code, message: opened.message });
    step('signature', 'failed', `${opened.code}: ${opened.message}`);
    return finish();
  }
  const { treeSize, rootHash, origin } = opened.checkpoint;
  state.treeSize = treeSize;
  state.progress.total = treeSize;
  step('signature', 'proved', `${origin}, tree size ${treeSize}`);

  // 2. The events, page by page, through the chain checker; 3. their Merkle tree.
  step('chain', 'running', 'reading events');
  const checker = createChainChecker({ log, progressEvery: 100, onProgress: () => {} });
  const tree = new MemoryMerkleTree();
  const events: StoredEvent[] = [];
  let after = 0;
  for (;;) {
    const page = await api.get<EventPage>(`/v1/logs/${encodeURIComponent(log)}/events`, {
      after,
      limit: 1000,
    });
    for (const event of page.events) {
      checker.check(event);
      if (event.seq <= treeSize) tree.append(eventLeafHash(event.hash));
      events.push(event);
    }
    state.progress.read = events.length;
    emit();
    if (page.next_after === null || page.events.length === 0) break;
    after = page.next_after;
  }
  const report = checker.finish();
  state.head = report.head;
  for (const failure of report.failures) {
    state.failures.push({ seq: failure.seq, code: failure.code, message: failure.message });
  }
  if (report.ok) step('chain', 'proved', `${report.checked} events, head seq ${report.head?.seq ?? 0}`);
  else step('chain', 'failed', `${report.failures.length} break(s); first at seq ${report.failures[0]?.seq}`);

  if (tree.size < treeSize) {
    state.failures.push({
      seq: null,
      code: 'EVENTS_WITHHELD',
      message: `the checkpoint covers ${treeSize} events; the server served ${tree.size}`,
    });
    step('root', 'failed', `only ${tree.size} of ${treeSize} signed events were served`);
    return finish();
  }
  const root = tree.root(treeSize);
  if (bytesEqual(root, rootHash))
    step('root', 'proved', `the ${treeSize} events served are exactly the signed tree`);
  else {
    state.failures.push({
      seq: null,
      code: 'ROOT_MISMATCH',
      message: 'the events served do not hash to the signed root',
    });
    step('root', 'failed', 'the events served do not hash to the signed root');
  }

  // 4. Inclusion proofs, as a client that holds one event would check it.
  const seqs = sample(treeSize);
  let checked = 0;
  step('inclusion', 'running', `0 of ${seqs.length}`);
  for (const seq of seqs) {
    const event = events[seq - 1];
    const proof = await api.get<{ proof: string[] }>(`/v1/logs/${encodeURIComponent(log)}/proofs/inclusion`, {
      seq,
      tree_size: treeSize,
    });
    const ok =
      event !== undefined &&
      verifyInclusion(eventLeafHash(event.hash), seq - 1, treeSize, proof.proof.map(hexToBytes), rootHash);
    if (!ok)
      state.failures.push({
        seq,
        code: 'INCLUSION_FAILED',
        message: `event ${seq} is not in the signed tree`,
      });
    checked++;
    if (checked % 8 === 0) step('inclusion', 'running', `${checked} of ${seqs.length}`);
  }
  const inclusionFailures = state.failures.filter((f) => f.code === 'INCLUSION_FAILED').length;
  step(
    'inclusion',
    inclusionFailures === 0 ? 'proved' : 'failed',
    `${seqs.length - inclusionFailures} of ${seqs.length} proofs verify${seqs.length < treeSize ? ` (a sample of ${treeSize} events)` : ''}`,
  );

  // 5. Author signatures, against the keys the system log (verified the same way) enrolled.
  await authorsStep(api, { log, origin, verifiers, events: events.slice(0, treeSize) }, state, step);
  return finish();
}

/** Step 5: judge the author signature of every signed event; skipped where it cannot be. */
async function authorsStep(
  api: Api,
  input: { log: string; origin: string; verifiers: string[]; events: StoredEvent[] },
  state: LogVerification,
  step: (id: Step['id'], s: StepState, detail: string) => void,
): Promise<void> {
  if (input.log === 'system') {
    step('authors', 'skipped', "the system log's own key events are judged by vouch verify");
    return;
  }
  step('authors', 'running', 'reading the system log');
  let systemBundle: string;
  try {
    systemBundle = await api.getText('/v1/logs/system/bundle', 'application/jsonl');
  } catch (error) {
    step('authors', 'skipped', `not checked: the system log could not be read (${(error as Error).message})`);
    return;
  }
  const verdict = await judgeAuthorSignatures({ ...input, systemBundle });
  state.failures.push(...verdict.failures);
  step('authors', verdict.state, verdict.detail);
}
