import { notifyingHook } from '../append-hooks';
import type { Database } from '../database';
import { LedgerError } from '../errors';
import { createIntegrityAlarm, type IntegrityAlarm, type IntegrityAlarmCode } from '../integrity-alarm';
import type { AppendHook } from '../ledger';
import type { CheckpointState } from './checkpoint-state';
import { checkpointAt, logsAheadOfCheckpoint, type StoredCheckpoint } from './checkpoint-store';
import { createSavedStateGuard } from './saved-state-guard';
import { type CheckpointSigning, signLogCheckpoint, trustedKeysOf } from './sign-log-checkpoint';
import { checkTreeToSign, refusalToSign, type TreeFinding, type VerifiedTree } from './verified-tree';

export interface CheckpointerOptions extends CheckpointSigning {
  database: Database;
  /** Least time between two checkpoints of one log, in ms (default 1000). */
  intervalMs?: number;
  /** Called with every checkpoint kept (for logs and tests). */
  onCheckpoint?: (checkpoint: StoredCheckpoint) => void;
  /** Called when signing a log's head failed; the next append tries again. */
  onError?: (error: unknown, log: string) => void;
  /**
   * Raised when the tree about to be signed does not match its events; once raised (by
   * anyone), nothing more is signed. Share the server's one alarm (the ledger's). Default: a
   * fresh one.
   */
  integrityAlarm?: IntegrityAlarm;
  /**
   * Where the last checkpoint signed per log is kept outside the database
   * (`checkpointStateDir`): before signing, the database must reach it and agree with it
   * (else `ROLLBACK_DETECTED`), and each new checkpoint is kept there once its row is stored.
   * Without it a restored backup is not noticed by the server.
   */
  state?: CheckpointState;
  /** Clock, for tests. */
  now?: () => Date;
}

/** Signs checkpoints after appends, at most one per log per interval. */
export interface Checkpointer {
  /** Put this in `createLedger`'s `afterAppend`: it only takes note of the log, never blocks the batch. */
  readonly afterAppend: AppendHook;
  /** A log has new events: sign its head once the interval since its last checkpoint has passed. */
  notify(log: string): void;
  /**
   * Take note of every log whose head is past its latest checkpoint (or that has none), as
   * if it had just been appended to: call once at start-up, so a log appended while no key
   * was configured (or by a process that stopped before its timer fired) is signed without
   * waiting for its next append. Each is signed through the same check as any other
   * (`checkTreeToSign`), never on the stored tree's word. Resolves with the logs noted.
   */
  catchUp(): Promise<string[]>;
  /**
   * Compare every log of the saved state (`state`) with the database, and raise
   * `ROLLBACK_DETECTED` for each that is behind it or disagrees with it: call once at
   * start-up, before serving. Resolves with what was raised.
   */
  checkSavedState(): Promise<TreeFinding[]>;
  /** Witnesses cosigned `log`'s checkpoint at `treeSize`: keep their lines in the saved state too. */
  cosigned(log: string, treeSize: number): Promise<void>;
  /** Sign every log with pending appends now, ignoring the interval, and wait for it. */
  flush(): Promise<void>;
  /** Flush, then stop: later notifications are ignored. */
  close(): Promise<void>;
}

interface LogState {
  timer: ReturnType<typeof setTimeout> | null;
  running: Promise<void> | null;
  /** New appends arrived after the current signing started. */
  dirty: boolean;
  lastSignedAt: number;
}

/**
 * The in-process checkpoint scheduler. An append only marks its log; a timer then signs
 * the log's current head outside the append transaction (see `signLogCheckpoint`), so a
 * burst of appends costs one signature per interval, not one per batch, and signing never
 * sits on the append path. Several instances may each sign the same head: the first row
 * kept wins.
 *
 * Nothing is signed on the stored `merkle_nodes` alone: someone who can write the tables can
 * rewrite events (recomputing every hash) and leave the tree as it was, and a server that
 * signed that tree would vouch for events it no longer holds. Before each signature the new
 * part of the tree is rebuilt from the events (see `extendVerifiedTree`): from where this
 * process last verified (or, after a start, from its own latest signed checkpoint, checked
 * first), every new event is rehashed and linked, its leaf appended to a compact range, and
 * the range's root must be the stored root about to be signed. A mismatch raises the
 * integrity alarm, and from then on this checkpointer signs nothing.
 *
 * @example
 * const checkpointer = createCheckpointer({ database, origin: (log) => logOrigin(prefix, log), signers });
 * const ledger = createLedger(database, { afterAppend: [merkleAppendHook, checkpointer.afterAppend] });
 */
