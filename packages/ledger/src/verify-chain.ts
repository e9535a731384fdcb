import {
  type ChainFailure,
  type ChainHead,
  type ChainReport,
  createChainChecker,
  REDACTION_KIND,
  type StoredEvent,
} from '@vouch/audit';
import { createRedactionRuleCheck } from './check-redaction-rules';
import type { Database } from './database';
import { streamEventPages } from './event-store';
import { SYSTEM_LOG } from './keys/api-key-events';
import { checkApiKeyTables } from './keys/check-api-key-tables';
import { createKeyAuthorityCheck, KEY_EVENT_KINDS } from './keys/check-key-authority';
import { requireLog } from './log-exists';
import { checkRecordRows, createRecordRowPresenceCheck } from './records/check-record-tables';
import { createRecordWriterCheck } from './records/check-record-writers';
import { RECORD_TABLES } from './records/codec';
import { createPolicyPinCheck, POLICY_PIN_KINDS } from './records/policy-pin-check';
import { createRecordRuleCheck } from './records/record-rules';
import { type VerifyInParts, verifyInParts } from './verify-chain-parts';
import { type CheckpointKeys, createCheckpointCheck } from './verify-checkpoints';
import { createMerkleNodeCheck } from './verify-merkle-nodes';

/**
 * A check of one more table against the chain, run after the chain itself: it yields every
 * row that the chain does not account for. Checks of tables that are not per log (API keys)
 * fit too: they ignore `log` or check the rows that name it.
 */
export type TableCheck = (
  database: Database,
  log: string,
  options: { signal?: AbortSignal },
) => AsyncIterable<ChainFailure>;

/** The key tables are proven by the `system` log, where every key and revocation is an event. */
const checkKeyTables: TableCheck = async function* (database, log, options) {
  if (log === SYSTEM_LOG) yield* checkApiKeyTables(database, options);
};

/**
 * The table checks every `verifyChain` runs after the events: every record row against its
 * event, and on `system` the key tables. (Record events whose row is gone, and every
 * redaction's rules, and on `system` who wrote each key event, are checked from the events
 * as they stream by: see `createRecordRowPresenceCheck`, `createRedactionRuleCheck` and
 * `createKeyAuthorityCheck`.)
 */
export const DEFAULT_TABLE_CHECKS: readonly TableCheck[] = [checkRecordRows, checkKeyTables];

export interface VerifyChainOptions {
  log: string;
  /** A head the auditor trusts from earlier (`--expect-head SEQ:HASH`). */
  expectHead?: ChainHead;
  /**
   * The log's public key(s): every stored checkpoint's signature is checked with them.
   * Without them the report says `signatures: 'not_checked'`.
   */
  checkpointKeys?: CheckpointKeys;
  /** More table checks, run after {@link DEFAULT_TABLE_CHECKS}. */
  tableChecks?: readonly TableCheck[];
  onProgress?: (checked: number) => void;
  /**
   * Called when a verification in parts (see `parts`) found the log not intact, after it
   * had reported progress: the log is verified again event by event for the exact report,
   * and `onProgress` counts again from the first event.
   */
  onRestart?: () => void;
  signal?: AbortSignal;
  pageSize?: number;
  /** Leaves per read of stored Merkle nodes (default 8,192). */
  merkleBlockLeaves?: number;
  /**
   * Pages of at least this many events have their Merkle tree hashed on a worker thread
   * while the chain is checked (default 2,048): smaller ones are not worth a thread's start.
   */
  merkleWorkerMinLeaves?: number;
  /** Cap on failures kept in memory; the count goes on past it (default 10,000). */
  maxFailures?: number;
  /**
   * Verify a large intact log in parts, in parallel, on Postgres (see {@link VerifyInParts}
   * for the defaults); `false` always verifies event by event. A log that is not intact is
   * always reported from the event-by-event run, so the report is the same either way.
   * Ignored with `expectHead`.
   */
  parts?: VerifyInParts | false;
}

