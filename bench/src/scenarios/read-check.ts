import { canonicalJson, payloadHashOf, verifyEvents } from '@vouch/audit';
import { createLedger, createRecords, type Ledger, type RecordContext, type Records } from '@vouch/ledger';
import { setRecordReadChecks } from '@vouch/ledger/internal/benchmark';
import type { BenchDatabase } from '../backends';
import type { BenchOptions } from '../options';
import { type Figure, figure } from '../report';
import { closedLoop, mainThreadCpuMs, now } from '../stats';

const WORKERS = 64;
/** Calls before the measured rounds: warm code, and a log past its young phase (1,000 events). */
const WARMUP_CALLS = 640;
/** Rounds with the check and without it, alternately. */
const ROUNDS = [false, true, false, true, false, true];

/**
 * What checking every record read against its event costs (the join on `audit_events`, and
 * one canonical JSON + SHA-256 per row): whole gateway tool calls (propose, authorize,
 * observe, verify) through the records service in this process, from 64 closed-loop
 * workers, with the check and without it, alternately, three rounds each in the same run,
 * after a warm-up; the median round of each is reported. In process, so HTTP does not dilute
 * the figure. A round's rate and CPU count every call of the round: the loop lets each call
 * it started finish, so no time or CPU goes to calls it does not count.
 *
 * Beside it, the check's own CPU per call, measured alone: the six rows one call reads
 * (the tool, the proposal and the decision twice, the observation) canonicalized and hashed.
 */
export async function readCheck(
  bench: BenchDatabase,
  backend: string,
  options: BenchOptions,
): Promise<Figure[]> {
  const ledger = createLedger(bench.database);
  const records = createRecords(ledger);
  const log = 'read-check';
  const gateway: RecordContext = { log, caller: { identity: 'gateway:bench' } };
  const verifier: RecordContext = { log, caller: { identity: 'verifier:bench' } };
  await records.registerTool(
    { log, caller: { identity: 'user:bench-operator' } },
    { server_id: 'bench', tool_name: 'fetch', side_effect: 'read_only', allowed_environments: ['prod'] },
  );
  const rounds: Array<{ checked: boolean; perSecond: number; cpuMicros: number }> = [];
  // A call takes four batches; with 64 in flight a round needs seconds to count enough of them.
  const durationMs = Math.max(options.durationMs, 2_500);
  let written: unknown[] = [];
  let checkedRows: unknown[] = [];
  let verified: RecordsLogVerification | undefined;
  try {
    await Promise.all(
      Array.from({ length: WORKERS }, async (_, w) => {
        for (let i = 0; i < WARMUP_CALLS / WORKERS; i++) {
          written = await toolCall(records, gateway, verifier, `w-${w}-${i}`);
        }
      }),
    );
    for (const [round, checked] of ROUNDS.entries()) {
      setRecordReadChecks(checked);
      const cpuBefore = process.cpuUsage();
      const startedAt = now();
      const calls = await closedLoop({
        workers: WORKERS,
        warmupMs: 0,
        durationMs,
        op: async (w, i) => {
          await toolCall(records, gateway, verifier, `r${round}-${w}-${i}`);
          return 1;
        },
      });
      const seconds = (now() - startedAt) / 1000;
      const cpu = process.cpuUsage(cpuBefore);
      rounds.push({
        checked,
        perSecond: calls.totalUnits / seconds,
        cpuMicros: (cpu.user + cpu.system) / Math.max(1, calls.totalUnits),
      });
    }
    // What one call's reads check: propose the tool; authorize and observe the proposal and
    // its decision; the verification the observation.
    const [proposal, decision, observation] = written;
    checkedRows = [(await records.listTools(log))[0], proposal, decision, proposal, decision, observation];
    verified = await verifyRecordsLog(ledger, log);
  } finally {
    setRecordReadChecks(true);
    await ledger.close();
  }
  const median = (values: number[]) => values.sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
  const medianOf = (checked: boolean) => {
    const mine = rounds.filter((r) => r.checked === checked);
    return {
      perSecond: median(mine.map((r) => r.perSecond)),
      cpuMicros: median(mine.map((r) => r.cpuMicros)),
    };
  };
  const on = medianOf(true);
  const off = medianOf(false);
  const hashing = hashingMicros(checkedRows);
  const point = `${WORKERS} workers, propose + authorize + observe + verify, in process`;
  const extra = { workers: WORKERS, rounds };
  return [
    figure({
      scenario: 'read-check',
      backend,
      point,
      metric: 'gateway tool calls, record reads checked against their events',
      unit: 'calls/s',
      value: on.perSecond,
      baseline: { name: 'the same calls, reads unchecked', value: off.perSecond },
      better: 'higher',
      extra,
    }),
    figure({
      scenario: 'read-check',
      backend,
      point,
      // PGlite runs the database in this process: its CPU is in the figure too.
      metric: `bench process CPU per call, checked${backend === 'pglite' ? ' (database included)' : ''}`,
      unit: 'µs',
      value: on.cpuMicros,
      baseline: { name: 'unchecked', value: off.cpuMicros },
      better: 'lower',
      extra,
    }),
    figure({
      scenario: 'read-check',
      backend,
      point: `the ${verified!.events} events those calls wrote`,
      metric: 'verifyChain of a records log (every record rule, writer, decision and check re-judged)',
      unit: 'events/s',
      value: verified!.verifyChain,
      baseline: { name: 'verifyEvents over the same stream (the chain alone)', value: verified!.chainAlone },
      better: 'higher',
      extra: { events: verified!.events, mainThreadCpuUsPerEvent: verified!.mainUsPerEvent },
    }),
    figure({
      scenario: 'read-check',
      backend,
      point: `the ${checkedRows.length} rows one call reads`,
      metric: 'canonical JSON + SHA-256 of them, alone',
      unit: 'µs',
      value: hashing,
      baseline: { name: 'bench process CPU per unchecked call', value: off.cpuMicros },
      better: 'lower',
    }),
  ];
}

