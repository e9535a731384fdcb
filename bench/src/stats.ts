import { readFileSync } from 'node:fs';

/** Linux's USER_HZ: /proc/<pid>/stat counts CPU time in these ticks. */
const TICKS_PER_SECOND = 100;

/** User + system CPU ms from a Linux `/proc/…/stat` file, or null where there is none. */
function statCpuMs(path: string): number | null {
  try {
    // Fields after the command name: state is 3rd, utime 14th and stime 15th of the whole line.
    const fields = readFileSync(path, 'utf8').split(') ')[1]!.split(' ');
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / TICKS_PER_SECOND;
  } catch {
    return null;
  }
}

/** CPU ms a process has used so far (Linux), or null. */
export function processCpuMs(pid: number | undefined): number | null {
  return pid === undefined ? null : statCpuMs(`/proc/${pid}/stat`);
}

/**
 * CPU ms this process's main thread has used so far (Linux), or null: without its worker
 * threads and the collector's helpers, so it shows the serial share of the work, which
 * holds up better than wall time on a machine others are using too.
 */
export function mainThreadCpuMs(): number | null {
  return statCpuMs(`/proc/self/task/${process.pid}/stat`);
}

/** The q-quantile (0..1) of already-sorted numbers, nearest rank. */
export function quantile(sorted: readonly number[], q: number): number {
  if (sorted.length === 0) return Number.NaN;
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1));
  return sorted[rank]!;
}

export function sortedCopy(values: readonly number[]): number[] {
  return Float64Array.from(values).sort() as unknown as number[];
}

export function now(): number {
  return performance.now();
}

/** Resolves after `ms` (benchmarks pace themselves; tests never do). */
export function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/**
 * Run `op` from `workers` concurrent loops for `warmupMs + durationMs` and count the units
 * (`op` returns how many it did) completed inside the measured window (and in all).
 */
export async function closedLoop(options: {
  workers: number;
  warmupMs: number;
  durationMs: number;
  op: (worker: number, iteration: number) => Promise<number>;
  /**
   * A CPU clock (ms) of whatever does the work, read when the measured window opens and when
   * it closes: `windowCpuMs` is then the CPU of the window alone, warm-up (JIT, caches) left out.
   */
  cpuMs?: () => number | null;
}): Promise<{
  perSecond: number;
  units: number;
  seconds: number;
  totalUnits: number;
  windowCpuMs: number | null;
}> {
  const start = now();
  const windowStart = start + options.warmupMs;
  const windowEnd = windowStart + options.durationMs;
  let units = 0;
  let totalUnits = 0;
  let firstError: unknown;
  const clock = options.cpuMs;
  let cpuAtStart: number | null = null;
  let cpuAtEnd: number | null = null;
  const opened = clock ? setTimeout(() => (cpuAtStart = clock()), options.warmupMs) : undefined;
  const closed = clock
    ? setTimeout(() => (cpuAtEnd = clock()), options.warmupMs + options.durationMs)
    : undefined;
  await Promise.all(
    Array.from({ length: options.workers }, async (_, worker) => {
      for (let i = 0; now() < windowEnd && firstError === undefined; i++) {
        try {
          const done = await options.op(worker, i);
          const t = now();
          totalUnits += done;
          if (t >= windowStart && t <= windowEnd) units += done;
        } catch (error) {
          firstError ??= error;
        }
      }
    }),
  );
  clearTimeout(opened);
  clearTimeout(closed);
  if (firstError !== undefined) throw firstError;
  if (clock && cpuAtEnd === null) cpuAtEnd = clock();
  const windowCpuMs = cpuAtStart !== null && cpuAtEnd !== null ? cpuAtEnd - cpuAtStart : null;
  const seconds = options.durationMs / 1000;
  return { perSecond: units / seconds, units, seconds, totalUnits, windowCpuMs };
}

/**
 * Open-loop load: start `op` at `rate` per second for `durationMs` whatever the completions,
 * and time each one from its scheduled start (so a stall counts against every request it
 * delays: no coordinated omission).
 */
export async function openLoop(options: {
  rate: number;
  durationMs: number;
  op: (i: number) => Promise<unknown>;
}): Promise<{ latenciesMs: number[]; offered: number; achievedPerSecond: number; errors: number }> {
  const interval = 1000 / options.rate;
  const total = Math.floor((options.durationMs / 1000) * options.rate);
  const latencies: number[] = [];
  const inflight: Promise<void>[] = [];
  let errors = 0;
  const start = now();
  for (let i = 0; i < total; i++) {
    const scheduled = start + i * interval;
    const wait = scheduled - now();
    // setTimeout has ~1 ms granularity: sleep only when ahead by more than that, and start
    // every request whose time has come in one go.
    if (wait > 1) await delay(wait);
    // From the scheduled time when running late (the delay counts against the request),
    // from the real start when the timer woke a little early.
    const origin = Math.min(scheduled, now());
    inflight.push(
      options.op(i).then(
        () => {
          latencies.push(now() - origin);
        },
        () => {
          errors++;
        },
      ),
    );
  }
  await Promise.all(inflight);
  const elapsed = (now() - start) / 1000;
  return { latenciesMs: latencies, offered: total, achievedPerSecond: latencies.length / elapsed, errors };
}