/** What `verifyChain` checked besides the events, so a report never claims more than was done. */
export interface LogVerificationReport extends ChainReport {
  /** Merkle nodes recomputed from the event hashes, each compared with its stored row. */
  merkle: { nodes: number };
  /**
   * Stored checkpoints compared with the roots recomputed from the events; `signatures`
   * says whether their signatures were checked (only with the log's public key).
   */
  checkpoints: { checked: number; signatures: 'verified' | 'not_checked' };
  /**
   * Whether each record event's actor was checked against the keys it held (the writer
   * rule, `createRecordWriterCheck`): `not_checked` when the `system` log holds no
   * `api_key.created` event (a ledger used as a library, without the API).
   */
  writers: 'checked' | 'not_checked';
  /**
   * Whether every decision was judged by the policy the log pinned before it
   * (`createPolicyPinCheck`): `not_pinned` when some decision has no `policy.configured`
   * event before it (an old install, a ledger used as a library), `no_decisions` when the
   * log holds neither a decision nor a pin.
   */
  policy: 'pinned' | 'not_pinned' | 'no_decisions';
  /**
   * The records that speak for their author (approvals, verifications, external decisions, a
   * gateway's proposals, claims and observations): how many carry the author's signature and
   * how many do not (written before the author enrolled a key, or by an author who need not
   * sign). An unsigned one that had to be signed is also a failure (`SIGNATURE_MISSING`).
   */
  authors: { signed: number; unsigned: number };
}

/**
 * Verify a log straight from the database with constant memory. Nothing stored is trusted:
 * every payload hash, event hash and link is recomputed from the stored bytes; the Merkle
 * tree is recomputed from the event hashes and every stored node compared with it; every
 * stored checkpoint is compared with the root recomputed at its size, with its own note,
 * and (given the public key) with its signature; then every table check runs. Every break
 * is reported with its seq.
 *
 * Throws `LedgerError` `LOG_NOT_FOUND` for a log id nothing is stored under (see
 * `logExists`): a typo must not read as an intact empty log.
 *
 * @example
 * const report = await verifyChain(database, { log: 'default', checkpointKeys: { verifiers: [publicKey] } });
 * if (!report.ok) for (const f of report.failures) console.error(f.seq, f.code, f.message);
 */
export async function verifyChain(
  database: Database,
  options: VerifyChainOptions,
): Promise<LogVerificationReport> {
  const { log, signal } = options;
  await requireLog(database, log);
  const maxFailures = options.maxFailures ?? 10_000;
  const pageSize = options.pageSize ?? 5_000;
  if (options.parts !== false && options.expectHead === undefined) {
    const checks = createStreamChecks(database, log, maxFailures);
    let progressed = false;
    const onProgress = options.onProgress;
    const outcome = await verifyInParts(database, options.parts ?? {}, {
      log,
      pageSize,
      forwardKinds: STREAM_KINDS,
      feed: async (events) => {
        for (let i = 0; i < events.length; i++) checks.add(events[i]!);
        await checks.flush();
      },
      ...(options.checkpointKeys ? { checkpointKeys: options.checkpointKeys } : {}),
      ...(onProgress
        ? {
            onProgress: (checked: number) => {
              progressed = true;
              onProgress(checked);
            },
          }
        : {}),
      ...(signal ? { signal } : {}),
    });
    if (outcome !== null) {
      await checks.settle();
      options.onProgress?.(outcome.checked);
      const report: ChainReport = {
        ok: true,
        log,
        checked: outcome.checked,
        head: outcome.head,
        failures: [],
        ...(outcome.redactions.length > 0 ? { redactions: outcome.redactions } : {}),
      };
      return finishReport(database, options, report, checks, {
        nodes: outcome.nodes,
        checkpoints: outcome.checkpointsChecked,
      });
    }
    if (progressed) options.onRestart?.();
  }

  const checker = createChainChecker({
    log,
    maxFailures,
    ...(options.expectHead ? { expectHead: options.expectHead } : {}),
    ...(options.onProgress ? { onProgress: options.onProgress } : {}),
  });
  const checks = createStreamChecks(database, log, maxFailures);
  const merkle = createMerkleNodeCheck(database, log, {
    fail: checks.fail,
    ...(options.merkleBlockLeaves ? { blockLeaves: options.merkleBlockLeaves } : {}),
    ...(options.merkleWorkerMinLeaves ? { workerMinLeaves: options.merkleWorkerMinLeaves } : {}),
  });
  const checkpoints = await createCheckpointCheck(database, log, {
    fail: checks.fail,
    ...(options.checkpointKeys ? { keys: options.checkpointKeys } : {}),
  });
  let report: ChainReport;
  try {
    if (checkpoints.next === 0) await checkpoints.at(0, merkle.root());
    for await (const page of streamEventPages(database, log, { pageSize })) {
      signal?.throwIfAborted();
      // The page's tree is hashed on another thread while this one checks the chain; the
      // nodes are then compared here. The two reports are kept apart, so the order is free.
      merkle.prepare(page);
      // Indexed loops: a page is thousands of events, and these run before they are optimized.
      for (let i = 0; i < page.length; i++) {
        const event = page[i]!;
        checker.check(event);
        checks.add(event);
      }
      await checks.flush();
      for (let i = 0; i < page.length; i++) {
        const event = page[i]!;
        const waiting = merkle.add(event.seq, event.hash);
        if (waiting) await waiting;
        if (merkle.size === checkpoints.next && merkle.sound)
          await checkpoints.at(merkle.size, merkle.root());
      }
    }
    await checks.settle();
    report = checker.finish();
    await merkle.finish();
  } finally {
    await merkle.close();
  }
  // Past a gap the tree is undefined, so checkpoints beyond it cannot be judged; the gap is
  // already a failure of its own.
  if (merkle.sound) await checkpoints.finish();
  return finishReport(database, options, report, checks, {
    nodes: merkle.nodes,
    checkpoints: checkpoints.checked,
  });
}