export function createCheckpointer(options: CheckpointerOptions): Checkpointer {
  const intervalMs = options.intervalMs ?? 1_000;
  const clock = options.now ?? (() => new Date());
  const alarm = options.integrityAlarm ?? createIntegrityAlarm();
  const logs = new Map<string, LogState>();
  /** Per log, the tree this process has rebuilt from the events up to its last signature. */
  const verified = new Map<string, VerifiedTree>();
  const saved = options.state ? createSavedStateGuard(options.database, options.state) : undefined;
  let closed = false;

  const refuse = (log: string) =>
    new LedgerError('INTEGRITY_ALARM', `not signing log ${log}: the integrity alarm is raised`, {
      details: { log },
    });

  const fail = (finding: TreeFinding): never => {
    alarm.raise(finding);
    throw refusalToSign(finding);
  };

  const guard = async (head: { log: string; treeSize: number; rootHash: Uint8Array }) => {
    if (alarm.raised) throw refuse(head.log);
    const kept = saved ? await saved.check(head.log, head.treeSize) : { ok: true as const, point: undefined };
    if (!kept.ok) return fail(kept.finding);
    const checked = await checkTreeToSign(
      options.database,
      head,
      { verifiers: trustedKeysOf(options, head.log), origin: options.origin(head.log) },
      verified.get(head.log),
      kept.point,
    );
    if (!checked.ok) return fail(checked.finding);
    const other = await checkpointAt(options.database, head.log, head.treeSize);
    if (other !== null && other.rootHash !== Buffer.from(head.rootHash).toString('hex')) {
      return fail({
        code: 'CHECKPOINT_MISMATCH',
        log: head.log,
        seq: head.treeSize,
        table: 'checkpoints',
        message: `a checkpoint of another root is stored at size ${head.treeSize}: a second root is never signed at a size already signed`,
      });
    }
    verified.set(head.log, checked.tree);
  };

  /** The row is stored: keep it outside the database too, then tell the listener. */
  const kept = async (checkpoint: StoredCheckpoint) => {
    try {
      await saved?.save(checkpoint);
    } finally {
      options.onCheckpoint?.(checkpoint);
    }
  };

  const sign = (log: string, state: LogState): Promise<void> => {
    state.dirty = false;
    state.lastSignedAt = clock().getTime();
    // Once raised, the alarm stays raised (and was logged when raised): sign nothing, quietly.
    if (alarm.raised) return Promise.resolve();
    const running = signLogCheckpoint(options.database, {
      log,
      origin: options.origin,
      signers: options.signers,
      ...(options.earlierKeys ? { earlierKeys: options.earlierKeys } : {}),
      now: clock,
      guard,
    })
      .then(kept)
      .catch((error: unknown) => {
        raiseFinding(alarm, error, log);
        options.onError?.(error, log);
      })
      .finally(() => {
        state.running = null;
        if (state.dirty && !closed) schedule(log, state);
      });
    state.running = running;
    return running;
  };

  const schedule = (log: string, state: LogState) => {
    if (state.timer !== null) return;
    if (state.running !== null) {
      // Signing reads the head when it starts; appends after that need one more round.
      state.dirty = true;
      return;
    }
    const delay = Math.max(0, state.lastSignedAt + intervalMs - clock().getTime());
    state.timer = setTimeout(() => {
      state.timer = null;
      void sign(log, state);
    }, delay);
    // A pending checkpoint must not keep a process alive; close() flushes it instead.
    state.timer.unref?.();
  };

  const notify = (log: string) => {
    if (closed) return;
    let state = logs.get(log);
    if (!state) {
      state = { timer: null, running: null, dirty: false, lastSignedAt: Number.NEGATIVE_INFINITY };
      logs.set(log, state);
    }
    schedule(log, state);
  };

  const flush = async () => {
    await Promise.all(
      [...logs].map(async ([log, state]) => {
        if (state.running) await state.running;
        if (state.timer === null && !state.dirty) return;
        if (state.timer !== null) clearTimeout(state.timer);
        state.timer = null;
        await sign(log, state);
      }),
    );
  };

  const catchUp = async () => {
    if (closed || alarm.raised) return [];
    const behind = await logsAheadOfCheckpoint(options.database);
    for (const { log } of behind) notify(log);
    return behind.map(({ log }) => log);
  };

  const checkSavedState = async () => {
    const findings = (await saved?.checkAll()) ?? [];
    for (const finding of findings) alarm.raise(finding);
    return findings;
  };

  return {
    afterAppend: notifyingHook((log) => notify(log)),
    notify,
    catchUp,
    checkSavedState,
    cosigned: async (log, treeSize) => saved?.cosigned(log, treeSize),
    flush,
    async close() {
      closed = true;
      await flush();
    },
  };
}

/**
 * A refusal that names what it found (`storeCheckpoint` meeting a stored row at the signed
 * size that is not a checkpoint of this tree) raises the alarm like the pre-signing check
 * does, so `/readyz` shows it and nothing more is signed. Raising again is a no-op.
 */
function raiseFinding(alarm: IntegrityAlarm, error: unknown, log: string): void {
  if (!(error instanceof LedgerError) || error.code !== 'INTEGRITY_ALARM') return;
  const details = error.details ?? {};
  if (!isAlarmCode(details.code)) return;
  alarm.raise({
    code: details.code,
    log: typeof details.log === 'string' ? details.log : log,
    ...(typeof details.seq === 'number' ? { seq: details.seq } : {}),
    ...(typeof details.table === 'string' ? { table: details.table } : {}),
    message: error.message,
  });
}

const ALARM_CODES = {
  TREE_MISMATCH: true,
  CHAIN_MISMATCH: true,
  CHECKPOINT_MISMATCH: true,
  CHAIN_CONFLICT: true,
  RECORD_MISMATCH: true,
  KEY_MISMATCH: true,
  RECORD_RULE_VIOLATION: true,
  COSIGNATURE_MISMATCH: true,
  WEBHOOK_MISMATCH: true,
  TIME_AHEAD: true,
  ROLLBACK_DETECTED: true,
} satisfies Record<IntegrityAlarmCode, true>;

function isAlarmCode(code: unknown): code is IntegrityAlarmCode {
  return typeof code === 'string' && Object.hasOwn(ALARM_CODES, code);
}
