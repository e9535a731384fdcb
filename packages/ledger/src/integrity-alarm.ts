/** What the server found that its own database does not agree with. */
export type IntegrityAlarmCode =
  /** The Merkle root of the stored `merkle_nodes` is not the root recomputed from the events. */
  | 'TREE_MISMATCH'
  /** An event's payload hash, event hash, seq or link to the event before does not recompute. */
  | 'CHAIN_MISMATCH'
  /** The stored tree or events no longer match a checkpoint this server signed. */
  | 'CHECKPOINT_MISMATCH'
  /** An append was refused because the stored chain or tree disagrees with itself. */
  | 'CHAIN_CONFLICT'
  /** A record row read to act on or to show differs from the event it claims to be. */
  | 'RECORD_MISMATCH'
  /** An API key row (or the event it names) fails its chain proof: the key authenticates nothing. */
  | 'KEY_MISMATCH'
  /** A kept witness cosignature does not verify with the configured witness key it names: it is not served. */
  | 'COSIGNATURE_MISMATCH'
  /**
   * A record the server was about to act on breaks a rule it writes under (a proposal whose
   * payload hash names another payload, an approval answer beyond its bounds): someone else
   * appended it.
   */
  | 'RECORD_RULE_VIOLATION'
  /**
   * A webhook row the dispatcher was about to act on is not one a dispatcher writes: a
   * delivery that its source event does not derive, a cursor beyond its log's head, a claim
   * or retry that waits longer than any the dispatcher grants. It is not acted on.
   */
  | 'WEBHOOK_MISMATCH'
  /**
   * A log's head is recorded further ahead of this server's clock than clocks differ
   * (`headTimeAhead`): every later event would take its time.
   */
  | 'TIME_AHEAD'
  /**
   * The database is behind, or disagrees with, the last checkpoint this server signed as it
   * kept it outside the database (`checkpoint-state.ts`): an older backup was restored, or the
   * log was cut back and written again. Nothing is signed until an operator accepts the
   * restore (`vouch restore accept`).
   */
  | 'ROLLBACK_DETECTED';

/** One finding, as raised. Plain JSON, never secrets (it is logged and shown on `/readyz`). */
export interface IntegrityAlarmReport {
  code: IntegrityAlarmCode;
  log: string;
  /** The seq (event, or tree size) where the disagreement was found, when there is one. */
  seq?: number;
  /** The table the disagreeing row lives in, when there is one. */
  table?: string;
  message: string;
}

/** A report with the time it was raised. */
export interface RaisedIntegrityAlarm extends IntegrityAlarmReport {
  raisedAt: string;
}

/**
 * The server's integrity alarm: anything that finds the database disagreeing with the chain
 * raises it, and from then on this process signs no checkpoint and reports itself not ready.
 * It stays raised until the process restarts: damage is for an operator to look at, not for
 * the next successful request to paper over.
 */
export interface IntegrityAlarm {
  /** Raise (or raise again: the same code, log and seq is kept once). */
  raise(report: IntegrityAlarmReport): void;
  /** True once anything was raised. */
  readonly raised: boolean;
  /** What was raised, oldest first (at most `maxKept`). */
  alarms(): readonly RaisedIntegrityAlarm[];
}

export interface IntegrityAlarmOptions {
  /** Called once per new finding: log it where operators look (the server logs an error line). */
  onRaise?: (alarm: RaisedIntegrityAlarm) => void;
  /** Findings kept for `alarms()` (default 100); later ones still reach `onRaise`. */
  maxKept?: number;
  now?: () => Date;
}

/**
 * Create an integrity alarm. One per process: the server hands it to the ledger (which
 * raises `CHAIN_CONFLICT`, and whose checked record reads raise `RECORD_MISMATCH`), the
 * checkpointer (which raises what it finds before signing), the API-key lookup
 * (`KEY_MISMATCH`), the webhook dispatcher (`WEBHOOK_MISMATCH`) and the HTTP app (`/readyz`).
 *
 * @example
 * const alarm = createIntegrityAlarm({ onRaise: (a) => logger.error('integrity alarm', { ...a }) });
 * const ledger = createLedger(database, { integrityAlarm: alarm });
 * alarm.raise({ code: 'RECORD_MISMATCH', log: 'default', seq: 42, table: 'proposals', message: '…' });
 */
export function createIntegrityAlarm(options: IntegrityAlarmOptions = {}): IntegrityAlarm {
  const maxKept = options.maxKept ?? 100;
  const clock = options.now ?? (() => new Date());
  const kept: RaisedIntegrityAlarm[] = [];
  const seen = new Set<string>();
  return {
    raise(report) {
      const key = `${report.code}\u0000${report.log}\u0000${report.seq ?? ''}\u0000${report.table ?? ''}`;
      // Bounded: a flood of distinct findings stays one raised alarm, not unbounded memory.
      if (seen.has(key) || seen.size >= 10_000) return;
      seen.add(key);
      const alarm: RaisedIntegrityAlarm = { ...report, raisedAt: clock().toISOString() };
      if (kept.length < maxKept) kept.push(alarm);
      try {
        options.onRaise?.(alarm);
      } catch {
        // Whoever raised it (a refused request, the checkpointer) must still get its answer.
      }
    },
    get raised() {
      return seen.size > 0;
    },
    alarms: () => [...kept],
  };
}