/** The event kinds the stream-fed checks read (see {@link createStreamChecks}); the rest they skip. */
const STREAM_KINDS: readonly string[] = [
  ...RECORD_TABLES.map((table) => table.kind),
  REDACTION_KIND,
  ...KEY_EVENT_KINDS,
  ...POLICY_PIN_KINDS,
];

/**
 * The checks fed by the events as they stream by, beside the chain: the record rules, who
 * wrote each record event, the record rows each record event needs, the redaction rules, and
 * on `system` who wrote each key event. `fail` collects failures
 * found beside the chain, under the same cap as the chain's own.
 */
function createStreamChecks(database: Database, log: string, maxFailures: number) {
  const more: ChainFailure[] = [];
  let omitted = 0;
  const fail = (failure: ChainFailure) => {
    if (more.length < maxFailures) more.push(failure);
    else omitted++;
  };
  const rules = createRecordRuleCheck(fail);
  const recordRows = createRecordRowPresenceCheck(database, log, { fail });
  const redactions = createRedactionRuleCheck(database, log);
  const keyAuthority = createKeyAuthorityCheck(log, fail);
  const writers = createRecordWriterCheck(database, log, fail);
  const policy = createPolicyPinCheck(fail);
  // One page's row lookups run while the next page is checked; at most one is in flight.
  let rowLookups: Promise<void> = Promise.resolve();
  return {
    fail,
    more,
    get omitted() {
      return omitted;
    },
    redactions,
    writers,
    policy,
    add(event: StoredEvent) {
      rules.add(event);
      policy.add(event);
      writers.add(event);
      recordRows.add(event);
      redactions.add(event);
      keyAuthority.add(event);
    },
    /** End a page: its row lookups start once the page before's are done. */
    async flush() {
      await writers.flush();
      await rowLookups;
      rowLookups = recordRows.flush();
      // A lookup abandoned by a failure elsewhere must not surface as an unhandled rejection.
      rowLookups.catch(() => {});
    },
    /** Wait for the last page's row lookups. */
    settle: () => rowLookups,
  };
}

/** The checks after the stream (redaction rules, every table check), and the report of it all. */
async function finishReport(
  database: Database,
  options: VerifyChainOptions,
  report: ChainReport,
  checks: ReturnType<typeof createStreamChecks>,
  counts: { nodes: number; checkpoints: number },
): Promise<LogVerificationReport> {
  const { log, signal } = options;
  const { fail, more } = checks;
  for await (const failure of checks.redactions.failures()) fail(failure);
  const writers = await checks.writers.status();
  // The chain alone cannot see a row that no event accounts for, or one edited after its
  // event was written: cross-check every other table against the events.
  for (const check of [...DEFAULT_TABLE_CHECKS, ...(options.tableChecks ?? [])]) {
    for await (const failure of check(database, log, signal ? { signal } : {})) fail(failure);
  }

  const failures = [...report.failures, ...more].sort(
    (a, b) => a.seq - b.seq || tableRank(a.table) - tableRank(b.table),
  );
  const failuresOmitted = (report.failuresOmitted ?? 0) + checks.omitted;
  return {
    ...report,
    ok: report.ok && more.length === 0 && checks.omitted === 0,
    failures,
    ...(failuresOmitted > 0 ? { failuresOmitted } : {}),
    merkle: { nodes: counts.nodes },
    checkpoints: {
      checked: counts.checkpoints,
      signatures: options.checkpointKeys ? 'verified' : 'not_checked',
    },
    writers,
    policy: checks.policy.status(),
    authors: checks.writers.authors(),
  };
}

/** At one seq: the event's own failures first, then the tree built on it, then what signed that tree. */
function tableRank(table: unknown): number {
  if (table === undefined || table === 'audit_events') return 0;
  if (table === 'merkle_nodes') return 1;
  if (table === 'checkpoints') return 2;
  return 3;
}
