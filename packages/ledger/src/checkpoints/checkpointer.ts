import type { Database } from '../database';
import type { AppendHook } from '../ledger';
import type { StoredCheckpoint } from './checkpoint-store';
import { type CheckpointSigning, signLogCheckpoint } from './sign-log-checkpoint';

export interface CheckpointerOptions extends CheckpointSigning {
  database: Database;
  /** Least time between two checkpoints of one log, in ms (default 1000). */
  intervalMs?: number;
  /** Called with every checkpoint kept (for logs and tests). */
  onCheckpoint?: (checkpoint: StoredCheckpoint) => void;
  /** Called when signing a log's head failed; the next append tries again. */
  onError?: (error: unknown, log: string) => void;
  /** Clock, for tests. */
  now?: () => Date;
}

/** Signs checkpoints after appends, at most one per log per interval. */
export interface Checkpointer {
  /** Put this in `createLedger`'s `afterAppend`: it only takes note of the log, never blocks the batch. */
  readonly afterAppend: AppendHook;
  /** A log has new events: sign its head once the interval since its last checkpoint has passed. */
  notify(log: string): void;
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
 * @example
 * const checkpointer = createCheckpointer({ database, origin: (log) => logOrigin(prefix, log), signers });
 * const ledger = createLedger(database, { afterAppend: [merkleAppendHook, checkpointer.afterAppend] });
 */
export function createCheckpointer(options: CheckpointerOptions): Checkpointer {
  const intervalMs = options.intervalMs ?? 1_000;
  const clock = options.now ?? (() => new Date());
  const logs = new Map<string, LogState>();
  let closed = false;

  const sign = (log: string, state: LogState): Promise<void> => {
    state.dirty = false;
    state.lastSignedAt = clock().getTime();
    const running = signLogCheckpoint(options.database, {
      log,
      origin: options.origin,
      signers: options.signers,
      now: clock,
    })
      .then(
        (checkpoint) => options.onCheckpoint?.(checkpoint),
        (error: unknown) => options.onError?.(error, log),
      )
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

  return {
    afterAppend: async (_tx, log) => notify(log),
    notify,
    flush,
    async close() {
      closed = true;
      await flush();
    },
  };
}