/** CPU (µs) to canonicalize and hash `rows` once, the median of 9 runs of 1,000. */
function hashingMicros(rows: readonly unknown[]): number {
  const runs: number[] = [];
  for (let run = 0; run < 9; run++) {
    const before = process.cpuUsage();
    for (let i = 0; i < 1_000; i++) for (const row of rows) payloadHashOf(canonicalJson(row));
    const cpu = process.cpuUsage(before);
    runs.push((cpu.user + cpu.system) / 1_000);
  }
  return runs.sort((a, b) => a - b)[4]!;
}

/** One tool call as a gateway makes it, through the records service; returns its records. */
async function toolCall(
  records: Records,
  gateway: RecordContext,
  verifier: RecordContext,
  key: string,
): Promise<unknown[]> {
  const { proposal, decision } = await records.propose(gateway, {
    idempotency_key: key,
    action: 'http.request',
    server_id: 'bench',
    tool_name: 'fetch',
    target: { kind: 'service', id: `svc-${key.length % 97}`, env: 'prod' },
    arguments: { method: 'GET', path: `/v1/items/${key}` },
    side_effect: 'read_only',
  });
  if (decision?.verdict !== 'allow')
    throw new Error(`the bench tool call was not allowed: ${decision?.verdict}`);
  await records.authorize(gateway, { proposal_id: proposal.id });
  const { observation } = await records.observe(gateway, {
    proposal_id: proposal.id,
    outcome: 'succeeded',
    result: { status: 200, items: 1 },
    transport_status: 200,
  });
  await records.recordVerification(verifier, {
    observation_id: observation.id,
    checks: [{ name: 'item.readable', status: 'pass', source: 'inventory-replica' }],
  });
  return [proposal, decision, observation];
}

interface RecordsLogVerification {
  events: number;
  verifyChain: number;
  chainAlone: number;
  mainUsPerEvent: number;
}

/**
 * `verifyChain` over the records log the calls wrote (each event's record rules, the writer
 * of each against the key history, built-in decisions re-derived, checks re-assessed) beside
 * `verifyEvents` over the same stream: what the record rules cost on top of the chain. Best
 * of two rounds each.
 */
async function verifyRecordsLog(ledger: Ledger, log: string): Promise<RecordsLogVerification> {
  let verifyChain = 0;
  let chainAlone = 0;
  let events = 0;
  let mainUsPerEvent = Number.POSITIVE_INFINITY;
  for (let round = 0; round < 2; round++) {
    let t = now();
    const cpu = mainThreadCpuMs();
    const report = await ledger.verifyChain({ log });
    if (!report.ok)
      throw new Error(`the records log does not verify: ${JSON.stringify(report).slice(0, 300)}`);
    events = report.checked;
    verifyChain = Math.max(verifyChain, events / ((now() - t) / 1000));
    const after = mainThreadCpuMs();
    if (cpu !== null && after !== null)
      mainUsPerEvent = Math.min(mainUsPerEvent, ((after - cpu) * 1000) / events);
    t = now();
    const chain = await verifyEvents(ledger.streamEvents(log), { log });
    chainAlone = Math.max(chainAlone, chain.checked / ((now() - t) / 1000));
  }
  return { events, verifyChain, chainAlone, mainUsPerEvent };
}
